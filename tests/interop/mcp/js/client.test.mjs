// The official MCP TypeScript client (@modelcontextprotocol/client 2.4.0) against
// `agentlog serve --demo`'s /mcp: its default legacy handshake, negotiated (auto) mode and
// pinned 2026-07-28 (`subscriptions/listen` through `client.listen`); and, when run.sh started
// them (an iggy-server was found), against two replicas over one Iggy log.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const url = new URL(process.env.AGENTLOG_MCP_URL);

// A client of `base` (default `url`) in `mode`: 'legacy' (the client's default handshake),
// 'auto' (probes server/discover) or '2026-07-28' (pinned).
async function connect(mode, base = url) {
  const negotiation = { legacy: undefined, auto: 'auto', '2026-07-28': { pin: '2026-07-28' } }[mode];
  const options = negotiation === undefined ? {} : { versionNegotiation: { mode: negotiation } };
  const client = new Client({ name: 'agentlog-interop', version: '1.0.0' }, options);
  await client.connect(new StreamableHTTPClientTransport(base));
  return client;
}

// The first notification `method` whose params `matches` that `client` hears, within 20 s.
function heard(client, method, matches = () => true) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${method} in 20 s`)), 20000);
  });
  const seen = new Promise((resolve) => {
    client.setNotificationHandler(method, (n) => {
      if (matches(n.params)) resolve(n.params);
    });
  });
  return Promise.race([seen, late]).finally(() => clearTimeout(timer));
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
      // The call's task ends cancelled long before its 30 s: legacy, by the client's
      // notifications/cancelled naming the call's id; modern, by the client closing the stream
      // (the abort). Awaited before the close: the client sends its notification without
      // waiting for it, and closing aborts what it still has in flight.
      const deadline = Date.now() + 10000;
      for (;;) {
        const statuses = await taskStatuses();
        const cancelled = statuses.filter((s) => s === 'cancelled').length;
        if (!statuses.includes('working') && cancelled === cancelledBefore + 1) break;
        assert.ok(Date.now() < deadline, JSON.stringify(statuses));
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      await client.close();
    }
  });
}

for (const mode of ['legacy', 'auto', '2026-07-28']) {
  test(`${mode}: a task's artifact read as a resource after it ran, a binary result, static resources`, async () => {
    const text = `resource ${crypto.randomUUID()}`;
    const { task } = (await a2aSend(text)).result;
    const taskUri = `agentlog://tasks/demo%3A${task.id}`;
    const client = await connect(mode);
    try {
      assert.equal(client.getNegotiatedProtocolVersion(), mode === 'legacy' ? '2025-11-25' : '2026-07-28');
      const templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
      for (const template of ['agentlog://tasks/{taskId}', 'agentlog://tasks/{taskId}/artifacts/{artifactId}']) {
        assert.ok(templates.includes(template), template);
      }
      const listed = (await client.listResources()).resources.map((r) => r.uri);
      assert.deepEqual(listed.slice(0, 2), ['test://static-text', 'test://static-binary']);
      assert.ok(listed.includes(taskUri), taskUri);
      const artifact = await client.readResource({ uri: `${taskUri}/artifacts/echo` });
      assert.equal(artifact.contents.map((c) => c.text).join(''), `echo: ${text}`);
      assert.ok(artifact.contents.every((c) => c.mimeType === 'text/plain'));
      await assert.rejects(client.readResource({ uri: `${taskUri}/artifacts/none` }), (e) => e.code === -32602);
      const binary = await client.readResource({ uri: 'test://static-binary' });
      assert.equal(binary.contents[0].mimeType, 'image/png');
      assert.ok(Buffer.from(binary.contents[0].blob, 'base64').subarray(0, 4).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47])));
      // A tool call's image, read back from its task (the newest of this caller's tool tasks).
      const image = await client.callTool({ name: 'test_image_content', arguments: {} });
      const { resources } = await client.listResources(undefined, { cacheMode: 'bypass' });
      const called = resources.find((r) => r.name.startsWith('mcp.demo:'));
      const read = await client.readResource({ uri: called.uri });
      assert.deepEqual(read.contents.map((c) => [c.mimeType, c.blob]), [['image/png', image.content[0].data]]);
    } finally {
      await client.close();
    }
  });

  test(`${mode}: prompts listed and got with arguments, an argument and a template variable completed`, async () => {
    const client = await connect(mode);
    try {
      const prompts = new Map((await client.listPrompts()).prompts.map((p) => [p.name, p]));
      for (const name of ['test_simple_prompt', 'test_prompt_with_arguments', 'test_prompt_with_image']) assert.ok(prompts.has(name), name);
      assert.deepEqual(prompts.get('test_prompt_with_arguments').arguments.map((a) => [a.name, a.required]), [['arg1', true], ['arg2', true]]);
      const got = await client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'hello', arg2: 'world' } });
      assert.equal(got.messages[0].content.text, "Prompt with arguments: arg1='hello', arg2='world'");
      const embedded = await client.getPrompt({ name: 'test_prompt_with_embedded_resource', arguments: { resourceUri: 'test://x' } });
      assert.equal(embedded.messages[0].content.resource.uri, 'test://x');
      await assert.rejects(
        client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'only one' } }),
        (e) => e.code === -32602,
      );
      const argument = await client.complete({ ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' }, argument: { name: 'arg1', value: 'pa' } });
      assert.deepEqual(argument.completion.values, ['paris', 'park']);
      const variable = await client.complete({ ref: { type: 'ref/resource', uri: 'test://template/{id}/data' }, argument: { name: 'id', value: '4' } });
      assert.deepEqual(variable.completion.values, ['456']);
    } finally {
      await client.close();
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
    const { id, uri } = await waitingTask();
    const updated = heard(client, 'notifications/resources/updated', (p) => p.uri === uri);
    await client.subscribeResource({ uri });
    await a2aSend('done', id);
    assert.equal((await updated).uri, uri);
    await client.unsubscribeResource({ uri });
  } finally {
    await client.close();
  }
});

test('2026-07-28: listen hears a subscribed task resource change over A2A, and not a URI it may not read', async () => {
  const client = await connect('2026-07-28');
  try {
    assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
    const { id, uri } = await waitingTask();
    const subscription = await client.listen({ resourceSubscriptions: [uri, 'test://watched-resource', 'test://nobody'] });
    try {
      assert.deepEqual(subscription.honoredFilter, { resourceSubscriptions: [uri, 'test://watched-resource'] });
      const updated = heard(client, 'notifications/resources/updated', (p) => p.uri === uri);
      await a2aSend('done', id);
      assert.equal((await updated).uri, uri);
    } finally {
      await subscription.close();
    }
    assert.equal(await subscription.closed, 'local');
    // resources/subscribe is not a 2026-07-28 method: the client refuses it without a request.
    await assert.rejects(client.subscribeResource({ uri }));
  } finally {
    await client.close();
  }
});

test('2026-07-28: listen hears the tools\' and prompts\' lists change', async () => {
  // The demo's hooks reload this server's definitions, adding then removing a tool or a prompt.
  const client = await connect('2026-07-28');
  try {
    const subscription = await client.listen({ toolsListChanged: true, promptsListChanged: true });
    try {
      assert.deepEqual(subscription.honoredFilter, { toolsListChanged: true, promptsListChanged: true });
      for (const [hook, kind, list, name] of [
        ['test_trigger_tool_change', 'tools', () => client.listTools(), 'test_dynamic_tool'],
        ['test_trigger_prompt_change', 'prompts', () => client.listPrompts(), 'test_dynamic_prompt'],
      ]) {
        const listed = async () => (await list())[kind].some((item) => item.name === name);
        const before = await listed();
        // Toggled, then toggled back: each time the list changes and the client hears it (it
        // drops its cached list on the notification, so `listed` lists afresh).
        for (const expected of [!before, before]) {
          const changed = heard(client, `notifications/${kind}/list_changed`);
          assert.notEqual((await client.callTool({ name: hook, arguments: {} })).isError, true);
          await changed;
          assert.equal(await listed(), expected, name);
        }
      }
    } finally {
      await subscription.close();
    }
  } finally {
    await client.close();
  }
});

// A demo A2A task waiting for input, sent to the server of `base` (default `url`): its A2A
// id and its resource URI.
async function waitingTask(base = url) {
  const { task } = (await a2aSend('input', undefined, base)).result;
  assert.equal(task.status.state, 'TASK_STATE_INPUT_REQUIRED');
  return { id: task.id, uri: `agentlog://tasks/demo%3A${task.id}` };
}

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
  const client = await connect('legacy', replicaA);
  try {
    const { id, uri } = await waitingTask(replicaA);
    const updated = heard(client, 'notifications/resources/updated', (p) => p.uri === uri);
    await client.subscribeResource({ uri });
    await a2aSend('done', id, replicaB);
    assert.equal((await updated).uri, uri);
  } finally {
    await client.close();
  }
});

test('two replicas, 2026-07-28: listen through one hears of a change made through the other', twoReplicas, async () => {
  // The task is created through replica A and answered through replica B, then another task is
  // made through replica B; the listen stream is held by replica A, whose view hears of B's
  // records from the log.
  const client = await connect('2026-07-28', replicaA);
  try {
    const { id, uri } = await waitingTask(replicaA);
    const subscription = await client.listen({ resourceSubscriptions: [uri], resourcesListChanged: true });
    try {
      assert.deepEqual(subscription.honoredFilter, { resourcesListChanged: true, resourceSubscriptions: [uri] });
      const updated = heard(client, 'notifications/resources/updated', (p) => p.uri === uri);
      await a2aSend('done', id, replicaB);
      assert.equal((await updated).uri, uri);
      const listChanged = heard(client, 'notifications/resources/list_changed');
      const made = await waitingTask(replicaB);
      await listChanged;
      // The client dropped its cached list on the notification: replica A lists the new task.
      const { resources } = await client.listResources();
      assert.ok(resources.some((r) => r.uri === made.uri), made.uri);
    } finally {
      await subscription.close();
    }
  } finally {
    await client.close();
  }
});
