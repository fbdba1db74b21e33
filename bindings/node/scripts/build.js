#!/usr/bin/env node
// Builds the native addon from source: `cargo build -p agentlog-node`, then copies the cdylib
// to agentlog.node beside index.js. npm runs it as the package's `install` script.
//
// Node built-ins only: npm runs this script even where it installed none of the package's
// dependencies (`npm install /path/to/bindings/node` from another project).
//
// Environment:
//   AGENTLOG_NODE_PROFILE  cargo profile: `release` (default) or `dev` (what the tests use:
//                          it shares the compiled SDK with `cargo test`).
//   CARGO_TARGET_DIR       honoured by cargo as always; the addon is taken from cargo's own
//                          report of what it built.
//   AGENTLOG_NODE_SKIP_BUILD=1  do nothing (an addon built some other way is in place).
'use strict';

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const here = path.resolve(__dirname, '..');
const out = path.join(here, 'agentlog.node');

function fail(message) {
  process.stderr.write(
    `\nagentlog: the native addon could not be built: ${message}\n` +
      'agentlog is built from source with the Rust toolchain (cargo, Rust >= 1.95): install it\n' +
      'from https://rustup.rs (or your package manager), make sure `cargo` is on PATH, then run\n' +
      '`npm rebuild agentlog` (or `node scripts/build.js` in bindings/node). The first build\n' +
      'compiles the whole SDK and takes 15-20 minutes on two cores.\n\n',
  );
  process.exit(1);
}

function main() {
  if (process.env.AGENTLOG_NODE_SKIP_BUILD === '1') return;
  const cargo = process.env.CARGO || 'cargo';
  const profile = process.env.AGENTLOG_NODE_PROFILE || 'release';
  const metadata = spawnSync(cargo, ['metadata', '--format-version', '1', '--no-deps'], {
    cwd: here,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (metadata.error) fail(`cannot run ${cargo}: ${metadata.error.message}`);
  if (metadata.status !== 0) fail(`cargo metadata failed:\n${metadata.stderr}`);
  const targetDir = JSON.parse(metadata.stdout).target_directory;
  // napi-derive writes the TypeScript declarations it derives here while compiling (read by
  // scripts/dts.mjs). The same value on every build, so it never forces a rebuild.
  const typeDefDir = path.join(targetDir, 'napi-type-def');
  fs.mkdirSync(typeDefDir, { recursive: true });

  const args = ['build', '-p', 'agentlog-node', '--locked', '--message-format=json-render-diagnostics'];
  args.push('--profile', profile);
  process.stderr.write(`agentlog: cargo ${args.join(' ')}\n`);
  const build = spawnSync(cargo, args, {
    cwd: here,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 256 * 1024 * 1024,
    env: { ...process.env, NAPI_TYPE_DEF_TMP_FOLDER: typeDefDir },
  });
  if (build.error) fail(`cannot run ${cargo}: ${build.error.message}`);
  if (build.status !== 0) fail(`cargo build exited with ${build.status} (its errors are above)`);
  let library = null;
  for (const line of build.stdout.split('\n')) {
    if (!line.startsWith('{')) continue;
    const message = JSON.parse(line);
    if (message.reason !== 'compiler-artifact' || message.target.name !== 'agentlog_node') continue;
    library = message.filenames.find((f) => /\.(so|dylib|dll)$/.test(f)) || library;
  }
  if (!library) fail('cargo reported no cdylib for agentlog-node');
  // Copy to a temporary name and rename: a process that has the old addon loaded keeps it.
  const tmp = `${out}.${process.pid}.tmp`;
  fs.copyFileSync(library, tmp);
  if (profile === 'release') {
    // The workspace's release profile keeps line tables (~130 MB here); the installed addon
    // needs none of it (~15 MB stripped). Without a `strip` on PATH it stays as it is.
    const strip = spawnSync(process.env.STRIP || 'strip', ['--strip-unneeded', tmp], { stdio: 'ignore' });
    if (strip.status !== 0) process.stderr.write('agentlog: `strip` not available: the addon keeps its debug info\n');
  }
  fs.renameSync(tmp, out);
  process.stderr.write(`agentlog: built ${out} (${profile})\n`);
}

main();
