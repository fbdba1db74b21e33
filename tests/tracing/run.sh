#!/usr/bin/env bash
# The tracing test: a trace from the official A2A Python client (a2a-sdk with its OpenTelemetry
# extra) through `agentlog serve`, the log and `agentlog worker` processes, exported over
# OTLP/HTTP to a receiver in the test that decodes it with opentelemetry-proto
# (tests/tracing/test_tracing.py).
#
# Self-contained and idempotent; run from anywhere:
#   1. builds the agentlog binary (cargo build --locked), unless AGENTLOG_BIN names one;
#   2. creates tests/tracing/.venv and pip-installs requirements.txt (pinned by
#      constraints.txt) unless it is up to date;
#   3. runs pytest.
# The test needs an Apache Iggy server (the bridge and two worker processes share its log): it
# starts one when an `iggy-server` binary is found (AGENTLOG_IGGY_SERVER or PATH) and prints
# SKIPPED otherwise, as the Rust suites do.
#
# Environment: PYTHON (default python3), TRACING_SUITE_TIMEOUT (seconds, default 300).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
VENV="$HERE/.venv"
PYTHON="${PYTHON:-python3}"
SUITE_TIMEOUT="${TRACING_SUITE_TIMEOUT:-300}"

step() { printf '\n==> tracing: %s\n' "$*"; }
die() { printf '\ntracing: FAILED: %s\n' "$*" >&2; exit 1; }

if [[ -n "${AGENTLOG_BIN:-}" ]]; then
    BIN="$AGENTLOG_BIN"
else
    step "cargo build -p agentlog-server --bin agentlog --locked"
    BIN="$("$ROOT/scripts/agentlog-bin.sh" build -p agentlog-server --bin agentlog --locked)" ||
        die "cargo build did not produce the agentlog binary"
fi
[[ -x "$BIN" ]] || die "AGENTLOG_BIN=$BIN is not an executable"

# --- Python: venv + pinned a2a-sdk, OpenTelemetry SDK and protobuf definitions -------------------
STAMP="$VENV/.tracing-stamp"
WANT="$(cat "$HERE/requirements.txt" "$HERE/constraints.txt" | sha256sum | cut -d' ' -f1) $("$PYTHON" -c 'import sys; print(sys.version)' | head -1)"
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]] &&
    "$VENV/bin/python" -c 'import a2a, opentelemetry.sdk, opentelemetry.proto, pytest' 2>/dev/null; then
    step "python venv up to date ($VENV)"
else
    step "creating $VENV and installing requirements.txt"
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV" || die "cannot create a venv with $PYTHON (on Debian: apt-get install python3-venv)"
    if ! "$VENV/bin/pip" install --disable-pip-version-check --no-input -q \
        -r "$HERE/requirements.txt" -c "$HERE/constraints.txt"; then
        rm -rf "$VENV"
        die "pip could not install $HERE/requirements.txt: is PyPI reachable?"
    fi
    echo "$WANT" >"$STAMP"
fi

# --- the test -----------------------------------------------------------------------------------
export AGENTLOG_BIN="$BIN"
step "pytest (tests/tracing: a2a-sdk client -> serve -> log -> worker, OTLP decoded)"
cd "$HERE"
timeout "$SUITE_TIMEOUT" "$VENV/bin/python" -m pytest -q -rs || die "the tracing test failed (exit $?)"
