// Opens a log, a bridge, a worker and a server, sends one message, prints the answer and
// ends without closing anything: the process must exit by itself (test/exit.test.js).
'use strict';

const { openLog, Bridge, Worker, serve } = require('../..');

(async () => {
  const log = await openLog(process.argv[2] || 'memory://');
  const bridge = await Bridge.open(log, 'exit-test');
  await Worker.start(log, 'exit-test', async (task) => task.complete(`done: ${task.text}`), { bridge });
  const server = await serve(bridge, { listen: '127.0.0.1:0' });
  const { task } = await bridge.sendMessage({ message: { messageId: `m-${process.pid}`, role: 'ROLE_USER', parts: [{ text: 'bye' }] } });
  console.log(task.status.state, server.url);
})();
