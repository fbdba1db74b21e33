// The official MCP TypeScript client (@modelcontextprotocol/client 2.4.0) against
// `agentlog serve --demo`'s /mcp: its default legacy handshake and negotiated (auto) mode.
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
