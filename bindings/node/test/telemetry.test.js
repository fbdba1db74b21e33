// A Node program exports its spans over OTLP when the standard variables say so, through the
// SDK's own export (started when the addon loads, flushed on exit). The spans' protobuf is
// decoded by the Python binding's test (bindings/python/tests/test_telemetry.py); here the
// receiver checks what only an export of this trace holds: the trace id's 16 bytes and the
// caller's span id's 8, raw in the protobuf, with the names of the request and turn spans.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const crypto = require('node:crypto');
const path = require('node:path');
const { spawn } = require('node:child_process');

function receiver() {
  const bodies = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const ok = req.url === '/v1/traces' && req.headers['content-type'] === 'application/x-protobuf';
      if (ok) bodies.push(Buffer.concat(chunks));
      res.writeHead(ok ? 200 : 415, { 'Content-Type': 'application/x-protobuf' }).end();
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, bodies })));
}

function run(env, traceparent) {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OTEL_')));
  const child = spawn(process.execPath, [path.join(__dirname, 'scripts', 'traced.js'), traceparent],
    { env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => { stdout += d; });
  child.stderr.on('data', (d) => { stderr += d; });
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

test('the request and turn spans are exported, the rest at exit', { timeout: 60000 }, async () => {
  const { server, bodies } = await receiver();
  try {
    const traceId = crypto.randomBytes(16);
    const parentId = crypto.randomBytes(8);
    // A batch delay longer than the program runs: what arrives was sent by the exit hook.
    const done = await run({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${server.address().port}`,
      OTEL_SERVICE_NAME: 'node-worker', OTEL_BSP_SCHEDULE_DELAY: '600000' },
    `00-${traceId.toString('hex')}-${parentId.toString('hex')}-01`);
    assert.equal(done.code, 0, done.stderr);
    assert.equal(done.stdout.trim(), 'TASK_STATE_COMPLETED');
    const all = Buffer.concat(bodies);
    assert.ok(all.includes(traceId), 'the trace is exported');
    assert.ok(all.includes(parentId), "the request span's parent is the caller's span");
    for (const name of ['SendMessage', 'turn', 'node-worker']) assert.ok(all.includes(name), name);
  } finally {
    server.close();
  }
});

test('an environment asking for another protocol is a warning, and nothing is exported', { timeout: 60000 }, async () => {
  const { server, bodies } = await receiver();
  try {
    const done = await run({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${server.address().port}`,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, `00-${crypto.randomBytes(16).toString('hex')}-${crypto.randomBytes(8).toString('hex')}-01`);
    assert.equal(done.code, 0, done.stderr);
    assert.equal(done.stdout.trim(), 'TASK_STATE_COMPLETED');
    assert.match(done.stderr, /agentlog: not exporting traces: OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported/);
    assert.equal(bodies.length, 0);
  } finally {
    server.close();
  }
});
