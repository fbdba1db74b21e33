// The Node binding's HTTP benchmark: blocking SendMessage (JSON-RPC over HTTP/1.1 keep-alive)
// at 1 and 32 connections, side by side in one run, one load generator for every server:
// wrk -t1 with bindings/benches/send_message.lua (the Python bench's, so both binding benches
// load servers alike and the generator is a small C process), or autocannon in this process
// with BENCH_LOADGEN=autocannon (a JavaScript generator takes a core's share from the servers):
//
//   agentlog-js       serve() from Node with a trivial JS handler (one complete)
//   agentlog-js-demo  serve() from Node with a JS handler doing the Rust demo's echo work
//   rust-demo         `agentlog serve --demo` (the Rust demo handler: three artifact chunks,
//                     then complete)
//   a2a-js            an echo agent on the official @a2a-js/sdk server (express)
//
// Every server runs in its own process (servers.mjs / the agentlog binary), all started
// before the first round; each round runs every case once, in a rotating order; figures are
// medians over rounds with their range. Every request has a fresh messageId (a repeated one
// would be answered from the log without running the handler).
//
// Build first (release): `AGENTLOG_NODE_PROFILE=release node ../scripts/build.js` and
// `cargo build --release -p agentlog --bin agentlog`; then `npm ci && node http.mjs`.
// BENCH_ROUNDS (default 5), BENCH_SECONDS per case (default 5), AGENTLOG_BIN (default
// <target>/release/agentlog), BENCH_LOADGEN (wrk, the default, or autocannon).
import { spawn, spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import autocannon from 'autocannon';

const here = path.dirname(fileURLToPath(import.meta.url));
const ROUNDS = Number(process.env.BENCH_ROUNDS || 5);
const SECONDS = Number(process.env.BENCH_SECONDS || 5);
const CONNECTIONS = [1, 32];

function agentlogBinary() {
  if (process.env.AGENTLOG_BIN) return process.env.AGENTLOG_BIN;
  const metadata = spawnSync('cargo', ['metadata', '--format-version', '1', '--no-deps'], { cwd: here, encoding: 'utf8', maxBuffer: 1 << 26 });
  return path.join(JSON.parse(metadata.stdout).target_directory, 'release', 'agentlog');
}

const started = [];
process.once('exit', () => started.forEach((child) => child.kill('SIGTERM')));

function start(name, command, args, pattern) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: here, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const match = pattern.exec(out);
      if (match) resolve({ name, url: match[1], child });
    });
    child.once('error', (error) => reject(new Error(`${name}: cannot start ${command}: ${error.message}`)));
    child.once('exit', (code) => reject(new Error(`${name} exited (${code}) before it listened: ${out}`)));
    started.push(child);
  });
}

const body = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'SendMessage',
  params: { message: { messageId: '[<id>]', role: 'ROLE_USER', parts: [{ text: 'hello bench' }] } },
});

const LOADGEN = process.env.BENCH_LOADGEN || 'wrk';
const WRK_SCRIPT = path.join(here, '..', '..', 'benches', 'send_message.lua');

// wrk's duration ("1.23ms", "850.00us", "1.01s") in ms.
function wrkMs(text) {
  // wrk picks the unit: us, ms, s, or m (minutes).
  const match = /([\d.]+)(us|ms|s|m)/.exec(text);
  if (!match) return NaN;
  return Number(match[1]) * { us: 0.001, ms: 1, s: 1000, m: 60000 }[match[2]];
}

// One wrk run in the shape the report reads from autocannon's result.
function loadWrk(url, connections, seconds) {
  const prefix = `${Date.now()}-${Math.random().toString(36).slice(2)}`;
  const run = spawnSync('wrk', ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '-s', WRK_SCRIPT, url, '--', prefix], { encoding: 'utf8' });
  if (run.error) throw new Error(`cannot run wrk (apt-get install wrk, or BENCH_LOADGEN=autocannon): ${run.error.message}`);
  const out = run.stdout;
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
  const bad = Number(/not completed: (\d+)/.exec(out)?.[1] ?? NaN);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  if (!Number.isFinite(rps) || !Number.isFinite(bad)) throw new Error(`unexpected wrk output:\n${out}${run.stderr}`);
  const total = Math.round(rps * seconds);
  const errors = socket ? socket.slice(1).reduce((a, n) => a + Number(n), 0) : 0;
  return {
    '2xx': total - bad,
    requests: { total },
    non2xx,
    errors: errors + bad - non2xx,
    timeouts: 0,
    latency: { p50: wrkMs(/50%\s+(\S+)/.exec(out)?.[1] ?? ''), p99: wrkMs(/99%\s+(\S+)/.exec(out)?.[1] ?? '') },
  };
}

function load(url, connections, seconds) {
  if (LOADGEN === 'wrk') return Promise.resolve(loadWrk(url, connections, seconds));
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
        body,
        idReplacement: true,
        connections,
        duration: seconds,
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
  });
}

async function check(server) {
  const reply = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
    body: body.replace('[<id>]', `check-${Date.now()}`),
  });
  const json = await reply.json();
  const state = json.result?.task?.status?.state;
  if (state !== 'TASK_STATE_COMPLETED') throw new Error(`${server.name} answered ${JSON.stringify(json).slice(0, 300)}`);
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const fmt = (x) => Math.round(x).toLocaleString('en-US');

const servers = await Promise.all([
  start('agentlog-js', process.execPath, ['servers.mjs', 'agentlog-js'], /listening (\S+)/),
  start('agentlog-js-demo', process.execPath, ['servers.mjs', 'agentlog-js-demo'], /listening (\S+)/),
  start('rust-demo', agentlogBinary(), ['serve', '--demo', '--listen', '127.0.0.1:0', '--log', 'memory://', '--max-connections', '1024'], /at (http:\/\/\S+)/),
  start('a2a-js', process.execPath, ['servers.mjs', 'a2a-js'], /listening (\S+)/),
]);
try {
  for (const server of servers) await check(server);
  console.log(`# ${os.cpus().length} CPUs (${os.cpus()[0].model}), node ${process.version}, ${ROUNDS} rounds x ${SECONDS} s per case, load generator ${LOADGEN}`);
  for (const server of servers) await load(server.url, 32, 1); // warm-up
  const results = new Map(); // `${name}@${connections}` -> [{rps, p50, p99, errors}]
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const connections of CONNECTIONS) {
      const order = servers.map((_, i) => servers[(i + round) % servers.length]);
      for (const server of order) {
        const r = await load(server.url, connections, SECONDS);
        const ok = r.requests.total - r.non2xx - r.errors;
        const row = { rps: r['2xx'] / SECONDS, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.non2xx + r.timeouts, ok };
        const key = `${server.name}@${connections}`;
        results.set(key, [...(results.get(key) || []), row]);
        console.log(`round ${round + 1} ${key}: ${fmt(row.rps)} req/s, p50 ${row.p50} ms, p99 ${row.p99} ms, errors ${row.errors}`);
      }
    }
  }
  console.log('\n| server | connections | req/s (median) | range | p50 ms | p99 ms | errors |');
  console.log('| --- | --- | --- | --- | --- | --- | --- |');
  for (const connections of CONNECTIONS) {
    for (const server of servers) {
      const rows = results.get(`${server.name}@${connections}`);
      const rps = rows.map((r) => r.rps);
      console.log(`| ${server.name} | ${connections} | ${fmt(median(rps))} | ${fmt(Math.min(...rps))}–${fmt(Math.max(...rps))} | ${median(rows.map((r) => r.p50))} | ${median(rows.map((r) => r.p99))} | ${rows.reduce((a, r) => a + r.errors, 0)} |`);
    }
  }
  // Ratios per round (each round's cases ran close together), then their median and range.
  const ratio = (a, b, connections) => {
    const xs = results.get(`${a}@${connections}`).map((r, i) => r.rps / results.get(`${b}@${connections}`)[i].rps);
    return `${median(xs).toFixed(2)} (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`;
  };
  console.log('\n| ratio | 1 connection | 32 connections |');
  console.log('| --- | --- | --- |');
  for (const [a, b, what] of [
    ['agentlog-js', 'a2a-js', 'agentlog, trivial JS handler / @a2a-js/sdk echo server (target ≥ 5 at 32)'],
    ['agentlog-js', 'rust-demo', 'trivial JS handler / Rust demo handler (target ≥ 0.5)'],
    ['agentlog-js-demo', 'rust-demo', 'JS handler doing the demo\'s work / Rust demo handler'],
  ]) {
    console.log(`| ${what} | ${ratio(a, b, 1)} | ${ratio(a, b, 32)} |`);
  }
} finally {
  for (const server of servers) server.child.kill('SIGTERM');
}
