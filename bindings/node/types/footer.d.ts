
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
}

export declare namespace Worker {
  /** Start a worker for `agent` over `log` running `handler` once per turn. */
  function start(log: Log, agent: string, handler: Handler, options?: StartWorkerOptions): Promise<Worker>;
}

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
