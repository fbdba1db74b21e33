#!/usr/bin/env bash
# The Node binding's tests, as scripts/test.sh runs them (and CI with it). Self-contained and
# idempotent; run from anywhere:
#   1. `npm ci --ignore-scripts` into bindings/node/node_modules unless it matches
#      package-lock.json (a stamp holds the hash of both files and the Node version); the
#      package's own install script (a release build) is not wanted here;
#   2. builds the addon with the dev profile into the workspace's target directory
#      (CARGO_TARGET_DIR honoured), so it shares the compiled SDK with `cargo test`;
#   3. checks that the committed index.d.ts is what the Rust code generates now;
#   4. runs `node --test` over test/ and `tsc --strict` over the TypeScript examples.
# Needs Node >= 20.17, npm and the npm registry on the first run.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE"
START=$SECONDS
step() { printf '\n==> node binding: %s\n' "$*"; }
die() { printf '\nnode binding: FAILED: %s\n' "$*" >&2; exit 1; }

command -v node >/dev/null 2>&1 || die "node not found on PATH (Node >= 20.17 is needed)"
command -v npm >/dev/null 2>&1 || die "npm not found on PATH"
node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 17) ? 0 : 1)' ||
    die "node $(node --version) is too old: Node >= 20.17 is needed"

STAMP="$HERE/node_modules/.agentlog-stamp"
WANT="$(cat package.json package-lock.json | sha256sum | cut -d' ' -f1) node-$(node --version)"
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
    step "node_modules up to date"
else
    step "npm ci --ignore-scripts"
    npm ci --ignore-scripts --no-audit --no-fund --loglevel=error ||
        die "npm ci failed in $HERE: is the npm registry reachable (proxy, npm_config_registry)?"
    echo "$WANT" >"$STAMP"
fi

step "build the addon (dev profile)"
AGENTLOG_NODE_PROFILE=dev node scripts/build.js

step "index.d.ts against the Rust code"
node scripts/dts.mjs --check

step "tsc --strict (index.d.ts, the TypeScript examples)"
rm -rf .examples-build
node_modules/.bin/tsc -p tsconfig.json --noEmit false --rootDir . --outDir .examples-build

step "node --test"
node --test --test-reporter=spec --test-timeout=120000 test/*.test.js test/*.test.mjs

step "passed ($((SECONDS - START)) s)"
