#!/usr/bin/env bash
# Interop tests: the official A2A clients (Python a2a-sdk, JS @a2a-js/sdk, Rust a2a-client-lf)
# against `agentlog serve --demo` on free loopback ports with in-memory logs (one server signs
# its card).
#
# Self-contained and idempotent; run from anywhere:
#   1. builds the agentlog binary (cargo build --locked), unless AGENTLOG_BIN names one;
#   2. creates tests/interop/python/.venv and pip-installs requirements.txt (+ constraints.txt)
#      unless the venv is already up to date (a stamp holds the hash of both files and the
#      Python version);
#   3. runs `npm ci` in tests/interop/js unless node_modules matches package-lock.json, and
#      builds the Rust client's suite (tests/interop/rust, a workspace member: `cargo test
#      --workspace` built it already when scripts/test.sh runs this);
#   4. starts the server, exports its URL as AGENTLOG_URL, and a second one whose card is
#      signed by two keys made with `agentlog keygen` (AGENTLOG_SIGNED_URL, the public keys in
#      AGENTLOG_CARD_PUBLIC_KEY and AGENTLOG_CARD_NEXT_PUBLIC_KEY), runs `pytest -q`,
#      `node --test` and the Rust suite, and always stops both servers.
# Exits non-zero if anything fails. Installs need PyPI and npm on the first run (or after a
# pin changes); without them it fails loudly rather than skipping: CI must prove interop.
#
# Environment: PYTHON (default python3), INTEROP_SUITE_TIMEOUT (seconds per suite, default 240).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PY_DIR="$HERE/python"
JS_DIR="$HERE/js"
VENV="$PY_DIR/.venv"
PYTHON="${PYTHON:-python3}"
SUITE_TIMEOUT="${INTEROP_SUITE_TIMEOUT:-240}"
START=$SECONDS

step() { printf '\n==> interop: %s\n' "$*"; }
die() { printf '\ninterop: FAILED: %s\n' "$*" >&2; exit 1; }

need() { command -v "$1" >/dev/null 2>&1 || die "$1 not found on PATH ($2)"; }
need cargo "needed to build agentlog"
need "$PYTHON" "Python >= 3.10 is needed for a2a-sdk; set PYTHON to choose the interpreter"
need node "Node >= 20 is needed for @a2a-js/sdk"
need npm "npm is needed to install @a2a-js/sdk"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
    die "$("$PYTHON" --version 2>&1) is too old: a2a-sdk needs Python >= 3.10"
node -e 'process.exit(Number(process.versions.node.split(".")[0]) < 20 ? 1 : 0)' ||
    die "node $(node --version) is too old: @a2a-js/sdk needs Node >= 20"

hash_of() { cat "$@" | sha256sum | cut -d' ' -f1; }

# --- 1. the binary ----------------------------------------------------------------------------
# AGENTLOG_BIN (scripts/test.sh sets it to the binary `cargo test` built) saves a build with
# another feature set; otherwise cargo builds it and says where (CARGO_TARGET_DIR just works).
if [[ -n "${AGENTLOG_BIN:-}" ]]; then
    BIN="$AGENTLOG_BIN"
else
    step "cargo build -p agentlog-server --bin agentlog --locked"
    BIN="$("$ROOT/scripts/agentlog-bin.sh" build -p agentlog-server --bin agentlog --locked)" ||
        die "cargo build did not produce the agentlog binary"
fi
[[ -x "$BIN" ]] || die "AGENTLOG_BIN=$BIN is not an executable"
echo "binary: $BIN"

# --- 2. Python: venv + pinned a2a-sdk ---------------------------------------------------------
PY_STAMP="$VENV/.interop-stamp"
PY_WANT="$(hash_of "$PY_DIR/requirements.txt" "$PY_DIR/constraints.txt") $("$PYTHON" -c 'import sys; print(sys.version)' | head -1)"
if [[ -f "$PY_STAMP" && "$(cat "$PY_STAMP")" == "$PY_WANT" ]] &&
    "$VENV/bin/python" -c 'import a2a.client, pytest, pytest_asyncio' >/dev/null 2>&1; then
    step "python venv up to date ($VENV)"
else
    step "creating $VENV and installing requirements.txt"
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV" || die "cannot create a venv with $PYTHON (on Debian/Ubuntu: apt-get install python3-venv)"
    if ! "$VENV/bin/pip" install --disable-pip-version-check --no-input -q \
        -r "$PY_DIR/requirements.txt" -c "$PY_DIR/constraints.txt"; then
        rm -rf "$VENV"
        die "pip could not install $PY_DIR/requirements.txt: is PyPI reachable (proxy, PIP_INDEX_URL)? Interop tests cannot be skipped."
    fi
    echo "$PY_WANT" >"$PY_STAMP"
fi
"$VENV/bin/pip" --disable-pip-version-check list 2>/dev/null | grep -Ei '^(a2a-sdk|pytest|pytest-asyncio) ' || true

# --- 3. JS: npm ci from the committed lockfile ------------------------------------------------
JS_STAMP="$JS_DIR/node_modules/.interop-stamp"
JS_WANT="$(hash_of "$JS_DIR/package.json" "$JS_DIR/package-lock.json") node-$(node --version)"
if [[ -f "$JS_STAMP" && "$(cat "$JS_STAMP")" == "$JS_WANT" ]]; then
    step "node_modules up to date ($JS_DIR/node_modules)"
else
    step "npm ci (tests/interop/js)"
    if ! (cd "$JS_DIR" && npm ci --no-audit --no-fund --loglevel=error); then
        die "npm ci failed in $JS_DIR: is the npm registry reachable (proxy, npm_config_registry)? Interop tests cannot be skipped."
    fi
    echo "$JS_WANT" >"$JS_STAMP"
fi
echo "@a2a-js/sdk $(node -p 'require(process.argv[1]).version' "$JS_DIR/node_modules/@a2a-js/sdk/package.json")"

# --- 3b. Rust: the a2a-client-lf suite ----------------------------------------------------------
# `--workspace` resolves features as `cargo test --workspace` does, so the test binary it built
# is reused (with `-p` alone its dependencies would build again with other features).
RUST_SUITE=(cargo test --workspace --locked --test rust_client)
step "${RUST_SUITE[*]} --no-run (tests/interop/rust, a2a-client-lf)"
(cd "$ROOT" && "${RUST_SUITE[@]}" --no-run) || die "cannot build the Rust client's suite"

# --- 4. the servers ---------------------------------------------------------------------------
WORK="$(mktemp -d "${TMPDIR:-/tmp}/agentlog-interop.XXXXXX")"
SERVER_PIDS=()
stop_server() {
    local pid="$1"
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        # Graceful shutdown first; do not wait forever on it.
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
}
cleanup() {
    local pid
    for pid in "${SERVER_PIDS[@]}"; do stop_server "$pid"; done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start_server NAME ARGS...: `agentlog serve ARGS...` with its output in $WORK/NAME.{out,err};
# sets STARTED_URL once it printed its URL.
start_server() {
    local name="$1"
    shift
    step "$BIN serve $*"
    # Created before the server starts: the background job opens its redirections itself, so
    # the first read below could otherwise come before the file exists (seen on a loaded CI).
    : >"$WORK/$name.out"
    : >"$WORK/$name.err"
    "$BIN" serve "$@" --color never >"$WORK/$name.out" 2>"$WORK/$name.err" &
    local pid=$!
    SERVER_PIDS+=("$pid")
    STARTED_URL=""
    for _ in $(seq 300); do # up to 30 s
        STARTED_URL="$(sed -n 's/^agentlog serving agent "[^"]*" at \(http:[^ ]*\) .*/\1/p' "$WORK/$name.out" | head -1)"
        [[ -n "$STARTED_URL" ]] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if [[ -z "$STARTED_URL" ]]; then
        echo "--- $name stdout" >&2; cat "$WORK/$name.out" >&2
        echo "--- $name stderr" >&2; cat "$WORK/$name.err" >&2
        die "agentlog serve ($name) did not print its URL"
    fi
}

start_server server --demo --listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 --log memory://
export AGENTLOG_URL="$STARTED_URL"
echo "AGENTLOG_URL=$AGENTLOG_URL"
# The suites that need a server of their own (auth) start it with this binary.
export AGENTLOG_BIN="$BIN"

# A second server whose card is signed by two keys (as during a key rotation) and lists a 0.3
# interface beside the 1.0 one; the suites verify it with each SDK's own verifier.
"$BIN" keygen --out "$WORK/card.key" >/dev/null || die "agentlog keygen failed"
"$BIN" keygen --out "$WORK/next.key" >/dev/null || die "agentlog keygen failed"
start_server signed --demo --listen 127.0.0.1:0 --log memory:// --with-v03-interface \
    --signing-key "$WORK/card.key" --signing-key "$WORK/next.key"
export AGENTLOG_SIGNED_URL="$STARTED_URL"
export AGENTLOG_CARD_PUBLIC_KEY="$WORK/card.key.pub"
export AGENTLOG_CARD_NEXT_PUBLIC_KEY="$WORK/next.key.pub"
echo "AGENTLOG_SIGNED_URL=$AGENTLOG_SIGNED_URL (signed by $AGENTLOG_CARD_PUBLIC_KEY and $AGENTLOG_CARD_NEXT_PUBLIC_KEY)"

# --- 5. the suites (both run even if the first fails) -----------------------------------------
failed=()

step "pytest -q (tests/interop/python, a2a-sdk)"
if (cd "$PY_DIR" && timeout "$SUITE_TIMEOUT" "$VENV/bin/python" -m pytest -q); then :; else
    failed+=("python (exit $?)")
fi

step "node --test (tests/interop/js, @a2a-js/sdk)"
if (cd "$JS_DIR" && timeout "$SUITE_TIMEOUT" node --test --test-reporter=spec interop.test.mjs auth.test.mjs signed_card.test.mjs); then :; else
    failed+=("js (exit $?)")
fi

step "${RUST_SUITE[*]} (tests/interop/rust, a2a-client-lf)"
if (cd "$ROOT" && timeout "$SUITE_TIMEOUT" "${RUST_SUITE[@]}"); then :; else
    failed+=("rust (exit $?)")
fi

for i in "${!SERVER_PIDS[@]}"; do
    if ! kill -0 "${SERVER_PIDS[$i]}" 2>/dev/null; then
        failed+=("server $i (exited during the run)")
    fi
done
if ((${#failed[@]})); then
    for name in server signed; do
        echo "--- $name stderr (last 50 lines)" >&2
        tail -n 50 "$WORK/$name.err" >&2 || true
    done
    die "${failed[*]} ($((SECONDS - START)) s)"
fi
step "all interop suites passed ($((SECONDS - START)) s)"
