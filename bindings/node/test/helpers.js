// Shared by the tests: logs of every backend, a free port, an Iggy server when one is found.
'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const net = require('node:net');
const dgram = require('node:dgram');
const { spawn, spawnSync } = require('node:child_process');

let counter = 0;
/** A message id unique in this process. */
function messageId(prefix = 'm') {
  counter += 1;
  return `${prefix}-${process.pid}-${counter}-${Date.now()}`;
}

/** A SendMessageRequest with one text part. */
function send(text, extra = {}) {
  return { message: { messageId: messageId(), role: 'ROLE_USER', parts: [{ text }], ...extra } };
}

function tempDir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'agentlog-node-'));
}

function freeTcpPort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function freeUdpPort() {
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket('udp4');
    socket.once('error', reject);
    socket.bind(0, '127.0.0.1', () => {
      const { port } = socket.address();
      socket.close(() => resolve(port));
    });
  });
}

function iggyBinary() {
  if (process.env.AGENTLOG_IGGY_SERVER) return process.env.AGENTLOG_IGGY_SERVER;
  const found = spawnSync('sh', ['-c', 'command -v iggy-server'], { encoding: 'utf8' });
  return found.status === 0 ? found.stdout.trim() : null;
}

/**
 * An iggy-server on free loopback ports in a temporary directory, as the Rust harness
 * (tests/src/iggy_server.rs) starts it: `{url, stop()}`, or null (after printing SKIPPED)
 * when no binary is found.
 */
async function startIggy() {
  const binary = iggyBinary();
  if (!binary) {
    console.log('SKIPPED: iggy tests need an iggy-server binary (set AGENTLOG_IGGY_SERVER or put iggy-server on PATH)');
    return null;
  }
  const dir = tempDir();
  const [tcp, http, websocket, quic] = [await freeTcpPort(), await freeTcpPort(), await freeTcpPort(), await freeUdpPort()];
  const at = (port) => `127.0.0.1:${port}`;
  const log = fs.openSync(path.join(dir, 'server.log'), 'w');
  const child = spawn(binary, ['--with-default-root-credentials'], {
    cwd: dir,
    stdio: ['ignore', log, log],
    env: {
      ...process.env,
      IGGY_SYSTEM_PATH: path.join(dir, 'data'),
      IGGY_TCP_ADDRESS: at(tcp),
      IGGY_HTTP_ADDRESS: at(http),
      IGGY_QUIC_ADDRESS: at(quic),
      IGGY_WEBSOCKET_ADDRESS: at(websocket),
      IGGY_CONSUMER_GROUP_REBALANCING_TIMEOUT: '3s',
      IGGY_SYSTEM_SHARDING_PIN_CORES: 'false',
      IGGY_SYSTEM_MEMORY_POOL_SIZE: '512 MiB',
    },
  });
  const deadline = Date.now() + 20000;
  for (;;) {
    const open = await new Promise((resolve) => {
      const socket = net.connect(tcp, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) break;
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`iggy-server did not start: ${fs.readFileSync(path.join(dir, 'server.log'), 'utf8').slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `iggy://iggy:iggy@${at(tcp)}`,
    async stop() {
      child.kill('SIGTERM');
      await new Promise((resolve) => {
        if (child.exitCode !== null) resolve();
        else child.once('exit', resolve);
        setTimeout(() => child.kill('SIGKILL'), 10000).unref();
      });
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Wait until `check()` is truthy (polling), at most `ms`. */
async function until(check, ms = 10000, what = 'the condition') {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

module.exports = { messageId, send, tempDir, startIggy, until };
