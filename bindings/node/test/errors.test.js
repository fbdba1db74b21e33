// One AgentlogError with kind, code and retryable on every failure, sync and async.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { AgentlogError, errorKinds, openLog, wire } = require('..');

test('the error table is the SDK one', () => {
  const kinds = new Map(errorKinds().map((k) => [k.kind, k]));
  assert.equal(kinds.get('task_not_found').code, -32001);
  assert.equal(kinds.get('task_not_cancelable').code, -32002);
  assert.equal(kinds.get('invalid_params').code, -32602);
  assert.equal(kinds.get('unavailable').retryable, true);
  assert.equal(kinds.get('corrupt').retryable, false);
  assert.equal(kinds.get('unauthenticated').httpStatus, 401);
});

test('a bad log URL rejects with config, listing what is accepted', async () => {
  await assert.rejects(openLog('nope://x'), (error) => {
    assert.ok(error instanceof AgentlogError);
    assert.ok(error instanceof Error);
    assert.equal(error.kind, 'config');
    assert.equal(error.code, -32603);
    assert.equal(error.retryable, false);
    assert.match(error.message, /file:\/\/.*memory:\/\/.*iggy:\/\//s);
    return true;
  });
});

test('a sync failure throws the same class', () => {
  assert.throws(() => wire.stateFromCode(250), (error) => {
    assert.ok(error instanceof AgentlogError);
    assert.equal(error.kind, 'invalid_params');
    assert.equal(error.code, -32602);
    assert.equal(error.details.wireKind, 'unknown_state_code');
    return true;
  });
});

test('a wrong argument type is invalid_params too', () => {
  assert.throws(() => wire.taskId(1, 2, 3), (error) => error instanceof AgentlogError && error.kind === 'invalid_params');
});

test('memory:// opens and closes', async () => {
  const log = await openLog('memory://?retention=30s');
  assert.equal(log.retentionMs, 30000);
  assert.equal(log.url, 'memory://?retention=30s');
  await log.close();
});
