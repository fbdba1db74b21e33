// agentlog for Node: loads the native addon and adds what N-API cannot express itself: the
// AgentlogError class every failure becomes, async iterators over streams, and the worker's
// dispatcher (the JS end of its one batched queue; tool calls as ToolCall objects). Everything
// else is the Rust SDK.
'use strict';

const path = require('node:path');
const { AsyncLocalStorage } = require('node:async_hooks');

let native;
try {
  native = require(path.join(__dirname, 'agentlog.node'));
} catch (cause) {
  const error = new Error(
    `agentlog: the native addon ${path.join(__dirname, 'agentlog.node')} cannot be loaded ` +
      `(${cause.message}). It is built from source when the package is installed; run ` +
      '`npm rebuild agentlog` (needs a Rust toolchain, https://rustup.rs), or ' +
      '`node scripts/build.js` in bindings/node.',
  );
  error.cause = cause;
  throw error;
}

// ---- traces --------------------------------------------------------------------------------

// The SDK's spans go over OTLP when the OTEL_* variables say so (the SDK's export, as
// `agentlog serve`'s); what the batch still holds is sent at exit.
{
  const started = native._startTelemetry();
  if (started.warning) process.emitWarning(started.warning);
  if (started.exporting) process.on('exit', () => native._finishTelemetry());
}

// A handler's calls to bridges in this process carry its turn's trace context on, as a Rust
// handler's do: the turn's `spanContext` rides with the handler's async work, and each
// bridge call made meanwhile passes it to Rust as the options' internal `_trace`. It applies
// when the call has no context of its own (`handleRpc`'s `trace`, `McpBridge.handleRpc`'s
// headers): the caller's own wins, as a request's headers do in the Rust router. Only traced
// turns are run in the storage, so an untraced process never enables it.
const turnTrace = new AsyncLocalStorage();

/** `options` with the running turn's trace context, if a handler is calling. */
function carried(options) {
  const trace = turnTrace.getStore();
  if (trace === undefined) return options;
  return { ...(options ?? {}), _trace: trace };
}

/** `fn(task)`, a handler's run, with the turn's trace context carried (when it has one). */
function inTurn(task, fn) {
  const trace = task.spanContext;
  return trace ? turnTrace.run(trace, fn) : fn();
}

// ---- errors --------------------------------------------------------------------------------

const KINDS = new Map(native.errorKinds().map((info) => [info.kind, info]));
const MARK = '{"agentlog":';

/** The one error every agentlog call throws or rejects with. */
class AgentlogError extends Error {
  constructor(kind, message, details = {}) {
    super(message);
    const info = KINDS.get(kind) || KINDS.get('internal');
    this.name = 'AgentlogError';
    /** The error kind's stable snake_case name (`task_not_found`, `unavailable`, ...). */
    this.kind = info.kind;
    /** The JSON-RPC error code the kind is reported as (-32001, -32602, ...). */
    this.code = info.code;
    /** The HTTP status the kind is reported as outside a JSON-RPC body. */
    this.httpStatus = info.httpStatus;
    /** Whether the same call may succeed if retried unchanged. */
    this.retryable = info.retryable;
    /** Facts about the error (`taskId`, `field`, `wireKind`, ...). */
    this.details = details;
  }
}

/** `error` from the addon as an AgentlogError (other errors pass through). */
function convert(error) {
  if (error instanceof AgentlogError || !(error instanceof Error)) return error;
  const reason = error.message;
  if (typeof reason === 'string' && reason.startsWith(MARK)) {
    try {
      const parsed = JSON.parse(reason);
      return new AgentlogError(parsed.agentlog, parsed.message, parsed.details || {});
    } catch {
      // Not ours after all: fall through.
    }
  }
  // napi's own argument checks ("Failed to convert JavaScript value ...") are bad input.
  if (error.code === 'InvalidArg' || error.code === 'NumberExpected' || error.code === 'StringExpected' ||
      error.code === 'ObjectExpected' || error.code === 'ArrayExpected' || error.code === 'FunctionExpected') {
    const converted = new AgentlogError('invalid_params', error.message);
    converted.cause = error;
    return converted;
  }
  return error;
}

function rethrow(error) {
  throw convert(error);
}

/** `fn` with every error it throws or rejects with converted. */
function guard(fn) {
  return function guarded(...args) {
    let result;
    try {
      result = fn.apply(this, args);
    } catch (error) {
      rethrow(error);
    }
    if (result instanceof Promise) return result.catch(rethrow);
    return result;
  };
}

/** `fn`, which returns a Promise, with its sync throws turned into rejections too. */
function guardAsync(fn) {
  return async function guarded(...args) {
    try {
      return await fn.apply(this, args);
    } catch (error) {
      throw convert(error);
    }
  };
}

/** Guard every method (and getter) of a native class, in place. */
function guardClass(cls) {
  for (const target of [cls.prototype, cls]) {
    for (const name of Object.getOwnPropertyNames(target)) {
      if (name === 'constructor' || name === 'prototype' || name === 'length' || name === 'name') continue;
      const descriptor = Object.getOwnPropertyDescriptor(target, name);
      if (typeof descriptor.value === 'function') {
        descriptor.value = guard(descriptor.value);
      } else if (typeof descriptor.get === 'function') {
        descriptor.get = guard(descriptor.get);
      } else {
        continue;
      }
      Object.defineProperty(target, name, descriptor);
    }
  }
  return cls;
}

function guardAll(namespace) {
  const out = {};
  for (const [name, value] of Object.entries(namespace)) out[name] = typeof value === 'function' ? guard(value) : value;
  return out;
}

// ---- streams ---------------------------------------------------------------------------

/** `for await` over a native stream with `next()` (null at the end) and `close()`. */
function iterable(cls) {
  cls.prototype[Symbol.asyncIterator] = function iterator() {
    const stream = this;
    return {
      async next() {
        const value = await stream.next();
        return value === null ? { value: undefined, done: true } : { value, done: false };
      },
      async return() {
        await stream.close();
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]() {
        return this;
      },
    };
  };
}

// The calls that carry a handler's turn on: each takes its options last, as the second argument.
for (const [cls, methods] of [
  [native.Bridge, ['sendMessage', 'getTask', 'cancelTask', 'listTasks', 'sendStreamingMessage', 'subscribeToTask', 'handleRpc']],
  [native.McpBridge, ['handleRpc']],
]) {
  for (const name of methods) {
    const call = cls.prototype[name];
    Object.defineProperty(cls.prototype, name, {
      ...Object.getOwnPropertyDescriptor(cls.prototype, name),
      value: function carrying(first, options) {
        return call.call(this, first, carried(options));
      },
    });
  }
}
for (const cls of [native.Log, native.Bridge, native.EventStream, native.RpcFrames, native.Worker, native.TaskContext, native.Server, native.McpBridge, native.McpReply]) {
  guardClass(cls);
}
iterable(native.EventStream);
/** Open the bridge of `agent` over `log` (options: card, blockingTimeoutMs, retentionMs). */
native.Bridge.open = guardAsync(native.openBridge);
iterable(native.RpcFrames);
/** Open the MCP bridge serving `tools` over `log` (options: name, version, instructions). */
native.McpBridge.open = guardAsync(native.openMcpBridge);

// ---- the worker ------------------------------------------------------------------------
//
// One dispatcher per worker: the JS end of its queue. Rust calls it with whatever gathered:
// tasks to start, context calls that finished, and cancellations.

/** Context calls in flight, by id: the Promises handed out, settled from the queue. */
const calls = new Map();
let nextCall = 1;

/**
 * Call `method` of the native context with a fresh id; a Promise of its result. A call that
 * finished at once (an append to a local log) returns its completion, settled here without
 * a trip through the queue; one still running comes back through it.
 */
function contextCall(ctx, method, ...args) {
  const id = nextCall;
  nextCall = nextCall >= 0xffffffff ? 1 : nextCall + 1;
  let now;
  try {
    now = ctx[method](id, ...args);
  } catch (error) {
    return Promise.reject(convert(error));
  }
  if (now) return now.error != null ? Promise.reject(fromReason(now.error)) : Promise.resolve(now.value ?? undefined);
  // The queue is drained on this thread, so the completion cannot come before this is set.
  return new Promise((resolve, reject) => calls.set(id, { resolve, reject }));
}

function fromReason(reason) {
  try {
    const parsed = JSON.parse(reason);
    return new AgentlogError(parsed.agentlog, parsed.message, parsed.details || {});
  } catch {
    return new AgentlogError('internal', String(reason));
  }
}

/** The failure text of a handler that threw or rejected with `error`. */
function failureText(error) {
  if (error instanceof Error) return error.message ? `${error.name}: ${error.message}` : error.name;
  return String(error);
}

const Task = native.TaskContext;
const signals = new WeakMap();
function controllerOf(task) {
  let controller = signals.get(task);
  if (!controller) {
    controller = new AbortController();
    task._watchCancellation(); // before reading `cancelled`: then one of the two sees it
    if (task.cancelled) controller.abort();
    signals.set(task, controller);
  }
  return controller;
}
Object.defineProperty(Task.prototype, 'signal', {
  /** An AbortSignal that aborts when the task is canceled (or the turn is taken over). */
  get() {
    return controllerOf(this).signal;
  },
});
Object.assign(Task.prototype, {
  working(text) {
    return contextCall(this, '_working', text ?? null);
  },
  artifact(artifact, options = {}) {
    return contextCall(this, '_artifact', artifact, Boolean(options.append), Boolean(options.lastChunk));
  },
  inputRequired(text) {
    return contextCall(this, '_inputRequired', text);
  },
  authRequired(text) {
    return contextCall(this, '_authRequired', text);
  },
  complete(text) {
    return contextCall(this, '_complete', text ?? null);
  },
  fail(text) {
    return contextCall(this, '_fail', text);
  },
  reject(text) {
    return contextCall(this, '_reject', text);
  },
  reply(parts) {
    return contextCall(this, '_reply', parts);
  },
  replyText(text) {
    return contextCall(this, '_replyText', text);
  },
  report(progress, total, message) {
    return contextCall(this, '_report', progress, total ?? null, message ?? null);
  },
  log(level, data, logger) {
    return contextCall(this, '_log', level, data, logger ?? null);
  },
  followUp() {
    return contextCall(this, '_followUp');
  },
  waitFollowUp() {
    return contextCall(this, '_waitFollowUp');
  },
  /** Resolves when the task is canceled (see `signal`). */
  waitCancelled() {
    const { signal } = this;
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
  },
});

/** One call of an MCP tool, as a tool handler gets it. */
class ToolCall {
  constructor(task, call) {
    /** The tool's name. */
    this.name = call.name;
    /** The arguments (checked against the tool's inputSchema already). */
    this.arguments = call.arguments;
    /** The call's params as the client sent them (name, arguments, _meta). */
    this.params = call.params;
    /** The client's inputResponses when this turn resumes a call that asked (`ask`), or, on its first turn, the call's own (an MRTR retry without requestState); else null. */
    this.inputResponses = call.inputResponses;
    /** The task the call is: `report(...)` progress, `signal`, `hops`. */
    this.task = task;
  }

  /** Ask the client for input; ends this turn (the call runs again with the answers). */
  ask(text, inputRequests) {
    return contextCall(this.task, '_ask', text, inputRequests);
  }
}

/** The dispatcher of a worker running `tools[name]` per call (a tool's, or a prompt's,
 * template's or completion's by its call name: `callHandlers`), or a skill named like a
 * tool, `skills[task.skill]` per turn of a skill's task (Rust routed it there: the SDK's
 * `Skills`), else `handler`. */
function dispatcher(handler, tools, skills) {
  const running = new Map();
  async function run(task) {
    running.set(task._handle, task);
    let failure = null;
    let result = null;
    try {
      const call = tools ? task._tool : null;
      const skill = skills && !call ? task.skill : null;
      if (call) {
        result = await inTurn(task, () => tools[call.name](new ToolCall(task, call)));
      } else if (skill !== null && Object.hasOwn(skills, skill)) {
        await inTurn(task, () => skills[skill](task));
      } else {
        await inTurn(task, () => handler(task));
      }
    } catch (error) {
      failure = failureText(error);
    } finally {
      running.delete(task._handle);
    }
    task._settle(failure, result ?? null);
  }
  return function dispatch(tasks, done, cancelled) {
    for (const completion of done) {
      const call = calls.get(completion.id);
      if (!call) continue;
      calls.delete(completion.id);
      if (completion.error != null) call.reject(fromReason(completion.error));
      else call.resolve(completion.value ?? undefined);
    }
    // Rust sends only the cancellations of turns whose signal was made (`_watchCancellation`);
    // one asked for later is made aborted (`task.cancelled`).
    for (const handle of cancelled) {
      const task = running.get(handle);
      if (task) signals.get(task)?.abort();
    }
    for (const task of tasks) void run(task);
  };
}

const Worker = native.Worker;
const startWorker = guardAsync(native.startWorker);
/** The call names under which a worker answers prompts, template reads and completions
 * (agentlog_wire::mcp::call's `*_call_name`), each with its handler: `[names, handlers]`. */
const SERVED_CALLS = {
  prompts: (name) => `prompts/get:${name}`,
  resources: (template) => `resources/read:${template}`,
  promptCompletions: (name) => `completion/complete:ref/prompt:${name}`,
  resourceCompletions: (template) => `completion/complete:ref/resource:${template}`,
};
function servedCalls(options) {
  const names = {};
  const handlers = {};
  for (const [kind, callName] of Object.entries(SERVED_CALLS)) {
    const given = options[kind];
    if (given === undefined) continue;
    if (given === null || typeof given !== 'object') {
      throw new AgentlogError('invalid_params', `${kind} must be an object of name -> function taking a ToolCall, got ${given === null ? 'null' : typeof given}`);
    }
    names[kind] = Object.keys(given);
    for (const name of names[kind]) {
      if (typeof given[name] !== 'function') {
        throw new AgentlogError('invalid_params', `${kind}[${JSON.stringify(name)}] must be a function taking a ToolCall, got ${typeof given[name]}`);
      }
      handlers[callName(name)] = given[name];
    }
  }
  return [Object.keys(handlers).length > 0 ? names : null, handlers];
}

/**
 * Start a worker for `agent` over `log`: `handler(task)` runs once per turn (an async
 * function; a throw or a rejection fails the task with its message). Or, instead of a
 * handler, `{ tools: { name: async (call) => CallToolResult } }` (as the third argument or in
 * `options`): the worker answers MCP calls of those tools on tool agent `agent`; a throw is a
 * JSON-RPC error; `options.inputTimeoutMs`: how long a tool's ask waits for the client's
 * retry before its task is cancelled (a number for every tool, or by tool name; default 15
 * minutes; 0: no deadline). `options.bridge`: a Bridge of `agent`, or an McpBridge serving
 * tools on it, whose view of the log the worker shares. `options.skills`: `{ id: async (task)
 * => ... }`, the handler of each skill: a task runs the one its first message names (metadata
 * `agentlog.skill`, or `skillId`), else `handler`; with tools too, a skill named like a tool
 * is answered by it. A handler and tools together work so as well. `options.prompts` (prompt
 * name ->), `options.resources` (URI template ->), `options.promptCompletions` (prompt name
 * ->) and `options.resourceCompletions` (URI template ->), each a function taking a ToolCall,
 * answer the prompts, template reads and completions configured with `agent`, as tools.
 */
Worker.start = function start(log, agent, handler, options) {
  if (handler !== null && typeof handler === 'object' && options === undefined) {
    options = handler;
    handler = null;
  }
  const { bridge, tools, inputTimeoutMs, skills, prompts, resources, promptCompletions, resourceCompletions, ...rest } = options || {};
  let served;
  let servedHandlers;
  try {
    [served, servedHandlers] = servedCalls({ prompts, resources, promptCompletions, resourceCompletions });
  } catch (error) {
    return Promise.reject(error);
  }
  const hasHandler = handler !== null && handler !== undefined;
  if (!hasHandler && tools === undefined && skills === undefined && served === null) {
    return Promise.reject(new AgentlogError('invalid_params', 'a worker needs a handler (a function taking a TaskContext), { tools } (tool name -> function taking a ToolCall) or { skills } (skill id -> function taking a TaskContext)'));
  }
  let skillIds = null;
  if (skills !== undefined) {
    if (skills === null || typeof skills !== 'object') {
      return Promise.reject(new AgentlogError('invalid_params', `skills must be an object of skill id -> function taking a TaskContext, got ${skills === null ? 'null' : typeof skills}`));
    }
    skillIds = Object.keys(skills);
    const bad = skillIds.find((id) => typeof skills[id] !== 'function');
    if (bad !== undefined) {
      return Promise.reject(new AgentlogError('invalid_params', `the handler of skill ${JSON.stringify(bad)} must be a function taking a TaskContext, got ${typeof skills[bad]}`));
    }
  }
  if (tools === undefined && inputTimeoutMs !== undefined) {
    return Promise.reject(new AgentlogError('invalid_params', "inputTimeoutMs is how long a tool's ask waits: it needs { tools }"));
  }
  if (hasHandler && typeof handler !== 'function') {
    return Promise.reject(new AgentlogError('invalid_params', `the handler must be a function taking a TaskContext, got ${typeof handler}`));
  }
  let names = null;
  if (tools !== undefined) {
    names = tools !== null && typeof tools === 'object' ? Object.keys(tools) : [];
    if (names.length === 0) {
      return Promise.reject(new AgentlogError('invalid_params', 'tools must be an object naming at least one tool: { name: (call) => result }'));
    }
    const bad = names.find((name) => typeof tools[name] !== 'function');
    if (bad !== undefined) {
      return Promise.reject(new AgentlogError('invalid_params', `the handler of tool ${JSON.stringify(bad)} must be a function taking a ToolCall, got ${typeof tools[bad]}`));
    }
  }
  const isMcp = bridge instanceof native.McpBridge;
  const callHandlers = tools !== undefined || served !== null ? { ...servedHandlers, ...(tools ?? {}) } : undefined;
  return startWorker(log, agent, dispatcher(handler, callHandlers, skills), rest, isMcp ? null : bridge ?? null, isMcp ? bridge : null, names, inputTimeoutMs ?? null, skillIds, hasHandler, served);
};
const closedPromises = new WeakMap();
/** `cls.prototype.closed`: one Promise per object, made on first use (a pending Promise keeps
 * the process alive, so it must not exist unless asked for). */
function closedOnDemand(cls) {
  Object.defineProperty(cls.prototype, 'closed', {
    get() {
      let closed = closedPromises.get(this);
      if (!closed) {
        closed = this._waitClosed();
        closedPromises.set(this, closed);
      }
      return closed;
    },
  });
}
closedOnDemand(Worker);
closedOnDemand(native.Server);

// ---- exports -------------------------------------------------------------------------------

module.exports = {
  AgentlogError,
  openLog: guardAsync(native.openLog),
  Log: native.Log,
  Bridge: native.Bridge,
  Worker,
  TaskContext: native.TaskContext,
  serve: guardAsync(function serve(bridge, options) {
    const { mcp, ...rest } = options || {};
    return native._serve(bridge, rest, mcp ?? null);
  }),
  Server: native.Server,
  EventStream: native.EventStream,
  RpcFrames: native.RpcFrames,
  McpBridge: native.McpBridge,
  McpReply: native.McpReply,
  ToolCall,
  errorKinds: native.errorKinds,
  verifyNotification: guard(native.verifyNotification),
  wire: guardAll(native.wire),
};
