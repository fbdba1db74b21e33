// The official MCP TypeScript client (@modelcontextprotocol/client 2.4.0) against
// `agentlog serve --demo`'s /mcp: its default legacy handshake and negotiated (auto) mode; and,
// when run.sh started them (an iggy-server was found), against two replicas over one Iggy log.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const url = new URL(process.env.AGENTLOG_MCP_URL);

async function connect(mode) {
  const options = mode === 'auto' ? { versionNegotiation: { mode: 'auto' } } : {};
  const client = new Client({ name: 'agentlog-interop', version: '1.0.0' }, options);
  await client.connect(new StreamableHTTPClientTransport(url));
  return client;
}

for (const mode of ['legacy', 'auto']) {
  test(`${mode}: list, call, progress, errors`, async () => {
    const client = await connect(mode);
    try {
      assert.equal(client.getServerVersion()?.name, 'agentlog');
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      for (const name of ['echo', 'greet', 'slow_compute', 'test_tool_with_progress']) assert.ok(names.includes(name), name);
      const greeted = await client.callTool({ name: 'greet', arguments: { name: 'Ada' } });
      assert.equal(greeted.content[0].text, 'Hello, Ada!');
      const seen = [];
      const done = await client.callTool(
        { name: 'test_tool_with_progress', arguments: {} },
        { onprogress: (p) => seen.push([p.progress, p.total]) },
      );
      assert.deepEqual(seen, [[0, 100], [50, 100], [100, 100]]);
      assert.equal(done.content[0].text, 'Progress test completed');
      const failed = await client.callTool({ name: 'test_error_handling', arguments: {} });
      assert.equal(failed.isError, true);
    } finally {
      await client.close();
    }
  });

  test(`${mode}: a cancelled call rejects and the client goes on`, async () => {
    const cancelledBefore = (await taskStatuses()).filter((s) => s === 'cancelled').length;
    const client = await connect(mode);
    try {
      const controller = new AbortController();
      const call = client.callTool({ name: 'slow_compute', arguments: { seconds: 30 } }, { signal: controller.signal });
      setTimeout(() => controller.abort('enough'), 300);
      const started = Date.now();
      await assert.rejects(call);
      assert.ok(Date.now() - started < 5000);
      const again = await client.callTool({ name: 'echo', arguments: { text: 'still here' } });
      assert.equal(again.content[0].text, 'still here');
    } finally {
      await client.close();
    }
    // The call's task ends cancelled long before its 30 s: legacy, by the client's
    // notifications/cancelled naming the call's id; modern, by the client closing the stream.
    const deadline = Date.now() + 10000;
    for (;;) {
      const statuses = await taskStatuses();
      const cancelled = statuses.filter((s) => s === 'cancelled').length;
      if (!statuses.includes('working') && cancelled === cancelledBefore + 1) break;
      assert.ok(Date.now() < deadline, JSON.stringify(statuses));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });
}

test('legacy: a tool asking for sampling and elicitation is answered by the handlers', async () => {
  const client = new Client(
    { name: 'agentlog-interop', version: '1.0.0' },
    { capabilities: { sampling: {}, elicitation: {} } },
  );
  client.setRequestHandler('sampling/createMessage', async () => ({
    role: 'assistant', model: 'm', content: { type: 'text', text: 'Paris' },
  }));
  client.setRequestHandler('elicitation/create', async (request) => ({
    action: 'accept', content: { username: 'ada', email: 'ada@example.com', asked: request.params.message },
  }));
  await client.connect(new StreamableHTTPClientTransport(url));
  try {
    const sampled = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'Capital of France?' } });
    assert.equal(sampled.content[0].text, 'LLM response: Paris');
    const elicited = await client.callTool({ name: 'test_elicitation', arguments: { message: 'Who?' } });
    assert.match(elicited.content[0].text, /^User response: action=accept, content=.*"asked":"Who\?"/);
  } finally {
    await client.close();
  }
});

test('legacy: a subscribed task resource is notified of a change made over A2A', async () => {
  const client = await connect('legacy');
  try {
    const sent = await a2aSend('input');
    const task = sent.result.task;
    assert.equal(task.status.state, 'TASK_STATE_INPUT_REQUIRED');
    const uri = `agentlog://tasks/demo%3A${task.id}`;
    const updated = new Promise((resolve) => {
      client.setNotificationHandler('notifications/resources/updated', (n) => {
        if (n.params.uri === uri) resolve(n.params.uri);
      });
    });
    await client.subscribeResource({ uri });
    await a2aSend('done', task.id);
    let timer;
    const late = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('no notification in 20 s')), 20000); });
    assert.equal(await Promise.race([updated, late]), uri);
    clearTimeout(timer);
    await client.unsubscribeResource({ uri });
  } finally {
    await client.close();
  }
});

// SendMessage to the demo A2A agent beside /mcp (of `base`, default `url`), blocking; with
// `taskId`, the task's next message.
async function a2aSend(text, taskId, base = url) {
  const message = { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text }] };
  if (taskId !== undefined) message.taskId = taskId;
  const response = await fetch(new URL('/', base), {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message } }),
  });
  assert.equal(response.status, 200);
  return response.json();
}

// The status of every task of this (anonymous) caller, by plain legacy tasks/list (every
// page), which also lists the tasks of sync calls.
async function taskStatuses() {
  const statuses = [];
  let params = {};
  for (;;) {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/list', params }),
    });
    assert.equal(response.status, 200);
    const { result } = await response.json();
    statuses.push(...result.tasks.map((task) => task.status));
    if (result.nextCursor === undefined) return statuses;
    params = { cursor: result.nextCursor };
  }
}

// ---- two replicas over one Iggy log ----------------------------------------------------

const replicaA = process.env.AGENTLOG_MCP_URL_A ? new URL(process.env.AGENTLOG_MCP_URL_A) : null;
const replicaB = process.env.AGENTLOG_MCP_URL_B ? new URL(process.env.AGENTLOG_MCP_URL_B) : null;
const twoReplicas = replicaA && replicaB ? {} : { skip: 'SKIPPED: two replicas need an iggy-server (run.sh starts them)' };

test('two replicas, legacy: relayed sampling and elicitation answered through the other replica', twoReplicas, async () => {
  // A balancer in front of both: the client's answers (JSON-RPC responses) go to replica B,
  // everything else to replica A, which holds the call's stream.
  let answers = 0;
  const balancer = async (input, init) => {
    const body = typeof init?.body === 'string' ? JSON.parse(init.body) : null;
    if (init?.method === 'POST' && body && !('method' in body) && ('result' in body || 'error' in body)) {
      answers += 1;
      return fetch(replicaB, init);
    }
    return fetch(input, init);
  };
  const client = new Client(
    { name: 'agentlog-interop', version: '1.0.0' },
    { capabilities: { sampling: {}, elicitation: {} } },
  );
  client.setRequestHandler('sampling/createMessage', async () => ({
    role: 'assistant', model: 'm', content: { type: 'text', text: 'Paris' },
  }));
  client.setRequestHandler('elicitation/create', async () => ({
    action: 'accept', content: { username: 'ada', email: 'ada@example.com' },
  }));
  await client.connect(new StreamableHTTPClientTransport(replicaA, { fetch: balancer }));
  try {
    const sampled = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'Capital of France?' } });
    assert.equal(sampled.content[0].text, 'LLM response: Paris');
    const elicited = await client.callTool({ name: 'test_elicitation', arguments: { message: 'Who?' } });
    assert.match(elicited.content[0].text, /^User response: action=accept/);
  } finally {
    await client.close();
  }
  assert.equal(answers, 2);
});

test('two replicas, legacy: a subscription through one hears of a change made through the other', twoReplicas, async () => {
  const client = new Client({ name: 'agentlog-interop', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(replicaA));
  try {
    const sent = await a2aSend('input', undefined, replicaA);
    const task = sent.result.task;
    assert.equal(task.status.state, 'TASK_STATE_INPUT_REQUIRED');
    const uri = `agentlog://tasks/demo%3A${task.id}`;
    const updated = new Promise((resolve) => {
      client.setNotificationHandler('notifications/resources/updated', (n) => {
        if (n.params.uri === uri) resolve(n.params.uri);
      });
    });
    await client.subscribeResource({ uri });
    await a2aSend('done', task.id, replicaB);
    let timer;
    const late = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('no notification in 20 s')), 20000); });
    assert.equal(await Promise.race([updated, late]), uri);
    clearTimeout(timer);
  } finally {
    await client.close();
  }
});
