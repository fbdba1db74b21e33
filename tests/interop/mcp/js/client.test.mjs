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
  });
}
