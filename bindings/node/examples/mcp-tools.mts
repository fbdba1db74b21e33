// MCP tools in TypeScript: an McpBridge, a worker of TS tool handlers, and the HTTP server
// serving /mcp beside an A2A agent, until Ctrl-C. Type-checked with `tsc --strict` by
// run-tests.sh, and run by test/examples.test.js.
import { Bridge, McpBridge, Worker, openLog, serve, type CallToolResult, type Tool, type ToolCall } from 'agentlog';

const AGENT = 'mcp.examples';
const numbers = { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] };
const tools: Tool[] = [
  { name: 'greet', description: 'Says hello', inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] }, agent: AGENT },
  { name: 'add', description: 'a + b', inputSchema: numbers, agent: AGENT },
  { name: 'divide', description: 'a / b', inputSchema: numbers, agent: AGENT },
];

async function greet(call: ToolCall): Promise<CallToolResult> {
  await call.task.report(1, 2, 'looking them up');
  await call.task.report(2, 2);
  return { content: [{ type: 'text', text: `Hello, ${String(call.arguments.name)}!` }] };
}

function add(call: ToolCall): CallToolResult {
  const sum = Number(call.arguments.a) + Number(call.arguments.b);
  return { content: [{ type: 'text', text: String(sum) }], structuredContent: { sum } };
}

async function divide(call: ToolCall): Promise<CallToolResult> {
  const [a, b] = [Number(call.arguments.a), Number(call.arguments.b)];
  // A tool failure the model reads (throwing would be a protocol error instead).
  if (b === 0) return { content: [{ type: 'text', text: 'cannot divide by zero' }], isError: true };
  return { content: [{ type: 'text', text: String(a / b) }] };
}

const log = await openLog(process.env.AGENTLOG_LOG ?? 'file://./agentlog-data');
const bridge = await Bridge.open(log, 'tools-host');
const mcp = await McpBridge.open(log, tools, { name: 'ts-tools' });
const worker = await Worker.start(log, AGENT, { tools: { greet, add, divide }, bridge: mcp });
const server = await serve(bridge, { listen: process.env.LISTEN ?? '127.0.0.1:8080', mcp });
console.log(`serving MCP tools at ${server.mcpUrl} (log: ${log.url})`);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void (async () => {
      await server.close();
      await worker.close();
      await log.close();
    })();
  });
}
await server.closed;
