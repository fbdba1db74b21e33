// Interop: the official A2A JS client (@a2a-js/sdk 1.3) against `agentlog serve --demo`, over
// JSON-RPC, HTTP+JSON and gRPC (the suites in `over <binding>` run once per binding; gRPC through
// the SDK's `client/grpc` transport on a plaintext channel to the card's `host:port`).
//
// Only the SDK's public client API is used: ClientFactory (createFromUrl / createFromAgentCard),
// the Client methods, the generated types, and the typed errors of `@a2a-js/sdk`. The server is
// named by AGENTLOG_URL (tests/interop/run.sh starts it); its demo worker answers
// `echo: <text>` in three artifact chunks, keeps `sleep N` working N seconds, asks for input on
// `input`, and fails on `fail`.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';

import { Role, TaskState, taskStateToJSON } from '@a2a-js/sdk';
import {
  AgentCardResolver,
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
} from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import { TaskNotCancelableError, TaskNotFoundError } from '@a2a-js/sdk/errors';
import * as grpc from '@grpc/grpc-js';

const BASE_URL = (() => {
  const url = process.env.AGENTLOG_URL;
  if (!url) {
    throw new Error(
      'AGENTLOG_URL is not set: run these tests through tests/interop/run.sh, or start ' +
        '`agentlog serve --demo --listen 127.0.0.1:0 --log memory://` and export the URL it prints',
    );
  }
  return url.endsWith('/') ? url : `${url}/`;
})();

// Every test ends within this many ms, or fails (never hangs the run).
const TIMEOUT = { timeout: 30_000 };

const TERMINAL = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
]);

const stateOf = (task) => taskStateToJSON(task.status?.state);

function userMessage(text, ids = {}) {
  return {
    messageId: randomUUID(),
    role: Role.ROLE_USER,
    // Every field of the SDK's Part: its gRPC encoder writes a missing string as "undefined".
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
    contextId: ids.contextId ?? '',
    taskId: ids.taskId ?? '',
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** A SendMessageRequest with every field (a missing tenant would go over gRPC as "undefined"). */
const request = (message) => ({ tenant: '', message, configuration: undefined, metadata: undefined });

const textOf = (parts) =>
  (parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');

function artifactText(task, name) {
  const found = task.artifacts.filter((a) => a.name === name || a.artifactId === name);
  assert.ok(found.length > 0, `no artifact ${name} in ${JSON.stringify(task.artifacts)}`);
  return found.map((a) => textOf(a.parts)).join('');
}

/** A Task (not a Message) as sendMessage answers it. */
function asTask(result) {
  assert.ok(result && 'status' in result && 'id' in result, `expected a Task, got ${JSON.stringify(result)}`);
  return result;
}

/** Does `err` (or its `cause`: typed errors in SSE frames come that way) have type `Type`? */
function isTyped(Type) {
  return (err) => {
    if (err instanceof Type || err?.cause instanceof Type) return true;
    // Let assert.rejects print the real error.
    throw err;
  };
}

function listRequest(fields = {}) {
  return {
    tenant: '',
    contextId: '',
    status: TaskState.TASK_STATE_UNSPECIFIED,
    pageToken: '',
    includeArtifacts: false,
    statusTimestampAfter: undefined,
    ...fields,
  };
}

// The card lists JSONRPC then HTTP+JSON at the same URL, then GRPC at its own `host:port`; each
// suite below runs over all three.
const BINDINGS = ['JSONRPC', 'HTTP+JSON', 'GRPC'];
const TRANSPORT = { JSONRPC: /JsonRpc/i, 'HTTP+JSON': /Rest/i, GRPC: /Grpc/i };

/** A factory whose clients prefer `binding` (the card's first otherwise), gRPC among its transports. */
const factoryFor = (binding, clientConfig = {}) =>
  new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new GrpcTransportFactory({ grpcChannelCredentials: grpc.credentials.createInsecure() })],
      preferredTransports: binding ? [binding] : undefined,
      clientConfig,
    }),
  );
const defaultFactory = () => factoryFor(undefined);
const pollingFactory = () => factoryFor(undefined, { polling: true });

async function waitForState(client, taskId, states, withinMs = 15_000) {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const task = await client.getTask({ tenant: '', id: taskId });
    if (states.has(task.status?.state)) return task;
    assert.ok(Date.now() < deadline, `task ${taskId} still ${stateOf(task)} after ${withinMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function collect(stream) {
  const events = [];
  for await (const event of stream) events.push(event);
  return events;
}

describe('@a2a-js/sdk client against agentlog', () => {
  test('card discovery', TIMEOUT, async () => {
    const card = await AgentCardResolver.default.resolve(BASE_URL);
    assert.equal(card.name, 'demo');
    assert.equal(card.capabilities?.streaming, true);
    const [first] = card.supportedInterfaces;
    assert.equal(first.protocolBinding, 'JSONRPC');
    assert.equal(first.protocolVersion, '1.0');
    assert.equal(first.url.replace(/\/$/, ''), BASE_URL.replace(/\/$/, ''));

    const client = await defaultFactory().createFromUrl(BASE_URL);
    assert.equal(client.protocolVersion, '1.0');
    const viaClient = await client.getAgentCard();
    assert.equal(viaClient.name, 'demo');
  });

  for (const binding of BINDINGS) {
    describe(`over ${binding}`, () => {
      const defaultFactory = () => factoryFor(binding);
      const pollingFactory = () => factoryFor(binding, { polling: true });

      test('the client speaks the binding', TIMEOUT, async () => {
        const client = await defaultFactory().createFromUrl(BASE_URL);
        const task = asTask(await client.sendMessage(request(userMessage('which binding'))));
        assert.equal(stateOf(task), 'TASK_STATE_COMPLETED');
        const transport = client.transport?.constructor?.name ?? '';
        assert.match(transport, TRANSPORT[binding], transport);
      });

    test('blocking sendMessage', TIMEOUT, async () => {
      const client = await defaultFactory().createFromUrl(BASE_URL);
      const task = asTask(await client.sendMessage(request(userMessage('hello'))));
      assert.ok(task.id && task.contextId);
      assert.equal(stateOf(task), 'TASK_STATE_COMPLETED');
      assert.equal(artifactText(task, 'echo'), 'echo: hello');
      assert.ok(task.history.some((m) => textOf(m.parts) === 'hello'));

      const again = await client.getTask({ tenant: '', id: task.id });
      assert.equal(again.id, task.id);
      assert.equal(stateOf(again), 'TASK_STATE_COMPLETED');
      assert.equal(artifactText(again, 'echo'), 'echo: hello');
    });

    test('non-blocking sendMessage then getTask', TIMEOUT, async () => {
      // clientConfig.polling makes the client send returnImmediately: true.
      const client = await pollingFactory().createFromUrl(BASE_URL);
      const task = asTask(await client.sendMessage(request(userMessage('sleep 1'))));
      assert.ok(!TERMINAL.has(task.status.state), `returnImmediately answered ${stateOf(task)}`);
      const done = await waitForState(client, task.id, TERMINAL);
      assert.equal(stateOf(done), 'TASK_STATE_COMPLETED');
      assert.equal(artifactText(done, 'sleep'), 'slept 1 s');

      const trimmed = await client.getTask({ tenant: '', id: task.id, historyLength: 0 });
      assert.equal(trimmed.history.length, 0);
    });

    test('cancelTask, then cancelTask again is TaskNotCancelable', TIMEOUT, async () => {
      const client = await pollingFactory().createFromUrl(BASE_URL);
      const task = asTask(await client.sendMessage(request(userMessage('sleep 30'))));
      const canceled = await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
      assert.equal(canceled.id, task.id);
      assert.equal(stateOf(canceled), 'TASK_STATE_CANCELED');
      const got = await client.getTask({ tenant: '', id: task.id });
      assert.equal(stateOf(got), 'TASK_STATE_CANCELED');
      await assert.rejects(
        client.cancelTask({ tenant: '', id: task.id, metadata: undefined }),
        isTyped(TaskNotCancelableError),
      );
    });

    test('getTask / cancelTask of an unknown id is TaskNotFound', TIMEOUT, async () => {
      const client = await defaultFactory().createFromUrl(BASE_URL);
      await assert.rejects(
        client.getTask({ tenant: '', id: `no-such-task-${randomUUID()}` }),
        isTyped(TaskNotFoundError),
      );
      await assert.rejects(
        client.cancelTask({ tenant: '', id: `no-such-task-${randomUUID()}`, metadata: undefined }),
        isTyped(TaskNotFoundError),
      );
    });

    test('listTasks', TIMEOUT, async () => {
      const client = await defaultFactory().createFromUrl(BASE_URL);
      const contextId = randomUUID();
      const first = asTask(await client.sendMessage(request(userMessage('list one', { contextId }))));
      const second = asTask(await client.sendMessage(request(userMessage('list two', { contextId }))));
      assert.equal(first.contextId, contextId);

      const listed = await client.listTasks(listRequest({ contextId }));
      assert.deepEqual(
        listed.tasks.map((t) => t.id),
        [second.id, first.id],
        'newest status first',
      );
      assert.equal(listed.nextPageToken, '');
      assert.ok(listed.tasks.every((t) => t.artifacts.length === 0), 'artifacts only on request');

      const page = await client.listTasks(listRequest({ contextId, pageSize: 1 }));
      assert.deepEqual(page.tasks.map((t) => t.id), [second.id]);
      assert.ok(page.nextPageToken);
      const page2 = await client.listTasks(
        listRequest({ contextId, pageSize: 1, pageToken: page.nextPageToken }),
      );
      assert.deepEqual(page2.tasks.map((t) => t.id), [first.id]);

      const withArtifacts = await client.listTasks(listRequest({ contextId, includeArtifacts: true }));
      assert.equal(artifactText(withArtifacts.tasks[1], 'echo'), 'echo: list one');

      const working = await client.listTasks(
        listRequest({ contextId, status: TaskState.TASK_STATE_WORKING }),
      );
      assert.equal(working.tasks.length, 0);
    });

    test('an answer that is a message: blocking and streaming, no task', TIMEOUT, async () => {
      // The demo's `reply TEXT` answers with a message instead of a task (fold rule 15).
      const client = await defaultFactory().createFromUrl(BASE_URL);
      const answer = await client.sendMessage(request(userMessage('reply hi there')));
      assert.ok(!('status' in answer), `expected a Message, got ${JSON.stringify(answer)}`);
      assert.equal(answer.role, Role.ROLE_AGENT);
      assert.equal(textOf(answer.parts), 'hi there');
      assert.ok(!answer.taskId, answer.taskId);
      const events = await collect(client.sendMessageStream(request(userMessage('reply streamed'))));
      assert.deepEqual(events.map((e) => e.payload?.$case), ['message']);
      assert.equal(textOf(events[0].payload.value.parts), 'streamed');
    });

    test('sendMessageStream: task first, then updates, ends on completed', TIMEOUT, async () => {
      const client = await defaultFactory().createFromUrl(BASE_URL);
      const events = await collect(client.sendMessageStream(request(userMessage('hello stream'))));
      const kinds = events.map((e) => e.payload?.$case);
      assert.equal(kinds[0], 'task', kinds.join());
      const taskId = events[0].payload.value.id;
      assert.ok(kinds.includes('artifactUpdate'), kinds.join());
      assert.equal(kinds.at(-1), 'statusUpdate', kinds.join());
      assert.equal(stateOf(events.at(-1).payload.value), 'TASK_STATE_COMPLETED');
      for (const e of events.slice(1)) assert.equal(e.payload.value.taskId, taskId);
      const chunks = events.filter((e) => e.payload?.$case === 'artifactUpdate').map((e) => e.payload.value);
      assert.equal(chunks[0].append, false);
      assert.ok(chunks.slice(1).every((c) => c.append));
      assert.equal(chunks.at(-1).lastChunk, true);
      assert.equal(chunks.map((c) => textOf(c.artifact.parts)).join(''), 'echo: hello stream');
    });

    test('resubscribeTask to a running task', TIMEOUT, async () => {
      const poller = await pollingFactory().createFromUrl(BASE_URL);
      const task = asTask(await poller.sendMessage(request(userMessage('sleep 1'))));
      assert.ok(!TERMINAL.has(task.status.state));

      const client = await defaultFactory().createFromUrl(BASE_URL);
      const events = await collect(client.resubscribeTask({ tenant: '', id: task.id }));
      const kinds = events.map((e) => e.payload?.$case);
      assert.equal(kinds[0], 'task', kinds.join());
      assert.equal(events[0].payload.value.id, task.id);
      assert.equal(kinds.at(-1), 'statusUpdate', kinds.join());
      assert.equal(stateOf(events.at(-1).payload.value), 'TASK_STATE_COMPLETED');
      const chunks = events.filter((e) => e.payload?.$case === 'artifactUpdate').map((e) => e.payload.value);
      assert.equal(chunks.map((c) => textOf(c.artifact.parts)).join(''), 'slept 1 s');
    });

    test('resubscribeTask to an unknown id is TaskNotFound', TIMEOUT, async () => {
      const client = await defaultFactory().createFromUrl(BASE_URL);
      await assert.rejects(
        collect(client.resubscribeTask({ tenant: '', id: `no-such-task-${randomUUID()}` })),
        isTyped(TaskNotFoundError),
      );
    });

    test('input-required, then a follow-up completes the task', TIMEOUT, async () => {
      const client = await defaultFactory().createFromUrl(BASE_URL);
      const task = asTask(await client.sendMessage(request(userMessage('input'))));
      assert.equal(stateOf(task), 'TASK_STATE_INPUT_REQUIRED');
      assert.equal(textOf(task.status.message?.parts), 'what should I echo?');
      const done = asTask(
        await client.sendMessage(request(userMessage('the follow-up', { taskId: task.id, contextId: task.contextId }))),
      );
      assert.equal(done.id, task.id);
      assert.equal(stateOf(done), 'TASK_STATE_COMPLETED');
      assert.equal(textOf(done.status.message?.parts), 'the follow-up');
    });
    });
  }

  test('0.3 compat transport (legacyCompat): blocking send and getTask', TIMEOUT, async () => {
    const card = await AgentCardResolver.default.resolve(BASE_URL);
    const v03Card = {
      ...card,
      supportedInterfaces: [
        { url: BASE_URL, protocolBinding: 'JSONRPC', protocolVersion: '0.3', tenant: '' },
      ],
    };
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ legacyCompat: { enabled: true } })],
      }),
    );
    const client = await factory.createFromAgentCard(v03Card);
    assert.equal(client.protocolVersion, '0.3');
    const task = asTask(await client.sendMessage(request(userMessage('hello js 0.3'))));
    assert.equal(stateOf(task), 'TASK_STATE_COMPLETED');
    assert.equal(artifactText(task, 'echo'), 'echo: hello js 0.3');
    const got = await client.getTask({ tenant: '', id: task.id });
    assert.equal(stateOf(got), 'TASK_STATE_COMPLETED');
    await assert.rejects(
      client.getTask({ tenant: '', id: `no-such-task-${randomUUID()}` }),
      isTyped(TaskNotFoundError),
    );
  });
});
