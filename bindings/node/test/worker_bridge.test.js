// A JS worker and the bridge over memory://, file:// (and iggy:// when a server is found):
// the typed verbs, streams with positions, handleRpc, and handlers that throw, reject, never
// settle, ask for input, reply with a message.
'use strict';

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { openLog, Bridge, Worker, AgentlogError } = require('..');
const { send, tempDir, startIggy, until } = require('./helpers');

const TIMEOUT = { timeout: 60000 };

/** The handler under test: what it does depends on the message's text. */
function makeHandler(seen) {
  return function handler(task) {
    const text = task.text;
    if (text === 'throw') throw new Error('boom');
    if (text === 'reject') return Promise.reject(new TypeError('nope'));
    if (text === 'plain') return 42; // not a Promise: the turn completes as left
    return (async () => {
      if (text.startsWith('echo ')) {
        await task.working('echoing');
        await task.artifact({ artifactId: 'echo', parts: [{ text: text.slice(5) }] }, { lastChunk: true });
        await task.complete(`echo: ${text.slice(5)}`);
      } else if (text === 'hang') {
        // As AbortSignals go, it may already be aborted (a cancel that came first): check.
        const { signal } = task;
        if (signal.aborted) seen.aborted.push(task.taskId);
        else signal.addEventListener('abort', () => seen.aborted.push(task.taskId));
        await task.working('hanging');
        await new Promise(() => {}); // never settles
      } else if (text === 'hang late') {
        // Looks at its signal only after the cancellation: it must come aborted.
        await task.working('hanging');
        while (!task.cancelled) await new Promise((resolve) => setTimeout(resolve, 5));
        seen.lateSignal.push({ id: task.taskId, aborted: task.signal.aborted });
        await new Promise(() => {});
      } else if (text === 'input') {
        await task.inputRequired('more?');
      } else if (text === 'bad report') {
        // A report refused at once (it settles inline, without the queue) rejects all the same.
        const refused = await task.report(Number.NaN).then(() => 'resolved', (e) => `${e instanceof AgentlogError} ${e.kind}`);
        await task.complete(refused);
      } else if (text === 'wait') {
        // A report that waits (it settles through the queue, later).
        await task.working('waiting');
        const next = await task.waitFollowUp();
        await task.complete(`took: ${next.parts.map((p) => p.text).join('')}`);
      } else if (text === 'reply') {
        await task.replyText('a message, not a task');
      } else if (text === 'about') {
        await task.complete(JSON.stringify({
          attempt: task.attempt, isRetry: task.isRetry, key: task.idempotencyKey, history: task.history.length,
          caller: task.caller, contextId: task.contextId, hops: task.hops, cancelled: task.cancelled,
        }));
      } else {
        // A follow-up to `input`.
        await task.complete(`then: ${text} after ${task.history.length} messages`);
      }
    })();
  };
}

const statusText = (task) => (task.status.message ? task.status.message.parts.map((p) => p.text).join('') : '');

function suite(name, open) {
  describe(name, TIMEOUT, () => {
    let log;
    let bridge;
    let worker;
    let cleanup;
    const seen = { aborted: [], lateSignal: [] };

    before(async () => {
      const opened = await open();
      if (!opened) return;
      ({ log, cleanup } = opened);
      bridge = await Bridge.open(log, 'node-test', { card: { description: 'tests', skills: [] } });
      worker = await Worker.start(log, 'node-test', makeHandler(seen), { bridge, concurrency: 8 });
    });

    after(async () => {
      if (worker) await worker.close();
      if (log) await log.close();
      if (cleanup) await cleanup();
    });

    const it = (title, fn) => test(title, TIMEOUT, async (t) => {
      if (!bridge) return t.skip('no server');
      await fn();
    });

    it('a blocking send answers with the completed task', async () => {
      const { task } = await bridge.sendMessage(send('echo hello'));
      assert.equal(task.status.state, 'TASK_STATE_COMPLETED');
      assert.equal(statusText(task), 'echo: hello');
      assert.deepEqual(task.artifacts.map((a) => a.parts[0].text), ['hello']);
      const got = await bridge.getTask({ id: task.id });
      assert.equal(got.status.state, 'TASK_STATE_COMPLETED');
      const page = await bridge.listTasks({ pageSize: 100 });
      assert.ok(page.tasks.some((t) => t.id === task.id));
      assert.equal(bridge.agentCard.name, 'node-test');
      assert.equal(bridge.agentCard.description, 'tests');
    });

    it('what the context knows', async () => {
      const { task } = await bridge.sendMessage(send('about'), { caller: { principal: 'alice', tenant: 'acme' } });
      const about = JSON.parse(statusText(task));
      assert.deepEqual(about.caller, { principal: 'alice', tenant: 'acme' });
      assert.equal(about.attempt, 1);
      assert.equal(about.isRetry, false);
      assert.equal(about.key, `${task.id}/${task.history[0].messageId}`);
      assert.equal(about.history, 1);
      assert.equal(about.contextId, task.contextId);
      assert.equal(about.cancelled, false);
      // Another caller does not see alice's task.
      await assert.rejects(bridge.getTask({ id: task.id }), (e) => e.kind === 'task_not_found');
    });

    it('a handler that throws synchronously fails the task, and the worker goes on', async () => {
      const { task } = await bridge.sendMessage(send('throw'));
      assert.equal(task.status.state, 'TASK_STATE_FAILED');
      assert.equal(statusText(task), 'Error: boom');
      const again = await bridge.sendMessage(send('echo still here'));
      assert.equal(again.task.status.state, 'TASK_STATE_COMPLETED');
    });

    it('a handler that rejects fails the task with the reason', async () => {
      const { task } = await bridge.sendMessage(send('reject'));
      assert.equal(task.status.state, 'TASK_STATE_FAILED');
      assert.equal(statusText(task), 'TypeError: nope');
    });

    it('a context call refused at once rejects with an AgentlogError', async () => {
      const { task } = await bridge.sendMessage(send('bad report'));
      assert.equal(task.status.state, 'TASK_STATE_COMPLETED');
      assert.equal(statusText(task), 'true invalid_params');
    });

    it('a context call that waits (waitFollowUp) resolves when the follow-up comes', async () => {
      const request = send('wait');
      request.configuration = { returnImmediately: true };
      const { task } = await bridge.sendMessage(request);
      await until(async () => (await bridge.getTask({ id: task.id })).status.state === 'TASK_STATE_WORKING', 10000, 'working');
      const { task: done } = await bridge.sendMessage(send('more', { taskId: task.id, contextId: task.contextId }));
      assert.equal(done.status.state, 'TASK_STATE_COMPLETED');
      assert.equal(statusText(done), 'took: more');
    });

    it('a handler returning a plain value completes the task', async () => {
      const { task } = await bridge.sendMessage(send('plain'));
      assert.equal(task.status.state, 'TASK_STATE_COMPLETED');
    });

    it('input-required, then the follow-up completes it', async () => {
      const first = await bridge.sendMessage(send('input'));
      assert.equal(first.task.status.state, 'TASK_STATE_INPUT_REQUIRED');
      assert.equal(statusText(first.task), 'more?');
      const next = send('yes', { taskId: first.task.id, contextId: first.task.contextId });
      const { task } = await bridge.sendMessage(next);
      assert.equal(task.status.state, 'TASK_STATE_COMPLETED');
      assert.equal(statusText(task), 'then: yes after 3 messages');
    });

    it('a reply answers with a message', async () => {
      const answer = await bridge.sendMessage(send('reply'));
      assert.equal(answer.task, undefined);
      assert.equal(answer.message.role, 'ROLE_AGENT');
      assert.equal(answer.message.parts[0].text, 'a message, not a task');
    });

    it('a stream: the task, then its events with rising positions, the last one last', async () => {
      const events = [];
      for await (const event of bridge.sendStreamingMessage(send('echo streamed'))) events.push(event);
      assert.ok(events.length >= 3, JSON.stringify(events));
      assert.ok(events[0].event.task);
      for (let i = 1; i < events.length; i += 1) assert.ok(events[i].position > events[i - 1].position);
      assert.deepEqual(events.map((e) => e.last), [...events.slice(1).map(() => false), true]);
      assert.equal(events.at(-1).event.statusUpdate.status.state, 'TASK_STATE_COMPLETED');
      // Resuming after a position gives what came after it, no snapshot.
      const request = send('echo streamed');
      const all = [];
      for await (const event of bridge.sendStreamingMessage(request)) all.push(event);
      const rest = [];
      for await (const event of bridge.sendStreamingMessage(request, { resumeAfter: all[1].position })) rest.push(event);
      assert.deepEqual(rest.map((e) => e.position), all.slice(2).map((e) => e.position));
    });

    it('subscribe and cancel a handler that never settles: cancel reaches it', async () => {
      const request = send('hang');
      request.configuration = { returnImmediately: true };
      const { task } = await bridge.sendMessage(request);
      await until(async () => (await bridge.getTask({ id: task.id })).status.state === 'TASK_STATE_WORKING', 10000, 'working');
      const stream = bridge.subscribeToTask({ id: task.id });
      const first = await stream.next();
      assert.equal(first.event.task.status.state, 'TASK_STATE_WORKING');
      const canceled = await bridge.cancelTask({ id: task.id });
      assert.equal(canceled.status.state, 'TASK_STATE_CANCELED');
      let last = first;
      for await (const event of stream) last = event;
      assert.equal(last.last, true);
      assert.equal(last.event.statusUpdate.status.state, 'TASK_STATE_CANCELED');
      await until(() => seen.aborted.includes(task.id), 10000, 'the handler to see the cancellation');
      await assert.rejects(bridge.cancelTask({ id: task.id }), (e) => e.kind === 'task_not_cancelable' && e.code === -32002);
    });

    it('a signal first asked for after the cancellation comes aborted', async () => {
      const request = send('hang late');
      request.configuration = { returnImmediately: true };
      const { task } = await bridge.sendMessage(request);
      await until(async () => (await bridge.getTask({ id: task.id })).status.state === 'TASK_STATE_WORKING', 10000, 'working');
      await bridge.cancelTask({ id: task.id });
      await until(() => seen.lateSignal.some((s) => s.id === task.id), 10000, 'the handler to see the cancellation');
      assert.deepEqual(seen.lateSignal.find((s) => s.id === task.id), { id: task.id, aborted: true });
    });

    it('handleRpc: a JSON body, and SSE frames for a stream', async () => {
      const body = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'SendMessage', params: send('echo rpc') });
      const reply = await bridge.handleRpc(body, { version: '1.0' });
      assert.ok(Buffer.isBuffer(reply));
      const parsed = JSON.parse(reply.toString());
      assert.equal(parsed.id, 7);
      assert.equal(parsed.result.task.status.state, 'TASK_STATE_COMPLETED');
      const streaming = JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'SendStreamingMessage', params: send('echo sse') });
      const frames = [];
      for await (const frame of await bridge.handleRpc(Buffer.from(streaming))) frames.push(frame.toString());
      assert.ok(frames.length >= 3);
      for (const frame of frames) assert.match(frame, /^id: \d+\ndata: \{"jsonrpc":"2.0","id":8,"result":/);
      const bad = JSON.parse((await bridge.handleRpc('{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{}}')).toString());
      assert.equal(bad.error.code, -32602);
      const unknown = JSON.parse((await bridge.handleRpc('not json')).toString());
      assert.equal(unknown.error.code, -32700);
    });

    it('errors carry kind, code and retryable', async () => {
      await assert.rejects(bridge.getTask({ id: 'no-such-task' }), (e) => {
        assert.ok(e instanceof AgentlogError);
        assert.equal(e.kind, 'task_not_found');
        assert.equal(e.code, -32001);
        assert.equal(e.retryable, false);
        assert.equal(e.details.taskId, 'no-such-task');
        return true;
      });
      await assert.rejects(bridge.sendMessage({ message: { role: 'ROLE_USER' } }), (e) => e.kind === 'invalid_params' && e.code === -32602);
      await assert.rejects(bridge.listTasks({ pageSize: 1000 }), (e) => e.kind === 'invalid_params' && e.details.field === 'pageSize');
      const stream = bridge.subscribeToTask({ id: 'no-such-task' });
      await assert.rejects(stream.next(), (e) => e.kind === 'task_not_found');
    });
  });
}

suite('memory://', async () => ({ log: await openLog('memory://') }));

suite('file://', async () => {
  const dir = tempDir();
  return { log: await openLog(`file://${dir}`), cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
});

suite('iggy://', async () => {
  const server = await startIggy();
  if (!server) return null;
  return { log: await openLog(server.url), cleanup: () => server.stop() };
});

test('file://: tasks survive a restart of the log', TIMEOUT, async () => {
  const dir = tempDir();
  try {
    let log = await openLog(`file://${dir}`);
    let bridge = await Bridge.open(log, 'durable');
    const worker = await Worker.start(log, 'durable', async (task) => task.complete(`kept: ${task.text}`), { bridge });
    const { task } = await bridge.sendMessage(send('me'));
    assert.equal(task.status.state, 'TASK_STATE_COMPLETED');
    await worker.close();
    assert.equal(worker.running, false);
    await worker.close(); // twice: a no-op
    await log.close();
    log = await openLog(`file://${path.join(dir)}`);
    bridge = await Bridge.open(log, 'durable');
    const again = await bridge.getTask({ id: task.id });
    assert.equal(statusText(again), 'kept: me');
    await log.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a handler that is not a function is refused', async () => {
  const log = await openLog('memory://');
  await assert.rejects(Worker.start(log, 'x', 'nope'), (e) => e instanceof AgentlogError && e.kind === 'invalid_params');
  await log.close();
});

test('queueLag counts the copies a busy worker has not read', TIMEOUT, async () => {
  // One partition: the queue is read in the order the sends were made.
  const log = await openLog('memory://?partitions=1');
  const bridge = await Bridge.open(log, 'busy');
  let release;
  const go = new Promise((resolve) => { release = resolve; });
  const worker = await Worker.start(log, 'busy', async (task) => {
    await go;
    await task.complete('done');
  }, { concurrency: 1 });
  try {
    // One handler slot: four turns supervised at most, so the loop stops at the fifth copy
    // and those sent after it stay unread.
    for (let i = 0; i < 10; i += 1) {
      await bridge.sendMessage({ ...send(`held ${i}`), configuration: { returnImmediately: true } });
      await new Promise((r) => setTimeout(r, 20));
    }
    await until(async () => (await worker.queueLag()) > 0, 20000, 'a lag');
    release();
    await until(async () => (await worker.queueLag()) === 0, 20000, 'the lag worked off');
  } finally {
    release();
    await worker.close();
    assert.equal(await worker.queueLag(), 0);
    await log.close();
  }
});
