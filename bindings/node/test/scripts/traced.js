// Serves a bridge with a worker, sends one message over HTTP with the traceparent in argv[2],
// prints the answer's state and ends without closing anything: with the OTEL_* variables set,
// the spans are exported at exit (test/telemetry.test.js).
'use strict';

const { openLog, Bridge, Worker, serve } = require('../..');

(async () => {
  const log = await openLog('memory://');
  const bridge = await Bridge.open(log, 'traced');
  await Worker.start(log, 'traced', async (task) => task.complete(task.spanContext ? 'traced' : 'untraced'), { bridge });
  const server = await serve(bridge, { listen: '127.0.0.1:0' });
  const reply = await fetch(server.url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', traceparent: process.argv[2] },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: {
      message: { messageId: `m-${process.pid}`, role: 'ROLE_USER', parts: [{ text: 'hi' }] } } }),
  });
  console.log((await reply.json()).result.task.status.state);
})();
