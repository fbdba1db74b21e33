// An agent in TypeScript: a worker whose handler is a TS function, served over HTTP (A2A
// JSON-RPC) until Ctrl-C. Type-checked with `tsc --strict` by run-tests.sh.
import { Bridge, Worker, openLog, serve, type TaskContext } from 'agentlog';

async function handle(task: TaskContext): Promise<void> {
  if (task.text === 'slow') {
    await task.working('thinking it over');
    // Stop promptly when the client cancels.
    await Promise.race([new Promise((r) => setTimeout(r, 5000)), task.waitCancelled()]);
    if (task.signal.aborted) return;
  }
  if (task.text === 'name?') {
    await task.inputRequired('What is your name?');
    return;
  }
  await task.artifact({ artifactId: 'echo', name: 'echo', parts: [{ text: task.text }] }, { lastChunk: true });
  await task.complete(`you said: ${task.text}`);
}

const log = await openLog(process.env.AGENTLOG_LOG ?? 'file://./agentlog-data');
const bridge = await Bridge.open(log, 'echo', {
  card: { description: 'Echoes what you say', skills: [{ id: 'echo', name: 'Echo', description: 'Echoes', tags: ['echo'] }] },
});
const worker = await Worker.start(log, 'echo', handle, { bridge, concurrency: 32 });
const server = await serve(bridge, { listen: process.env.LISTEN ?? '127.0.0.1:8080' });
console.log(`serving agent "echo" at ${server.url} (card: ${server.url}.well-known/agent-card.json)`);

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
