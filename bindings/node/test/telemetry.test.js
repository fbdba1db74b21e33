// A Node program exports its spans over OTLP when the standard variables say so, through the
// SDK's own export (started when the addon loads, flushed on exit); the receiver here decodes
// each request with the OpenTelemetry protobuf definitions (@opentelemetry/otlp-transformer's,
// compiled by protobufjs) and checks the spans' parents. A handler's calls to bridges in its
// process carry its turn on (AsyncLocalStorage in index.js); a request's own context
// (handleRpc's `trace`, McpBridge.handleRpc's headers) wins over it.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const crypto = require('node:crypto');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { opentelemetry: otlp } = require('@opentelemetry/otlp-transformer/build/src/generated/root');
const { openLog, Bridge, McpBridge, Worker, serve } = require('..');
const { send } = require('./helpers');

const { ExportTraceServiceRequest } = otlp.proto.collector.trace.v1;
const { SpanKind } = otlp.proto.trace.v1.Span;

/** An attribute list as an object of plain values. */
function values(attributes) {
  const out = {};
  for (const { key, value } of attributes) {
    const which = ['stringValue', 'boolValue', 'intValue', 'doubleValue'].find((k) => value[k] != null);
    out[key] = which === 'intValue' ? Number(value.intValue) : which ? value[which] : null;
  }
  return out;
}

/** Every span of an OTLP/HTTP protobuf request body, decoded, with its resource's attributes. */
function decode(body) {
  const spans = [];
  for (const resourceSpans of ExportTraceServiceRequest.decode(body).resourceSpans) {
    const resource = values(resourceSpans.resource.attributes);
    for (const scopeSpans of resourceSpans.scopeSpans) {
      for (const span of scopeSpans.spans) {
        spans.push({
          resource,
          name: span.name,
          kind: span.kind,
          traceId: Buffer.from(span.traceId).toString('hex'),
          spanId: Buffer.from(span.spanId).toString('hex'),
          parentId: Buffer.from(span.parentSpanId).toString('hex'),
          attributes: values(span.attributes),
        });
      }
    }
  }
  return spans;
}

function receiver() {
  const bodies = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const ok = req.url === '/v1/traces' && req.headers['content-type'] === 'application/x-protobuf';
      if (ok) bodies.push(Buffer.concat(chunks));
      res.writeHead(ok ? 200 : 415, { 'Content-Type': 'application/x-protobuf' }).end();
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, bodies })));
}

function run(env, traceparent) {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OTEL_')));
  const child = spawn(process.execPath, [path.join(__dirname, 'scripts', 'traced.js'), traceparent],
    { env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => { stdout += d; });
  child.stderr.on('data', (d) => { stderr += d; });
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

test('the request and turn spans are exported, the rest at exit', { timeout: 60000 }, async () => {
  const { server, bodies } = await receiver();
  try {
    const traceId = crypto.randomBytes(16).toString('hex');
    const parentId = crypto.randomBytes(8).toString('hex');
    // A batch delay longer than the program runs: what arrives was sent by the exit hook.
    const done = await run({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${server.address().port}`,
      OTEL_SERVICE_NAME: 'node-worker', OTEL_BSP_SCHEDULE_DELAY: '600000' },
    `00-${traceId}-${parentId}-01`);
    assert.equal(done.code, 0, done.stderr);
    assert.equal(done.stdout.trim(), 'TASK_STATE_COMPLETED');
    const spans = bodies.flatMap(decode).filter((s) => s.traceId === traceId);
    assert.ok(spans.length > 0, 'the trace is exported');
    for (const { resource } of spans) {
      assert.equal(resource['service.name'], 'node-worker');
      assert.equal(resource['agentlog.command'], 'node');
    }
    // The bridge's request span is the caller's child; the worker's turn is the request's.
    const [request, ...moreRequests] = spans.filter((s) => s.name === 'SendMessage');
    assert.equal(moreRequests.length, 0, JSON.stringify(spans));
    assert.equal(request.parentId, parentId);
    assert.equal(request.kind, SpanKind.SPAN_KIND_SERVER);
    assert.equal(request.attributes['agentlog.outcome'], 'ok');
    const [turn, ...moreTurns] = spans.filter((s) => s.name === 'turn');
    assert.equal(moreTurns.length, 0, JSON.stringify(spans));
    assert.equal(turn.parentId, request.spanId);
    assert.equal(turn.kind, SpanKind.SPAN_KIND_CONSUMER);
    assert.equal(turn.attributes['agentlog.outcome'], 'done');
    assert.equal(turn.attributes['a2a.task.id'], request.attributes['a2a.task.id']);
    // Every other span (appends, syncs) hangs under one of the trace's.
    const ids = new Set(spans.map((s) => s.spanId));
    for (const span of spans) assert.ok(span.parentId === parentId || ids.has(span.parentId), JSON.stringify(span));
  } finally {
    server.close();
  }
});

test('an environment asking for another protocol is a warning, and nothing is exported', { timeout: 60000 }, async () => {
  const { server, bodies } = await receiver();
  try {
    const done = await run({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${server.address().port}`,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, `00-${crypto.randomBytes(16).toString('hex')}-${crypto.randomBytes(8).toString('hex')}-01`);
    assert.equal(done.code, 0, done.stderr);
    assert.equal(done.stdout.trim(), 'TASK_STATE_COMPLETED');
    assert.match(done.stderr, /agentlog: not exporting traces: OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported/);
    assert.equal(bodies.length, 0);
  } finally {
    server.close();
  }
});

test("a handler's calls to bridges in its process carry its turn on", { timeout: 60000 }, async () => {
  const log = await openLog('memory://');
  const [caller, callee, toolAgent] = ['trace-caller', 'trace-callee', 'trace-tools'];
  const callerBridge = await Bridge.open(log, caller);
  const calleeBridge = await Bridge.open(log, callee);
  const mcp = await McpBridge.open(log, [{ name: 'seen', inputSchema: { type: 'object' }, agent: toolAgent }]);
  const turns = [];
  const seen = [];
  const calling = async (task) => {
    turns.push(task.spanContext ?? null);
    await calleeBridge.sendMessage(send('typed'));
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: send('rpc') });
    await calleeBridge.handleRpc(body, { version: '1.0' });
    for await (const event of calleeBridge.sendStreamingMessage(send('streamed'))) void event;
    // From a callback the handler started, after a timer: still its turn.
    await new Promise((resolve, reject) => setTimeout(() => calleeBridge.sendMessage(send('later')).then(resolve, reject), 1));
    const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'seen', arguments: {} } };
    const reply = await mcp.handleRpc(JSON.stringify(call));
    assert.equal(reply.status, 200, String(reply.body));
    await task.complete('called');
  };
  const workers = [
    await Worker.start(log, caller, calling, { bridge: callerBridge }),
    await Worker.start(log, callee, async (task) => {
      seen.push(task.traceContext ?? null);
      await task.complete('answered');
    }, { bridge: calleeBridge }),
    await Worker.start(log, toolAgent, { tools: { seen: async (call) => {
      seen.push(call.task.traceContext ?? null);
      return { content: [{ type: 'text', text: 'seen' }] };
    } }, bridge: mcp }),
  ];
  const server = await serve(callerBridge, { listen: '127.0.0.1:0' });
  try {
    const parent = `00-${crypto.randomBytes(16).toString('hex')}-${crypto.randomBytes(8).toString('hex')}-01`;
    for (const headers of [{ traceparent: parent, tracestate: 'a=1' }, {}]) {
      const reply = await fetch(server.url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', ...headers },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: send('call') }),
      });
      assert.equal((await reply.json()).result.task.status.state, 'TASK_STATE_COMPLETED');
    }
    // Outside any handler, nothing is carried.
    await calleeBridge.sendMessage(send('outside'));
    const [traced, untraced] = turns;
    assert.ok(traced && untraced === null, JSON.stringify(turns));
    assert.equal(traced.traceparent.split('-')[1], parent.split('-')[1]);
    assert.equal(traced.tracestate, 'a=1');
    // Five calls in the traced turn, five in the untraced one, then the one from outside.
    assert.deepEqual(seen, [...Array(5).fill(traced), ...Array(5).fill(null), null]);
  } finally {
    await server.close();
    for (const worker of workers) await worker.close();
    await log.close();
  }
});

test("handleRpc reads the caller's trace context: its own before a handler's turn, a bad one ignored", { timeout: 60000 }, async () => {
  const log = await openLog('memory://');
  const [caller, callee, toolAgent] = ['rpc-trace-caller', 'rpc-trace-callee', 'rpc-trace-tools'];
  const callerBridge = await Bridge.open(log, caller);
  const calleeBridge = await Bridge.open(log, callee);
  const mcp = await McpBridge.open(log, [{ name: 'seen', inputSchema: { type: 'object' }, agent: toolAgent }]);
  const parent = () => `00-${crypto.randomBytes(16).toString('hex')}-${crypto.randomBytes(8).toString('hex')}-01`;
  const bad = '00-nope-01';
  const [own, ownMcp, meta] = [parent(), parent(), parent()];
  const seen = [];
  const turns = [];
  const a2a = async (bridge, trace, text = 'rpc') => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: send(text) });
    const reply = JSON.parse(String(await bridge.handleRpc(body, { version: '1.0', trace })));
    assert.equal(reply.result.task.status.state, 'TASK_STATE_COMPLETED', JSON.stringify(reply));
  };
  const toolsCall = async (headers, metaParent) => {
    const params = { name: 'seen', arguments: {}, ...(metaParent ? { _meta: { traceparent: metaParent } } : {}) };
    const reply = await mcp.handleRpc(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params }), { headers });
    assert.equal(reply.status, 200, String(reply.body));
  };
  const calling = async (task) => {
    turns.push(task.spanContext ?? null);
    await a2a(calleeBridge, { traceparent: own });
    await a2a(calleeBridge, { traceparent: bad });
    await toolsCall({ traceparent: ownMcp });
    await toolsCall({ traceparent: bad }, meta);
    await task.complete('called');
  };
  const workers = [
    await Worker.start(log, caller, calling, { bridge: callerBridge }),
    await Worker.start(log, callee, async (task) => {
      seen.push(task.traceContext ?? null);
      await task.complete('answered');
    }, { bridge: calleeBridge }),
    await Worker.start(log, toolAgent, { tools: { seen: async (call) => {
      seen.push(call.task.traceContext ?? null);
      return { content: [{ type: 'text', text: 'seen' }] };
    } }, bridge: mcp }),
  ];
  try {
    // From outside any handler: the request's own (names in any case, other keys ignored), or none.
    await a2a(calleeBridge, { 'Content-Type': 'application/json', TraceParent: own, tracestate: 'a=1' });
    await a2a(calleeBridge, { traceparent: bad, tracestate: 'a=1' });
    await a2a(calleeBridge, undefined);
    await toolsCall({ Traceparent: ownMcp, Tracestate: 'm=1' }, meta);
    await toolsCall({ traceparent: bad });
    await toolsCall({ traceparent: bad }, meta);
    // A handler's turn, untraced and then traced (the parent given as a request's would be).
    await callerBridge.sendMessage(send('call'));
    const turnParent = parent();
    await a2a(callerBridge, { traceparent: turnParent }, 'traced call');
    const [untraced, traced] = turns;
    assert.ok(untraced === null && traced, JSON.stringify(turns));
    assert.equal(traced.traceparent.split('-')[1], turnParent.split('-')[1]);
    const outside = [{ traceparent: own, tracestate: 'a=1' }, null, null, { traceparent: ownMcp, tracestate: 'm=1' }, null, { traceparent: meta }];
    // The untraced turn: its own, none, its own, _meta's; the traced one: its own, the turn's
    // (the bad one ignored), its own, the turn's (before _meta's, as a Rust handler's call).
    const inside = [{ traceparent: own }, null, { traceparent: ownMcp }, { traceparent: meta },
      { traceparent: own }, traced, { traceparent: ownMcp }, traced];
    // A carrier as plain data (`tracestate` only when there is one).
    const plain = (c) => c && { traceparent: c.traceparent, ...(c.tracestate ? { tracestate: c.tracestate } : {}) };
    assert.deepStrictEqual(seen.map(plain), [...outside, ...inside].map(plain));
  } finally {
    for (const worker of workers) await worker.close();
    await log.close();
  }
});
