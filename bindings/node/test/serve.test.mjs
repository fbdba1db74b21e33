// The official @a2a-js/sdk client against a server started from Node whose handler is JS:
// card, blocking send, stream, cancel, input-required, over each binding the card lists
// (JSON-RPC, HTTP+JSON, and gRPC on the `grpcListen` port through the SDK's gRPC transport).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';

import { Role, TaskState, taskStateToJSON } from '@a2a-js/sdk';
import { AgentCardResolver, ClientFactory, ClientFactoryOptions } from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import { TaskNotCancelableError } from '@a2a-js/sdk/errors';
import * as grpc from '@grpc/grpc-js';

import { AgentlogError, Bridge, Worker, openLog, serve } from '../index.mjs';

const TIMEOUT = { timeout: 30_000 };
const stateOf = (task) => taskStateToJSON(task.status?.state);
const BINDINGS = ['JSONRPC', 'HTTP+JSON', 'GRPC'];
const TRANSPORT = { JSONRPC: /JsonRpc/, 'HTTP+JSON': /Rest/, GRPC: /Grpc/ };

/** A client of the server at `url` speaking `binding` (checked), with `clientConfig`. */
async function clientOver(url, binding, clientConfig = {}) {
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new GrpcTransportFactory({ grpcChannelCredentials: grpc.credentials.createInsecure() })],
      preferredTransports: [binding],
      clientConfig,
    }),
  );
  const client = await factory.createFromUrl(url);
  const transport = client.transport?.constructor?.name ?? '';
  assert.match(transport, TRANSPORT[binding], `${binding}: ${transport}`);
  return client;
}

const textOf = (parts) => (parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');

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

/** A SendMessageRequest with every field: the SDK's gRPC encoder writes a missing tenant as "undefined". */
const request = (message) => ({ tenant: '', message, configuration: undefined, metadata: undefined });

async function handler(task) {
  const { text } = task;
  if (text.startsWith('echo ')) {
    for (const [i, chunk] of ['echo', ': ', text.slice(5)].entries()) {
      await task.artifact({ artifactId: 'echo', name: 'echo', parts: [{ text: chunk }] }, { append: i > 0, lastChunk: i === 2 });
    }
    await task.complete();
  } else if (text === 'sleep') {
    await task.working('sleeping');
    await task.waitCancelled();
  } else if (text === 'trace') {
    await task.complete(JSON.stringify([task.traceContext, task.spanContext]));
  } else if (text === 'input') {
    await task.inputRequired('your name?');
  } else {
    await task.complete(`hello, ${text}`);
  }
}

describe('@a2a-js/sdk client against serve() with a JS handler', () => {
  let log;
  let bridge;
  let worker;
  let server;

  before(async () => {
    log = await openLog('memory://');
    bridge = await Bridge.open(log, 'node-agent', { card: { description: 'A JS agent' } });
    worker = await Worker.start(log, 'node-agent', handler, { bridge });
    server = await serve(bridge, { listen: '127.0.0.1:0', grpcListen: '127.0.0.1:0' });
  });

  after(async () => {
    await server.close();
    await server.closed;
    await worker.close();
    await log.close();
  });

  test('the card advertises the bound URL, then the gRPC address', TIMEOUT, async () => {
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    assert.match(server.grpcUrl, /^127\.0\.0\.1:\d+$/);
    const card = await AgentCardResolver.default.resolve(server.url);
    assert.equal(card.name, 'node-agent');
    assert.equal(card.description, 'A JS agent');
    assert.equal(card.capabilities?.streaming, true);
    assert.deepEqual(
      card.supportedInterfaces.map((i) => [i.protocolBinding, i.url]),
      [['JSONRPC', server.url], ['HTTP+JSON', server.url], ['GRPC', server.grpcUrl]],
    );
  });

  for (const binding of BINDINGS) {
    test(`${binding}: blocking sendMessage`, TIMEOUT, async () => {
      const client = await clientOver(server.url, binding);
      const task = await client.sendMessage(request(userMessage('echo hi')));
      assert.equal(stateOf(task), 'TASK_STATE_COMPLETED');
      assert.equal(task.artifacts.map((a) => textOf(a.parts)).join(''), 'echo: hi');
      const again = await client.getTask({ tenant: '', id: task.id });
      assert.equal(stateOf(again), 'TASK_STATE_COMPLETED');
    });

    test(`${binding}: sendMessageStream: the task, the chunks, completed`, TIMEOUT, async () => {
      const client = await clientOver(server.url, binding);
      const events = [];
      for await (const event of client.sendMessageStream(request(userMessage('echo streamed')))) events.push(event);
      const kinds = events.map((e) => e.payload?.$case);
      assert.equal(kinds[0], 'task', kinds.join());
      assert.deepEqual(kinds.filter((k) => k === 'artifactUpdate').length, 3, kinds.join());
      assert.equal(stateOf(events.at(-1).payload.value), 'TASK_STATE_COMPLETED');
    });

    test(`${binding}: cancelTask reaches the JS handler; again is TaskNotCancelable`, TIMEOUT, async () => {
      const client = await clientOver(server.url, binding, { polling: true });
      const task = await client.sendMessage(request(userMessage('sleep')));
      for (let i = 0; stateOf(await client.getTask({ tenant: '', id: task.id })) !== 'TASK_STATE_WORKING'; i += 1) {
        assert.ok(i < 200, 'the handler never reported working');
        await new Promise((r) => setTimeout(r, 25));
      }
      const canceled = await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
      assert.equal(stateOf(canceled), 'TASK_STATE_CANCELED');
      await assert.rejects(client.cancelTask({ tenant: '', id: task.id, metadata: undefined }), (e) => e instanceof TaskNotCancelableError || e?.cause instanceof TaskNotCancelableError);
    });

    test(`${binding}: input-required, then the answer completes the task`, TIMEOUT, async () => {
      const client = await clientOver(server.url, binding);
      const asked = await client.sendMessage(request(userMessage('input')));
      assert.equal(stateOf(asked), 'TASK_STATE_INPUT_REQUIRED');
      assert.equal(textOf(asked.status.message.parts), 'your name?');
      const done = await client.sendMessage(request(userMessage('Ada', { taskId: asked.id, contextId: asked.contextId })));
      assert.equal(stateOf(done), 'TASK_STATE_COMPLETED');
      assert.equal(textOf(done.status.message.parts), 'hello, Ada');
      assert.equal(done.status.state, TaskState.TASK_STATE_COMPLETED);
    });
  }

  test('the handler reads the caller\'s W3C trace context and its turn\'s span', TIMEOUT, async () => {
    const parent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const cases = [
      [{ traceparent: parent, tracestate: 'a=1' }, { traceparent: parent, tracestate: 'a=1' }],
      [{ traceparent: parent }, { traceparent: parent }],
      [{}, null],
    ];
    for (const [headers, expected] of cases) {
      const body = { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'trace' }] } } };
      const reply = await fetch(server.url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
      const { result } = await reply.json();
      const [seen, span] = JSON.parse(result.task.status.message.parts[0].text);
      assert.deepEqual(seen === null ? null : { ...seen }, expected === null ? null : expected);
      if (expected === null) {
        assert.equal(span, null);
        continue;
      }
      // The turn's own span: the same trace, a span id of its own, the caller's state.
      const [, traceId, spanId] = span.traceparent.split('-');
      assert.equal(traceId, parent.split('-')[1]);
      assert.notEqual(spanId, parent.split('-')[2]);
      assert.equal(span.tracestate, expected.tracestate);
    }
  });

  test('without grpcListen there is no gRPC interface', TIMEOUT, async () => {
    const plain = await serve(bridge, { listen: '127.0.0.1:0' });
    try {
      assert.equal(plain.grpcUrl, null);
      const card = await AgentCardResolver.default.resolve(plain.url);
      assert.deepEqual(card.supportedInterfaces.map((i) => i.protocolBinding), ['JSONRPC', 'HTTP+JSON']);
    } finally {
      await plain.close();
    }
  });

  test('serving beyond loopback without authentication is refused', TIMEOUT, async () => {
    await assert.rejects(serve(bridge, { listen: '0.0.0.0:0' }), (e) => e instanceof AgentlogError && e.kind === 'config' && /allowAnonymous/.test(e.message));
    await assert.rejects(serve(bridge, { listen: 'nonsense' }), (e) => e instanceof AgentlogError && e.kind === 'config');
    await assert.rejects(serve(bridge, { listen: '127.0.0.1:0', grpcListen: '0.0.0.0:0' }), (e) => e instanceof AgentlogError && e.kind === 'config' && /allowAnonymous/.test(e.message));
    await assert.rejects(serve(bridge, { listen: '127.0.0.1:0', grpcListen: 'nonsense' }), (e) => e instanceof AgentlogError && e.kind === 'config' && /grpcListen/.test(e.message));
  });
});
