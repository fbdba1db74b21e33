// The TypeScript examples, as tsc compiled them (run-tests.sh runs `tsc --strict` first,
// into .examples-build/): the publisher runs to the end; the worker-server serves the card
// and exits 0 on SIGTERM; mcp-tools answers tool calls on /mcp, then exits 0 on SIGTERM.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');

const built = path.join(__dirname, '..', '.examples-build', 'examples');

function compiled(name) {
  const file = path.join(built, name);
  assert.ok(fs.existsSync(file), `${file} is missing: run-tests.sh compiles the examples (tsc) before the tests`);
  return file;
}

test('examples/publisher.mts runs', { timeout: 30000 }, () => {
  const run = spawnSync(process.execPath, [compiled('publisher.mjs')], { encoding: 'utf8', timeout: 20000 });
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /TASK_STATE_COMPLETED/);
  assert.match(run.stdout, /\(last\)/);
  assert.match(run.stdout, /task_not_found -32001 false/);
});

test('examples/worker-server.mts serves until SIGTERM', { timeout: 30000 }, async () => {
  const child = spawn(process.execPath, [compiled('worker-server.mjs')], {
    env: { ...process.env, AGENTLOG_LOG: 'memory://', LISTEN: '127.0.0.1:0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { err += d; });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  let url;
  for (let i = 0; !url; i += 1) {
    assert.ok(i < 500 && child.exitCode === null, `no URL printed: ${out} ${err}`);
    url = /at (http:\/\/\S+\/) /.exec(out)?.[1];
    await new Promise((r) => setTimeout(r, 20));
  }
  const card = await (await fetch(`${url}.well-known/agent-card.json`)).json();
  assert.equal(card.name, 'echo');
  assert.equal(card.skills[0].id, 'echo');
  const reply = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { messageId: 'e-1', role: 'ROLE_USER', parts: [{ text: 'hi' }] } } }),
  });
  const { result } = await reply.json();
  assert.equal(result.task.status.state, 'TASK_STATE_COMPLETED');
  child.kill('SIGTERM');
  const { code, signal } = await exited;
  assert.equal(signal, null, err);
  assert.equal(code, 0, err);
});

test('examples/mcp-tools.mts serves JS tools on /mcp until SIGTERM', { timeout: 30000 }, async () => {
  const child = spawn(process.execPath, [compiled('mcp-tools.mjs')], {
    env: { ...process.env, AGENTLOG_LOG: 'memory://', LISTEN: '127.0.0.1:0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { err += d; });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  let url;
  for (let i = 0; !url; i += 1) {
    assert.ok(i < 500 && child.exitCode === null, `no URL printed: ${out} ${err}`);
    url = /at (http:\/\/\S+\/mcp) /.exec(out)?.[1];
    await new Promise((r) => setTimeout(r, 20));
  }
  const call = async (name, args) => {
    const reply = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
    });
    assert.equal(reply.status, 200);
    return (await reply.json()).result;
  };
  assert.deepEqual((await call('add', { a: 2, b: 3.5 })).structuredContent, { sum: 5.5 });
  const divided = await call('divide', { a: 1, b: 0 });
  assert.equal(divided.isError, true);
  assert.equal(divided.content[0].text, 'cannot divide by zero');
  assert.equal((await call('greet', { name: 'Di' })).content[0].text, 'Hello, Di!');
  child.kill('SIGTERM');
  const { code, signal } = await exited;
  assert.equal(signal, null, err);
  assert.equal(code, 0, err);
});
