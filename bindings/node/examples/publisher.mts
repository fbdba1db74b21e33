// Publish tasks onto an agent's log and read the answers, in process: a blocking send, a
// streamed one, and the errors. Type-checked with `tsc --strict` by run-tests.sh.
import { randomUUID } from 'node:crypto';

import { AgentlogError, Bridge, Worker, openLog, type SendMessageRequest, type StreamEvent } from 'agentlog';

const request = (text: string): SendMessageRequest => ({
  message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] },
});

const log = await openLog('memory://');
const bridge = await Bridge.open(log, 'greeter');
const worker = await Worker.start(log, 'greeter', async (task) => {
  await task.complete(`hello, ${task.text}`);
}, { bridge });

const answer = await bridge.sendMessage(request('world'));
if (answer.task) console.log(answer.task.id, answer.task.status.state, answer.task.status.message?.parts);

const events: StreamEvent[] = [];
for await (const event of bridge.sendStreamingMessage(request('stream'))) events.push(event);
console.log(events.map((e) => `${e.position}${e.last ? ' (last)' : ''}: ${Object.keys(e.event)[0]}`));

const page = await bridge.listTasks({ pageSize: 10 });
console.log(`${page.totalSize} tasks`);

try {
  await bridge.getTask({ id: 'no-such-task' });
} catch (error) {
  if (error instanceof AgentlogError) console.log(error.kind, error.code, error.retryable);
}
await worker.close();
await log.close();
