#!/usr/bin/env node
// Writes index.d.ts: types/header.d.ts, then the declarations napi-rs derived from the Rust
// code while scripts/build.js compiled it (target/napi-type-def), then types/footer.d.ts.
// `--check`: fail if the committed index.d.ts differs from what would be written (CI).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { generateTypeDef } from '@napi-rs/cli';

const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const metadata = spawnSync(process.env.CARGO || 'cargo', ['metadata', '--format-version', '1', '--no-deps'], {
  cwd: here,
  encoding: 'utf8',
  maxBuffer: 64 * 1024 * 1024,
});
if (metadata.status !== 0) throw new Error(`cargo metadata failed: ${metadata.stderr}`);
const typeDefDir = path.join(JSON.parse(metadata.stdout).target_directory, 'napi-type-def');
if (!fs.existsSync(path.join(typeDefDir, 'agentlog-node'))) {
  console.error(`no type definitions in ${typeDefDir}: build the addon first (node scripts/build.js)`);
  process.exit(1);
}
const { dts } = await generateTypeDef({ typeDefDir, cwd: here, noDtsHeader: true });
const read = (name) => fs.readFileSync(path.join(here, name), 'utf8');
const wanted = `${read('types/header.d.ts')}${dts.trim()}\n${read('types/footer.d.ts')}`;
const target = path.join(here, 'index.d.ts');
if (process.argv.includes('--check')) {
  const committed = fs.existsSync(target) ? fs.readFileSync(target, 'utf8') : '';
  if (committed !== wanted) {
    fs.writeFileSync(`${target}.generated`, wanted);
    console.error(
      'index.d.ts is not what the Rust code generates now: run `npm run dts` in bindings/node and commit ' +
        `it (the fresh one is in ${target}.generated; diff them to see what changed)`,
    );
    process.exit(1);
  }
  console.log('index.d.ts matches the Rust code');
} else {
  fs.writeFileSync(target, wanted);
  console.log(`wrote ${target}`);
}
