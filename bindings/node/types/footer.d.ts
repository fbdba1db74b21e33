
// ---- what index.js adds to the native classes -------------------------------------------

export interface EventStream extends AsyncIterable<StreamEvent> {}
export interface RpcFrames extends AsyncIterable<Buffer> {}

export declare namespace Bridge {
  /** Open the bridge of `agent` over `log`: create its topics if needed and replay them. */
  function open(log: Log, agent: string, options?: BridgeOptions): Promise<Bridge>;
}

/** A worker's handler: one call per turn; a throw or a rejection fails the task. */
export type Handler = (task: TaskContext) => Promise<void> | void;

export interface StartWorkerOptions extends WorkerOptions {
  /** Share this bridge's view of the log (no second replay). */
  bridge?: Bridge;
  /**
   * The handler of each skill, by skill id: a task runs the one its first message names
   * (metadata `agentlog.skill`, or `skillId`); the handler runs the rest.
   */
  skills?: { [id: string]: Handler };
}

export interface SkillWorkerOptions extends WorkerOptions {
  /**
   * The handler of each skill, by skill id: a task runs the one its first message names
   * (metadata `agentlog.skill`, or `skillId`); a task of no skill here fails, naming them.
   */
  skills: { [id: string]: Handler };
  /** Tool handlers too: the MCP calls on the agent, and the skills named like a tool. */
  tools?: { [name: string]: ToolHandler };
  /** Share this bridge's view of the log (no second replay). */
  bridge?: Bridge;
}

/** One call of an MCP tool, as a tool handler gets it. */
export declare class ToolCall {
  private constructor();
  /** The tool's name. */
  readonly name: string;
  /** The arguments (checked against the tool's `inputSchema` already). */
  readonly arguments: { [key: string]: unknown };
  /** The call's params as the client sent them (`name`, `arguments`, `_meta`). */
  readonly params: { [key: string]: unknown };
  /** The client's `inputResponses` when this turn resumes a call that asked (`ask`), or, on its first turn, the call's own (an MRTR retry without `requestState`); else null. */
  readonly inputResponses: { [key: string]: unknown } | null;
  /** The task the call is: `report(...)` progress, `signal`, `hops`. */
  readonly task: TaskContext;
  /**
   * Ask the client for input (`inputRequests`: keyed MCP requests); ends this turn: what the
   * handler returns after is dropped, and the call runs again with the answers.
   */
  ask(text: string, inputRequests: { [key: string]: unknown }): Promise<void>;
}

/** A tool's handler: returns the call's result; a throw or a rejection is a JSON-RPC error. */
export type ToolHandler = (call: ToolCall) => Promise<CallToolResult> | CallToolResult;

/** A prompt's handler (`arguments`: the prompt's): returns `{description?, messages}`. */
export type PromptHandler = (call: ToolCall) => Promise<{ [key: string]: unknown }> | { [key: string]: unknown };
/** A resource template's handler (`arguments`: `uri` and each variable's value): returns the contents. */
export type ResourceHandler = (call: ToolCall) => Promise<ResourceContents[]> | ResourceContents[];
/** A completer (`arguments`: `argument`, `value` typed so far, `context`): the values, or `{values, total?, hasMore?}` (100 kept). */
export type CompletionHandler = (
  call: ToolCall,
) => Promise<string[] | { values: string[]; total?: number; hasMore?: boolean }> | string[] | { values: string[]; total?: number; hasMore?: boolean };

/**
 * Handlers of the prompts, resource templates and completions configured with the worker's
 * agent (`agent`, `completionAgent`), answered through the log as tool calls are; a throw is
 * a JSON-RPC error.
 */
export interface McpServedOptions {
  /** By prompt name. */
  prompts?: { [name: string]: PromptHandler };
  /** By URI template. */
  resources?: { [uriTemplate: string]: ResourceHandler };
  /** By prompt name: its arguments without configured values. */
  promptCompletions?: { [name: string]: CompletionHandler };
  /** By URI template: its variables without configured values. */
  resourceCompletions?: { [uriTemplate: string]: CompletionHandler };
}

/** A worker of prompt, resource or completion handlers (tools optional). */
export interface ServedWorkerOptions extends WorkerOptions, McpServedOptions {
  tools?: { [name: string]: ToolHandler };
  inputTimeoutMs?: number | { [tool: string]: number };
  bridge?: Bridge | McpBridge;
  skills?: { [id: string]: Handler };
}

export interface ToolWorkerOptions extends WorkerOptions, McpServedOptions {
  /** The tool handlers, by tool name. */
  tools: { [name: string]: ToolHandler };
  /**
   * How long a call answered on its request whose tool asks (`ToolCall.ask`) waits for the
   * client's retry before its task is cancelled, for every tool or by tool name. Default 15
   * minutes; 0: no deadline.
   */
  inputTimeoutMs?: number | { [tool: string]: number };
  /** Share this bridge's view of the log (an McpBridge serving tools on the agent, or a Bridge). */
  bridge?: Bridge | McpBridge;
  /** Skill handlers beside the tools (see `SkillWorkerOptions`). */
  skills?: { [id: string]: Handler };
}

export declare namespace Worker {
  /** Start a worker for `agent` over `log` running `handler` once per turn. */
  function start(log: Log, agent: string, handler: Handler, options?: StartWorkerOptions): Promise<Worker>;
  /** Start a worker of tool agent `agent` answering MCP calls with `options.tools`. */
  function start(log: Log, agent: string, options: ToolWorkerOptions): Promise<Worker>;
  function start(log: Log, agent: string, handler: null, options: ToolWorkerOptions): Promise<Worker>;
  /** Start a worker of prompt, resource or completion handlers (`ServedWorkerOptions`). */
  function start(log: Log, agent: string, options: ServedWorkerOptions): Promise<Worker>;
  /** Start a worker of an agent's skills: each task to its skill's handler. */
  function start(log: Log, agent: string, options: SkillWorkerOptions): Promise<Worker>;
  /** A handler for the rest beside tool handlers: one agent's tools and default handler. */
  function start(log: Log, agent: string, handler: Handler, options: ToolWorkerOptions): Promise<Worker>;
}

export declare namespace McpBridge {
  /**
   * Open the MCP bridge serving `tools` (definitions as `agentlog serve --tools FILE` reads
   * them: tools, resources, templates, prompts) over `log`, creating each tool agent's topics;
   * a bad definition rejects with `config`.
   */
  function open(log: Log, tools: Tool[] | McpDefinitions, options?: McpBridgeOptions): Promise<McpBridge>;
}

export interface ServeMcpOptions extends ServeOptions {
  /** Serve this MCP bridge on `/mcp` beside the A2A router (`server.mcpUrl`). */
  mcp?: McpBridge | null;
}

/**
 * Serve `bridge` over HTTP: A2A JSON-RPC and HTTP+JSON, the agent card, /healthz, /readyz,
 * /metrics, and with `mcp` the MCP route `/mcp` beside them; with `grpcListen`, A2A's gRPC
 * binding on that address too (`server.grpcUrl`, listed last in the card). Every caller is
 * anonymous, so only loopback addresses are served unless `allowAnonymous`. Resolves once the
 * server answers; await `server.closed` to keep the process alive.
 */
export declare function serve(bridge: Bridge, options?: ServeMcpOptions | null): Promise<Server>;

export interface Worker {
  /** Resolves once `close()` has finished; awaiting it keeps the process alive. */
  readonly closed: Promise<void>;
}

export interface Server {
  /** Resolves once the server has stopped; awaiting it keeps the process alive. */
  readonly closed: Promise<void>;
}

export interface TaskContext {
  /** Aborts when the task is canceled (or the turn is taken over, or shutdown gives up). */
  readonly signal: AbortSignal;
  /** Report progress: status working, with an optional message. */
  working(text?: string): Promise<void>;
  /** Report progress as numbers (an MCP call's `notifications/progress`); `progress` should grow. */
  report(progress: number, total?: number | null, message?: string | null): Promise<void>;
  /**
   * Log a message (an MCP call's `notifications/message`; `data` any JSON value, `logger`
   * the logger's name): sent in order with progress, before the result, to a client that
   * asked for `level`. Another level rejects with `invalid_params`.
   */
  log(level: LoggingLevel, data: unknown, logger?: string | null): Promise<void>;
  /** Add an artifact, or with `append` a chunk to the one with the same id. */
  artifact(artifact: Artifact, options?: { append?: boolean; lastChunk?: boolean }): Promise<void>;
  /** Ask the client for input: ends this turn; the next message starts the next one. */
  inputRequired(text: string): Promise<void>;
  /** Ask the client to authenticate: ends this turn. */
  authRequired(text: string): Promise<void>;
  /** Complete the task, with an optional final message. */
  complete(text?: string): Promise<void>;
  /** Fail the task with `text` as the agent's final message. */
  fail(text: string): Promise<void>;
  /** Reject the task with `text` as the agent's final message. */
  reject(text: string): Promise<void>;
  /** Answer with a message instead of a task (before the client has seen the task). */
  reply(parts: Part[]): Promise<void>;
  /** `reply` with one text part. */
  replyText(text: string): Promise<void>;
  /** Take the oldest follow-up message the client sent while this turn runs, if one waits. */
  followUp(): Promise<Message | null>;
  /** Wait for a follow-up message and take it; `null` once the turn is over. */
  waitFollowUp(): Promise<Message | null>;
  /** Resolves when the task is canceled (see `signal`). */
  waitCancelled(): Promise<void>;
}
