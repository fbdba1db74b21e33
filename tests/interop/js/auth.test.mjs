// Interop: the official A2A JS client (@a2a-js/sdk 1.3) passing a bearer token through its
// auth hook (an AuthenticationHandler wrapped by createAuthenticatingFetchWithRetry) to an
// `agentlog serve` that requires JWTs.
//
// The file starts its own server: `agentlog keygen` makes the issuer's key pair, `agentlog
// serve --jwt-*` trusts its public key, `agentlog token` mints each caller's token
// (AGENTLOG_BIN names the binary; run.sh exports it).

import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';

import { Role, TaskState, taskStateToJSON } from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
  createAuthenticatingFetchWithRetry,
} from '@a2a-js/sdk/client';
import { TaskNotFoundError } from '@a2a-js/sdk/errors';

const BIN = process.env.AGENTLOG_BIN;
const ISSUER = 'https://issuer.interop.example';
const AUDIENCE = 'interop-auth';
const TIMEOUT = { timeout: 30_000 };

let work;
let server;
let baseUrl;

const agentlog = (...args) => execFileSync(BIN, ['--color', 'never', ...args], { encoding: 'utf8' });

function token(subject, scope = 'tasks:send tasks:read tasks:cancel') {
  return agentlog(
    'token', '--key', join(work, 'issuer.key'), '--issuer', ISSUER, '--audience', AUDIENCE,
    '--subject', subject, '--scope', scope,
  ).trim();
}

before(async () => {
  assert.ok(BIN, 'AGENTLOG_BIN is not set: run these tests through tests/interop/run.sh');
  work = mkdtempSync(join(tmpdir(), 'agentlog-auth-'));
  agentlog('keygen', '--out', join(work, 'issuer.key'));
  server = spawn(BIN, [
    '--color', 'never', 'serve', '--demo', '--agent', 'secured', '--listen', '127.0.0.1:0',
    '--log', 'memory://', '--jwt-issuer', ISSUER, '--jwt-audience', AUDIENCE,
    '--jwt-key', join(work, 'issuer.key.pub'),
  ], { stdio: ['ignore', 'pipe', 'ignore'] });
  const lines = createInterface({ input: server.stdout });
  const banner = await new Promise((resolve, reject) => {
    lines.once('line', resolve);
    server.once('exit', (code) => reject(new Error(`agentlog serve exited (${code})`)));
  });
  const found = / at (http:\/\/\S+)/.exec(banner);
  assert.ok(found, `no URL in the banner: ${banner}`);
  baseUrl = found[1];
});

after(() => {
  server?.kill('SIGTERM');
  if (work) rmSync(work, { recursive: true, force: true });
});

/** A client whose every request carries `bearer` through the SDK's authentication hook. */
async function clientWith(bearer) {
  const handler = {
    headers: async () => ({ Authorization: `Bearer ${bearer}` }),
    shouldRetryWithHeaders: async () => undefined,
  };
  const fetchImpl = createAuthenticatingFetchWithRetry(fetch, handler);
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
    }),
  );
  return factory.createFromUrl(baseUrl);
}

function userMessage(text) {
  return {
    messageId: randomUUID(),
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text } }],
    contextId: '',
    taskId: '',
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

describe('@a2a-js/sdk client with a bearer token against an authenticated agentlog', () => {
  test('the public card declares bearer auth', TIMEOUT, async () => {
    const card = await (await fetch(`${baseUrl}.well-known/agent-card.json`)).json();
    assert.equal(card.securitySchemes.bearer.httpAuthSecurityScheme.scheme, 'Bearer');
  });

  test('without a token the call is refused', TIMEOUT, async () => {
    const client = await new ClientFactory().createFromUrl(baseUrl);
    await assert.rejects(client.sendMessage({ message: userMessage('hello') }), (err) => {
      assert.match(String(err?.message ?? err), /credentials|401/);
      return true;
    });
  });

  test('a bearer token through the auth hook is accepted', TIMEOUT, async () => {
    const client = await clientWith(token('alice'));
    const task = await client.sendMessage({ message: userMessage('hello') });
    assert.equal(taskStateToJSON(task.status.state), 'TASK_STATE_COMPLETED');
    const again = await client.getTask({ tenant: '', id: task.id });
    assert.equal(again.id, task.id);
    // Streams carry the token too.
    const events = [];
    for await (const event of client.sendMessageStream({ message: userMessage('streamed') })) {
      events.push(event);
    }
    assert.ok(events.length > 1, JSON.stringify(events));
  });

  test("another principal cannot see alice's task", TIMEOUT, async () => {
    const alice = await clientWith(token('alice'));
    const bob = await clientWith(token('bob'));
    const task = await alice.sendMessage({ message: userMessage('mine') });
    assert.equal(task.status.state, TaskState.TASK_STATE_COMPLETED);
    await assert.rejects(bob.getTask({ tenant: '', id: task.id }), (err) => {
      assert.ok(err instanceof TaskNotFoundError || err?.cause instanceof TaskNotFoundError, String(err));
      return true;
    });
  });

  test('a token without the send scope is refused', TIMEOUT, async () => {
    const reader = await clientWith(token('reader', 'tasks:read'));
    await assert.rejects(reader.sendMessage({ message: userMessage('hello') }), (err) => {
      assert.match(String(err?.message ?? err), /tasks:send|403/);
      return true;
    });
  });
});
