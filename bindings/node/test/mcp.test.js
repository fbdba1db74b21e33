// MCP from Node: an McpBridge serving tools whose handlers are JS (Worker.start with
// { tools }), called through handleRpc (both eras, the MCP headers, progress as SSE frames,
// invalid arguments, an unknown tool, handlers that throw, reject or return junk, a task that
// asks for input and resumes, a cancelled task, log messages at a modern call's level, an ask
// expiring after inputTimeoutMs, prompts, template reads and completions with JS handlers, a
// reload heard by a listen stream) and through
// serve({ mcp }) over HTTP (plain requests and the official @modelcontextprotocol/client
// 2.4.0, legacy and auto), over memory:// and file://.
'use strict';

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const path = require('node:path');
const { openLog, Bridge, McpBridge, Worker, ToolCall, AgentlogError, serve } = require('..');
const { tempDir } = require('./helpers');

const TIMEOUT = { timeout: 60000 };
const MODERN = '2026-07-28';
let agents = 0;

function tools(agent) {
  const nameSchema = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] };
  return [
    { name: 'greet', description: 'Says hello', inputSchema: nameSchema, agent },
    { name: 'throws', inputSchema: { type: 'object' }, agent },
    { name: 'rejects', inputSchema: { type: 'object' }, agent },
    { name: 'junk', inputSchema: { type: 'object' }, agent, taskSupport: 'optional' },
  ];
}

function handlers(calls) {
  return {
    async greet(call) {
      assert.ok(call instanceof ToolCall);
      calls.push({ name: call.name, arguments: call.arguments, task: call.task.taskId, input: call.inputResponses });
      await call.task.report(1, 2, 'halfway');
      await call.task.report(2, 2);
      const who = call.arguments.name;
      return { content: [{ type: 'text', text: `Hello, ${who}!` }], structuredContent: { greeting: `Hello, ${who}!` } };
    },
    throws(call) {
      throw new TypeError(`thrown by ${call.name}`);
    },
    rejects: () => Promise.reject(new RangeError('rejected')),
    junk: async () => ({ content: 'not a list' }),
  };
}

function rpc(method, params, id = 1) {
  return JSON.stringify({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });
}

function modern(params) {
  const meta = { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {} };
  return { ...params, _meta: meta };
}

function answer(reply) {
  assert.ok(reply.body, `no body (status ${reply.status})`);
  return JSON.parse(reply.body.toString());
}

for (const kind of ['memory', 'file']) {
  describe(`MCP tools with JS handlers over ${kind}://`, () => {
    let log;
    let mcp;
    let bridge;
    let worker;
    const calls = [];

    before(async () => {
      agents += 1;
      const agent = `jstools${agents}`;
      log = await openLog(kind === 'memory' ? 'memory://' : `file://${path.join(tempDir(), 'log')}`);
      mcp = await McpBridge.open(log, tools(agent), { name: 'jstools', version: '9.9' });
      worker = await Worker.start(log, agent, { tools: handlers(calls), bridge: mcp });
      bridge = await Bridge.open(log, agent);
    });
    after(async () => {
      await worker?.close();
      await log?.close();
    });

    test('tools/list gives the definitions in both eras', TIMEOUT, async () => {
      assert.deepEqual(mcp.tools.map((t) => t.name), ['greet', 'throws', 'rejects', 'junk']);
      assert.equal(mcp.tools[3].taskSupport, 'optional');
      assert.equal(mcp.agents.length, 1);
      const legacy = await mcp.handleRpc(rpc('tools/list'));
      assert.equal(legacy.status, 200);
      assert.equal(legacy.contentType, 'application/json');
      assert.equal(legacy.frames, null);
      const listed = answer(legacy).result.tools;
      assert.deepEqual(listed.map((t) => t.name), ['greet', 'junk', 'rejects', 'throws']);
      assert.deepEqual(listed[1].execution, { taskSupport: 'optional' });
      const headers = { 'mcp-protocol-version': MODERN, 'MCP-METHOD': 'tools/list' };
      const result = answer(await mcp.handleRpc(Buffer.from(rpc('tools/list', modern({}))), { headers })).result;
      assert.equal(result.resultType, 'complete');
      assert.deepEqual(result._meta['io.modelcontextprotocol/serverInfo'], { name: 'jstools', version: '9.9' });
    });

    test('a call round-trips through the JS handler', TIMEOUT, async () => {
      calls.length = 0;
      const call = { name: 'greet', arguments: { name: 'Ada' } };
      const { result } = answer(await mcp.handleRpc(rpc('tools/call', call)));
      assert.deepEqual(result.content, [{ type: 'text', text: 'Hello, Ada!' }]);
      assert.deepEqual(result.structuredContent, { greeting: 'Hello, Ada!' });
      assert.equal(calls.length, 1);
      assert.deepEqual(calls[0].arguments, { name: 'Ada' });
      assert.equal(calls[0].input, null);
      const task = await bridge.getTask({ id: calls[0].task });
      assert.equal(task.status.state, 'TASK_STATE_COMPLETED');
      // Modern, over "HTTP": the headers are checked against the body.
      const headers = { 'MCP-Protocol-Version': MODERN, 'mcp-method': 'tools/call', 'Mcp-Name': 'greet' };
      const ok = await mcp.handleRpc(rpc('tools/call', modern(call)), { headers });
      assert.equal(ok.status, 200);
      assert.equal(answer(ok).result.content[0].text, 'Hello, Ada!');
      const mismatch = await mcp.handleRpc(rpc('tools/call', modern(call)), { headers: { ...headers, 'Mcp-Name': 'junk' } });
      assert.equal(mismatch.status, 400);
      assert.equal(answer(mismatch).error.code, -32020);
      assert.equal(calls.length, 2);
    });

    test('progress streams as SSE frames before the answer', TIMEOUT, async () => {
      const call = { name: 'greet', arguments: { name: 'Bo' }, _meta: { progressToken: 'p1' } };
      const reply = await mcp.handleRpc(rpc('tools/call', call, 7), { acceptsStream: true });
      assert.equal(reply.status, 200);
      assert.equal(reply.contentType, 'text/event-stream');
      assert.equal(reply.body, null);
      const messages = [];
      for await (const frame of reply.frames) {
        const text = frame.toString();
        assert.ok(text.startsWith('data: ') && text.endsWith('\n\n'), text);
        messages.push(JSON.parse(text.slice('data: '.length)));
      }
      const progress = messages.filter((m) => m.method === 'notifications/progress').map((m) => m.params);
      assert.deepEqual(progress, [
        { progressToken: 'p1', progress: 1, total: 2, message: 'halfway' },
        { progressToken: 'p1', progress: 2, total: 2 },
      ]);
      assert.equal(messages.at(-1).id, 7);
      assert.equal(messages.at(-1).result.content[0].text, 'Hello, Bo!');
    });

    test('invalid arguments and unknown tools write nothing', TIMEOUT, async () => {
      calls.length = 0;
      const before = (await bridge.listTasks()).tasks?.length ?? 0;
      // Arguments failing inputSchema: a tool error the model can correct (SEP-1303), as
      // the SDK answers it, not -32602; the handler never runs.
      const bad = answer(await mcp.handleRpc(rpc('tools/call', { name: 'greet', arguments: { name: 5 } })));
      assert.equal(bad.result.isError, true);
      assert.match(bad.result.content[0].text, /Invalid arguments for tool greet/);
      const unknown = answer(await mcp.handleRpc(rpc('tools/call', { name: 'nope', arguments: {} })));
      assert.equal(unknown.error.code, -32602);
      assert.match(unknown.error.message, /nope/);
      assert.equal((await mcp.handleRpc(rpc('tools/call', modern({ name: 'nope' })))).status, 400);
      assert.equal(calls.length, 0);
      assert.equal((await bridge.listTasks()).tasks?.length ?? 0, before);
    });

    test('a handler that throws, rejects or returns junk is a JSON-RPC error', TIMEOUT, async () => {
      const thrown = answer(await mcp.handleRpc(rpc('tools/call', { name: 'throws' })));
      assert.equal(thrown.error.code, -32603);
      assert.match(thrown.error.message, /TypeError: thrown by throws/);
      const rejected = answer(await mcp.handleRpc(rpc('tools/call', { name: 'rejects' })));
      assert.equal(rejected.error.code, -32603);
      assert.match(rejected.error.message, /RangeError: rejected/);
      const junk = answer(await mcp.handleRpc(rpc('tools/call', { name: 'junk' })));
      assert.equal(junk.error.code, -32603);
      assert.match(junk.error.message, /the handler returned/);
    });

    test('a notification is accepted without a body', TIMEOUT, async () => {
      const reply = await mcp.handleRpc(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
      assert.equal(reply.status, 202);
      assert.equal(reply.body, null);
      assert.equal(reply.frames, null);
      assert.equal(reply.contentType, null);
    });

    test('serve({ mcp }) answers /mcp over HTTP beside the A2A endpoint', TIMEOUT, async () => {
      const server = await serve(bridge, { listen: '127.0.0.1:0', mcp });
      try {
        assert.equal(server.mcpUrl, `${server.url}mcp`);
        const post = (body, headers = {}) =>
          fetch(server.mcpUrl, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
            body,
          });
        const init = await post(rpc('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } }));
        assert.equal(init.status, 200);
        assert.equal((await init.json()).result.serverInfo.name, 'jstools');
        const called = await post(rpc('tools/call', { name: 'greet', arguments: { name: 'Cy' }, _meta: { progressToken: 9 } }));
        assert.equal(called.status, 200);
        assert.match(called.headers.get('content-type'), /text\/event-stream/);
        const events = (await called.text()).split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => JSON.parse(e.slice(6)));
        assert.deepEqual(events.filter((e) => e.method).map((e) => e.params.progress), [1, 2]);
        assert.equal(events.at(-1).result.content[0].text, 'Hello, Cy!');
        const headers = { 'MCP-Protocol-Version': MODERN, 'Mcp-Method': 'tools/call', 'Mcp-Name': 'throws' };
        const thrown = await post(rpc('tools/call', modern({ name: 'throws' })), headers);
        assert.equal((await thrown.json()).error.code, -32603);
        // The official MCP TypeScript client, in its default legacy mode and negotiated.
        const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
        for (const mode of ['legacy', 'auto']) {
          const options = mode === 'auto' ? { versionNegotiation: { mode: 'auto' } } : {};
          const client = new Client({ name: 'agentlog-node-test', version: '1.0.0' }, options);
          await client.connect(new StreamableHTTPClientTransport(new URL(server.mcpUrl)));
          try {
            assert.equal(client.getServerVersion()?.name, 'jstools');
            const { tools: listed } = await client.listTools();
            assert.deepEqual(listed.map((t) => t.name).sort(), ['greet', 'junk', 'rejects', 'throws']);
            const seen = [];
            const greeted = await client.callTool({ name: 'greet', arguments: { name: 'Di' } }, { onprogress: (p) => seen.push([p.progress, p.total]) });
            assert.equal(greeted.content[0].text, 'Hello, Di!');
            assert.deepEqual(greeted.structuredContent, { greeting: 'Hello, Di!' });
            assert.deepEqual(seen, [[1, 2], [2, 2]], mode);
            const invalid = await client.callTool({ name: 'greet', arguments: {} });
            assert.equal(invalid.isError, true);
            await assert.rejects(client.callTool({ name: 'throws', arguments: {} }), /thrown by throws/);
          } finally {
            await client.close();
          }
        }
        // The Host check of the route (DNS rebinding): a foreign Host is 403.
        const foreign = await new Promise((resolve, reject) => {
          const request = http.request(server.mcpUrl, { method: 'POST', headers: { Host: 'evil.example.com', 'Content-Type': 'application/json' } }, (response) => {
            response.resume();
            resolve(response.statusCode);
          });
          request.on('error', reject);
          request.end(rpc('tools/list'));
        });
        assert.equal(foreign, 403);
        // The A2A endpoint is still there.
        const card = await fetch(`${server.url}.well-known/agent-card.json`);
        assert.equal(card.status, 200);
      } finally {
        await server.close();
      }
    });
  });
}

test('a task asks for input and resumes, another is cancelled and its handler hears it', TIMEOUT, async () => {
  const log = await openLog('memory://');
  const meta = { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } };
  let aborted = false;
  let started = false;
  const mcp = await McpBridge.open(log, [
    { name: 'colour', inputSchema: { type: 'object' }, agent: 'jsasks', taskSupport: 'optional' },
    { name: 'wait', inputSchema: { type: 'object' }, agent: 'jsasks', taskSupport: 'required' },
  ]);
  const worker = await Worker.start(log, 'jsasks', {
    bridge: mcp,
    tools: {
      async colour(call) {
        if (call.inputResponses === null) {
          await call.ask('which colour?', { colour: { method: 'elicitation/create', params: { message: 'which colour?', requestedSchema: { type: 'object' } } } });
          return { content: [] }; // dropped: ask ended the turn
        }
        return { content: [{ type: 'text', text: `picked ${call.inputResponses.colour.content.c}` }] };
      },
      async wait(call) {
        started = true;
        await call.task.waitCancelled();
        aborted = call.task.signal.aborted;
        return { content: [] };
      },
    },
  });
  const call = async (method, params) => answer(await mcp.handleRpc(rpc(method, { ...params, _meta: meta })));
  const status = async (taskId, want) => {
    let got;
    for (let i = 0; i < 500; i += 1) {
      got = (await call('tasks/get', { taskId })).result;
      if (got.status === want) return got;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`${taskId} never became ${want}: ${JSON.stringify(got)}`);
  };
  try {
    const created = (await call('tools/call', { name: 'colour' })).result;
    assert.equal(created.resultType, 'task');
    assert.equal((await status(created.taskId, 'input_required')).statusMessage, 'which colour?');
    await call('tasks/update', { taskId: created.taskId, inputResponses: { colour: { action: 'accept', content: { c: 'red' } } } });
    assert.deepEqual((await status(created.taskId, 'completed')).result.content, [{ type: 'text', text: 'picked red' }]);
    const waiting = (await call('tools/call', { name: 'wait' })).result;
    // Cancel once the handler runs (a cancel before the worker takes the call never reaches
    // one). Polled: a worker does not keep Node's event loop alive, a timer does.
    for (let i = 0; i < 500 && !started; i += 1) await new Promise((r) => setTimeout(r, 20));
    assert.ok(started, 'the wait handler never ran');
    await call('tasks/cancel', { taskId: waiting.taskId });
    await status(waiting.taskId, 'cancelled');
    for (let i = 0; i < 250 && !aborted; i += 1) await new Promise((r) => setTimeout(r, 20));
    assert.equal(aborted, true);
  } finally {
    await worker.close();
    await log.close();
  }
});

/** A modern `_meta` asking log messages at `level` (and progress under `tok`). */
function logLevel(level, capabilities = {}) {
  return {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientCapabilities': capabilities,
    'io.modelcontextprotocol/logLevel': level,
    progressToken: 'tok',
  };
}

test('log messages stream in order before the result, at the level the call asked', TIMEOUT, async () => {
  const log = await openLog('memory://');
  const refused = [];
  const mcp = await McpBridge.open(log, [{ name: 'chatty', inputSchema: { type: 'object' }, agent: 'jslogs' }]);
  const worker = await Worker.start(log, 'jslogs', {
    bridge: mcp,
    tools: {
      async chatty(call) {
        await call.task.log('debug', { step: 'connect' }, 'db');
        await call.task.report(1, 2);
        await call.task.log('info', 'halfway');
        await call.task.report(2, 2);
        await call.task.log('error', { slow: true }, 'db');
        await call.task.log('loud', 'no such level').catch((e) => refused.push(e));
        return { content: [{ type: 'text', text: 'done' }] };
      },
    },
  });
  try {
    const reply = await mcp.handleRpc(rpc('tools/call', { name: 'chatty', _meta: logLevel('info') }, 3), { acceptsStream: true });
    assert.equal(reply.status, 200);
    assert.equal(reply.contentType, 'text/event-stream');
    const messages = [];
    for await (const frame of reply.frames) messages.push(JSON.parse(frame.toString().slice('data: '.length)));
    const summary = messages.map((m) => {
      if (m.method === 'notifications/message') return ['log', m.params];
      if (m.method === 'notifications/progress') return ['progress', m.params.progress];
      return ['result', m.result.content[0].text];
    });
    // debug is below the level asked: on the log, not sent.
    assert.deepEqual(summary, [
      ['progress', 1],
      ['log', { level: 'info', data: 'halfway' }],
      ['progress', 2],
      ['log', { level: 'error', logger: 'db', data: { slow: true } }],
      ['result', 'done'],
    ]);
    assert.equal(messages.at(-1).id, 3);
    assert.equal(refused.length, 1);
    assert.ok(refused[0] instanceof AgentlogError && refused[0].kind === 'invalid_params' && /level/.test(refused[0].message), String(refused[0]));
  } finally {
    await worker.close();
    await log.close();
  }
});

test('an ask waits inputTimeoutMs, then the call expires', TIMEOUT, async () => {
  const log = await openLog('memory://');
  const anything = { type: 'object' };
  const mcp = await McpBridge.open(log, [
    { name: 'confirm', inputSchema: anything, agent: 'jsexpiry' },
    { name: 'patient', inputSchema: anything, agent: 'jsexpiry' },
  ]);
  const bridge = await Bridge.open(log, 'jsexpiry');
  const confirm = async (call) => {
    if (call.inputResponses === null) {
      await call.ask('sure?', { ok: { method: 'elicitation/create', params: { message: 'sure?', requestedSchema: { type: 'object' } } } });
      return { content: [] };
    }
    return { content: [{ type: 'text', text: 'confirmed' }] };
  };
  const tools = { confirm, patient: confirm };
  const refusesWith = (pattern) => (e) => e instanceof AgentlogError && e.kind === 'invalid_params' && pattern.test(e.message);
  await assert.rejects(Worker.start(log, 'jsexpiry', { tools, inputTimeoutMs: -1 }), refusesWith(/inputTimeoutMs must be/));
  await assert.rejects(Worker.start(log, 'jsexpiry', { tools, inputTimeoutMs: 'soon' }), refusesWith(/./));
  await assert.rejects(Worker.start(log, 'jsexpiry', { tools, inputTimeoutMs: { confrim: 1 } }), refusesWith(/names tool "confrim"/));
  await assert.rejects(Worker.start(log, 'jsexpiry', async () => {}, { inputTimeoutMs: 1000 }), refusesWith(/needs \{ tools \}/));
  // A modern sync call of `name`: the call, its task id and its recorded deadline (ms).
  const ask = async (name) => {
    const call = { name, _meta: logLevel('info', { elicitation: {} }) };
    const asked = answer(await mcp.handleRpc(rpc('tools/call', call))).result;
    assert.equal(asked.resultType, 'input_required', JSON.stringify(asked));
    const state = asked.requestState;
    const taskId = state.slice(0, state.lastIndexOf('#')).split(':').slice(1).join(':');
    const waiting = await bridge.getTask({ id: taskId });
    assert.equal(waiting.status.state, 'TASK_STATE_INPUT_REQUIRED');
    return { call: { ...call, requestState: state }, taskId, deadline: waiting.status.message.metadata['agentlog.mcp'].inputDeadlineMs };
  };
  const within = (deadline, from, ms) => assert.ok(deadline >= from + ms && deadline < from + ms + 5000, `from ${from} +${ms}: deadline ${deadline}`);
  // One number: every tool's asks wait that long.
  let worker = await Worker.start(log, 'jsexpiry', { tools, bridge: mcp, inputTimeoutMs: 30000 });
  try {
    const askedAt = Date.now();
    within((await ask('patient')).deadline, askedAt, 30000);
  } finally {
    await worker.close();
  }
  // By tool name: those tools; the others keep the default (15 minutes).
  worker = await Worker.start(log, 'jsexpiry', { tools, bridge: mcp, inputTimeoutMs: { confirm: 500 } });
  try {
    let askedAt = Date.now();
    within((await ask('patient')).deadline, askedAt, 900000);
    askedAt = Date.now();
    const { call, taskId, deadline } = await ask('confirm');
    within(deadline, askedAt, 500);
    let task;
    for (let i = 0; i < 500; i += 1) {
      task = await bridge.getTask({ id: taskId });
      if (task.status.state === 'TASK_STATE_CANCELED') break;
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(task.status.state, 'TASK_STATE_CANCELED');
    assert.ok(Date.now() >= deadline);
    const refused = await mcp.handleRpc(rpc('tools/call', { ...call, inputResponses: { ok: { action: 'accept', content: {} } } }));
    const body = answer(refused);
    assert.equal(refused.status, 400);
    assert.equal(body.error.code, -32602);
    assert.match(body.error.message, /expired/);
  } finally {
    await worker.close();
    await log.close();
  }
});

describe('refusals', () => {
  test('bad tools and bad workers are refused clearly', TIMEOUT, async () => {
    const log = await openLog('memory://');
    try {
      await assert.rejects(McpBridge.open(log, [{ name: 'x' }]), (e) => e instanceof AgentlogError && e.kind === 'config' && /inputSchema/.test(e.message));
      await assert.rejects(McpBridge.open(log, [{ name: 'bad name', inputSchema: { type: 'object' } }]), (e) => e.kind === 'config' && /"bad name"/.test(e.message));
      await assert.rejects(McpBridge.open(log, { not: 'tools' }), (e) => e.kind === 'config');
      const mcp = await McpBridge.open(log, { tools: [{ name: 't', inputSchema: { type: 'object' } }] });
      assert.deepEqual(mcp.agents, ['mcp.t']);
      const greet = async () => ({ content: [] });
      // A handler and tools together are one agent's worker (its default handler and tools).
      await (await Worker.start(log, 'mcp.t', async () => {}, { tools: { t: greet } })).close();
      await assert.rejects(Worker.start(log, 'mcp.t'), (e) => e.kind === 'invalid_params' && /needs a handler/.test(e.message));
      await assert.rejects(Worker.start(log, 'mcp.t', { tools: { t: 'nope' } }), (e) => /tool "t" must be a function/.test(e.message));
      await assert.rejects(Worker.start(log, 'mcp.t', { tools: {} }), (e) => /at least one tool/.test(e.message));
      await assert.rejects(Worker.start(log, 'elsewhere', { tools: { t: greet }, bridge: mcp }), (e) => e.kind === 'config' && /no tool on agent "elsewhere"/.test(e.message));
      // The null-handler form works too.
      const worker = await Worker.start(log, 'mcp.t', null, { tools: { t: greet }, bridge: mcp });
      const reply = await mcp.handleRpc(rpc('tools/call', { name: 't' }));
      assert.deepEqual(answer(reply).result, { content: [] });
      await worker.close();
    } finally {
      await log.close();
    }
  });
});

test('prompts, template reads and completions answered by JS handlers, and a reload heard by a listening client', TIMEOUT, async () => {
  agents += 1;
  const agent = `jsserved${agents}`;
  const log = await openLog('memory://');
  const definitions = {
    prompts: [{ name: 'brief', arguments: [{ name: 'topic', required: true }], agent, completionAgent: agent }],
    resourceTemplates: [{ uriTemplate: 'notes://{id}', name: 'note', mimeType: 'text/plain', agent, completionAgent: agent }],
  };
  const mcp = await McpBridge.open(log, definitions);
  const worker = await Worker.start(log, agent, {
    bridge: mcp,
    prompts: {
      brief: async (call) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Brief me on ${call.arguments.topic}.` } }] }),
    },
    resources: {
      'notes://{id}': (call) => (call.arguments.id === 'misshapen'
        ? [{ text: 'no uri' }]
        : [{ uri: call.arguments.uri, mimeType: 'text/plain', text: `note ${call.arguments.id}` }]),
    },
    promptCompletions: {
      brief: (call) => ['logs', 'latency', 'disks'].filter((t) => t.startsWith(call.arguments.value)),
    },
    resourceCompletions: {
      'notes://{id}': async () => ({ values: ['1', '2'], total: 7, hasMore: true }),
    },
  });
  try {
    const got = answer(await mcp.handleRpc(rpc('prompts/get', { name: 'brief', arguments: { topic: 'disks' } })));
    assert.equal(got.result.messages[0].content.text, 'Brief me on disks.', JSON.stringify(got));
    const read = answer(await mcp.handleRpc(rpc('resources/read', modern({ uri: 'notes://7' }))));
    assert.deepEqual(read.result.contents, [{ uri: 'notes://7', mimeType: 'text/plain', text: 'note 7' }]);
    // Contents of the wrong shape fail the read, saying what is wrong (the SDK's check).
    const misshapen = answer(await mcp.handleRpc(rpc('resources/read', { uri: 'notes://misshapen' })));
    assert.equal(misshapen.error.code, -32603, JSON.stringify(misshapen));
    assert.match(misshapen.error.message, /the resource handler returned invalid contents/);
    const topics = answer(await mcp.handleRpc(rpc('completion/complete', { ref: { type: 'ref/prompt', name: 'brief' }, argument: { name: 'topic', value: 'l' } })));
    assert.deepEqual(topics.result.completion, { values: ['logs', 'latency'], total: 2, hasMore: false });
    const ids = answer(await mcp.handleRpc(rpc('completion/complete', modern({ ref: { type: 'ref/resource', uri: 'notes://{id}' }, argument: { name: 'id', value: '' } }))));
    assert.deepEqual(ids.result.completion, { values: ['1', '2'], total: 7, hasMore: true });
  } finally {
    await worker.close();
  }
  // A 2026-07-28 listen stream asking for the tools' list hears a reload that changes it.
  const listen = await mcp.handleRpc(rpc('subscriptions/listen', modern({ notifications: { toolsListChanged: true } })), { acceptsStream: true });
  assert.ok(listen.frames);
  const frames = listen.frames[Symbol.asyncIterator]();
  const parse = (frame) => JSON.parse(frame.value.toString().replace(/^data: /, ''));
  const ack = parse(await frames.next());
  assert.deepEqual(ack.params.notifications, { toolsListChanged: true });
  const changed = await mcp.reload({ ...definitions, tools: [{ name: 'added', inputSchema: { type: 'object' } }] });
  assert.deepEqual({ ...changed }, { tools: true, prompts: false, resources: false });
  const heard = parse(await frames.next());
  assert.equal(heard.method, 'notifications/tools/list_changed');
  assert.deepEqual(mcp.tools.map((t) => t.name), ['added']);
  await assert.rejects(mcp.reload([{ name: 'bad name!', inputSchema: { type: 'object' } }]), (e) => e instanceof AgentlogError && e.kind === 'config');
  await frames.return?.();
});
