// A worker process: stays up on `await worker.closed` until SIGTERM, then closes and exits.
'use strict';

const { openLog, Worker } = require('../..');

(async () => {
  const log = await openLog('memory://');
  const worker = await Worker.start(log, 'stays-up', async (task) => task.complete());
  process.once('SIGTERM', () => void worker.close());
  console.log('ready');
  await worker.closed;
  await log.close();
  console.log('closed');
})();
