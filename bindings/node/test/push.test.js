// verifyNotification against notifications a real sender sent: `agentlog serve --demo`
// (AGENTLOG_BIN, which scripts/test.sh sets; else built with scripts/agentlog-bin.sh) POSTs
// every update of a task to a receiver in this process, and each one's JWT verifies against the
// keys the server publishes at /.well-known/jwks.json; tampered ones are refused.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const path = require('node:path');
const readline = require('node:readline');
const { spawn, spawnSync } = require('node:child_process');
const { verifyNotification, AgentlogError } = require('..');

const ROOT = path.join(__dirname, '..', '..', '..');
const SIGNATURE = 'agentlog-notification-signature';

function agentlogBin() {
  if (process.env.AGENTLOG_BIN) return process.env.AGENTLOG_BIN;
  const built = spawnSync(
    path.join(ROOT, 'scripts', 'agentlog-bin.sh'),
    ['build', '-p', 'agentlog-server', '--bin', 'agentlog', '--locked'],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
  );
  assert.equal(built.status, 0, 'building agentlog');
  return built.stdout.trim();
}

async function post(url, method, params) {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
  const reply = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return reply.json();
}

test('a real sender\'s notifications verify and tampered ones do not', async () => {
  const got = [];
  const receiver = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      got.push({ headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(200, { 'content-length': 0 }).end();
    });
  });
  await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const hook = `http://127.0.0.1:${receiver.address().port}/hook`;
  const agent = spawn(
    agentlogBin(),
    ['serve', '--demo', '--listen', '127.0.0.1:0', '--log', 'memory://', '--push-allow-private'],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  try {
    const banner = await new Promise((resolve) => readline.createInterface({ input: agent.stdout }).once('line', resolve));
    const url = banner.split(' ').find((w) => w.startsWith('http://'));
    const answer = await post(url, 'SendMessage', {
      message: { messageId: 'js-push-1', role: 'ROLE_USER', parts: [{ text: 'hi' }] },
      configuration: {
        returnImmediately: true,
        taskPushNotificationConfig: { url: hook, authentication: { scheme: 'Bearer', credentials: 's3cret' } },
      },
    });
    const task = answer.result.task.id;
    const deadline = Date.now() + 20000;
    while (got.length < 6 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.equal(got.length, 6);
    const jwks = await (await fetch(`${url}.well-known/jwks.json`)).json();
    const kinds = got.map(({ body }) => Object.keys(JSON.parse(body))[0]);
    assert.deepEqual(kinds, ['task', 'statusUpdate', 'artifactUpdate', 'artifactUpdate', 'artifactUpdate', 'task']);
    for (const { headers, body } of got) {
      assert.equal(headers.authorization, 'Bearer s3cret');
      const claims = verifyNotification(headers[SIGNATURE], body, jwks, { audience: hook, issuer: url });
      assert.equal(claims.taskId, task);
      assert.equal(claims.exp - claims.iat, 300);
    }
    const { headers, body } = got[0];
    const jwt = headers[SIGNATURE];
    assert.equal(verifyNotification(jwt, body, JSON.stringify(jwks), { audience: hook }).taskId, task);
    const claims = verifyNotification(jwt, body, jwks, { audience: hook });
    const refusals = [
      [jwt, Buffer.concat([body, Buffer.from(' ')]), { audience: hook }],
      [jwt, body, { audience: 'http://127.0.0.1:1/other' }],
      [jwt, body, { audience: hook, issuer: 'https://someone.else/' }],
      [jwt, body, { audience: hook, now: claims.exp + 3600 }],
      [jwt.slice(0, -4) + 'AAAA', body, { audience: hook }],
    ];
    for (const [token, sent, expect] of refusals) {
      assert.throws(
        () => verifyNotification(token, sent, jwks, expect),
        (e) => e instanceof AgentlogError && e.kind === 'unauthenticated',
      );
    }
  } finally {
    agent.kill();
    receiver.close();
  }
});
