// A script that ends without close() exits by itself, cleanly, every time; a worker process
// that awaits `worker.closed` stays up until it closes.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const { tempDir } = require('./helpers');

const script = (name) => path.join(__dirname, 'scripts', name);

test('a script that ends without close() exits within 5 s, 10 runs of each backend', { timeout: 120000 }, () => {
  const dir = tempDir();
  try {
    for (const [i, url] of [...Array(10).fill('memory://'), ...Array(10).fill(null)].entries()) {
      const log = url ?? `file://${path.join(dir, String(i))}`;
      const started = Date.now();
      const run = spawnSync(process.execPath, [script('no-close.js'), log], { encoding: 'utf8', timeout: 5000 });
      const took = Date.now() - started;
      assert.equal(run.error, undefined, `run ${i} (${log}) did not exit within 5 s: ${run.error}`);
      assert.equal(run.signal, null, `run ${i} (${log}) died of ${run.signal}: ${run.stderr}`);
      assert.equal(run.status, 0, `run ${i} (${log}) exited ${run.status}: ${run.stderr}`);
      assert.match(run.stdout, /^TASK_STATE_COMPLETED http:\/\/127\.0\.0\.1:\d+\/\n$/);
      assert.ok(took < 5000, `${took} ms`);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a worker process stays up on worker.closed until it closes', { timeout: 30000 }, async () => {
  const child = spawn(process.execPath, [script('stays-up.js')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  while (!out.includes('ready')) await new Promise((r) => setTimeout(r, 20));
  // Still up a second later: the pending `closed` Promise holds it.
  await new Promise((r) => setTimeout(r, 1000));
  assert.equal(child.exitCode, null, 'the worker process exited on its own');
  child.kill('SIGTERM');
  const { code, signal } = await exited;
  assert.equal(signal, null);
  assert.equal(code, 0);
  assert.match(out, /ready\nclosed\n/);
});
