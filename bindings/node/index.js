// agentlog for Node: loads the native addon and adds what N-API cannot express itself: the
// AgentlogError class every failure becomes, async iterators over streams, and the worker's
// dispatcher (the JS end of its one batched queue). Everything else is the Rust SDK.
'use strict';

const path = require('node:path');

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

// ---- exports -------------------------------------------------------------------------------

guardClass(native.Log);

module.exports = {
  AgentlogError,
  openLog: guard(native.openLog),
  Log: native.Log,
  errorKinds: native.errorKinds,
  wire: guardAll(native.wire),
};
