// One server of the benchmark, in its own process: `node servers.mjs <kind>` prints
// `listening <url>` once it answers, and stops on SIGTERM.
//
//   agentlog-js       serve() from Node, memory:// log, a trivial JS handler (one complete)
//   agentlog-js-demo  the same with a JS handler doing what the Rust demo's echo does
//                     (three artifact chunks, then complete): the cost of crossing into JS
//                     with the work held equal
//   a2a-js            an echo agent on the official @a2a-js/sdk server (express, JSON-RPC,
//                     in-memory task store): task, completed with the echo
import { randomUUID } from 'node:crypto';

const kind = process.argv[2];

async function agentlog(handler) {
  const { Bridge, Worker, openLog, serve } = await import('../index.mjs');
  const log = await openLog('memory://');
  const bridge = await Bridge.open(log, 'bench');
  const worker = await Worker.start(log, 'bench', handler, { bridge, concurrency: 256 });
  const server = await serve(bridge, { listen: '127.0.0.1:0', maxConnections: 1024 });
  process.once('SIGTERM', () => void (async () => {
    await server.close();
    await worker.close();
    await log.close();
  })());
  console.log(`listening ${server.url}`);
  await server.closed;
}

async function a2aJs() {
  const { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } = await import('@a2a-js/sdk/server');
  const { agentCardHandler, jsonRpcHandler, UserBuilder } = await import('@a2a-js/sdk/server/express');
  const { Role, TaskState } = await import('@a2a-js/sdk');
  const express = (await import('express')).default;
  const text = (value) => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' });
  const executor = {
    cancelTask: async () => {},
    async execute(context, bus) {
      const { taskId, contextId, userMessage } = context;
      const said = userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
      bus.publish(AgentEvent.task({
        id: taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_SUBMITTED, timestamp: new Date().toISOString(), message: undefined },
        artifacts: [],
        history: [userMessage],
        metadata: undefined,
      }));
      bus.publish(AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: {
          state: TaskState.TASK_STATE_COMPLETED,
          timestamp: new Date().toISOString(),
          message: {
            role: Role.ROLE_AGENT, messageId: randomUUID(), parts: [text(`echo: ${said}`)], taskId, contextId,
            extensions: [], metadata: undefined, referenceTaskIds: [],
          },
        },
        metadata: undefined,
      }));
      bus.finished();
    },
  };
  const app = express();
  const http = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const url = `http://127.0.0.1:${http.address().port}/`;
  const card = {
    name: 'bench', description: 'echo', version: '1.0.0',
    supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' }],
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {}, securityRequirements: [], defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'],
    skills: [{ id: 'echo', name: 'echo', description: 'echo', tags: ['echo'], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: [],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  app.use('/', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  process.once('SIGTERM', () => http.close(() => process.exit(0)));
  console.log(`listening ${url}`);
}

if (kind === 'agentlog-js') {
  await agentlog(async (task) => task.complete(`echo: ${task.text}`));
} else if (kind === 'agentlog-js-demo') {
  await agentlog(async (task) => {
    const answer = `echo: ${task.text}`;
    const size = Math.ceil(answer.length / 3);
    const chunks = [answer.slice(0, size), answer.slice(size, 2 * size), answer.slice(2 * size)];
    for (const [i, chunk] of chunks.entries()) {
      await task.artifact({ artifactId: 'echo', name: 'echo', parts: [{ text: chunk }] }, { append: i > 0, lastChunk: i === 2 });
    }
    await task.complete();
  });
} else if (kind === 'a2a-js') {
  await a2aJs();
} else {
  console.error(`unknown server kind ${kind}: agentlog-js, agentlog-js-demo or a2a-js`);
  process.exit(2);
}
