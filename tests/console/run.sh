#!/usr/bin/env bash
# The web console's browser test: a real headless Chromium, driven over WebDriver (Python
# selenium, chromedriver), against `agentlog serve` (tests/console/test_console.py).
#
# Self-contained and idempotent; run from anywhere:
#   1. builds the agentlog binary (cargo build --locked), unless AGENTLOG_BIN names one;
#   2. installs Debian's `chromium` and `chromium-driver` with apt-get when either is missing
#      (as root; otherwise it fails saying what to install);
#   3. creates tests/console/.venv and pip-installs requirements.txt unless it is up to date;
#   4. runs pytest. Screenshots of the task list and a task page go to target/console/.
# The takeover test needs an Apache Iggy server (two worker processes share its log): it
# starts one when an `iggy-server` binary is found (AGENTLOG_IGGY_SERVER or PATH) and prints
# SKIPPED otherwise, as the Rust suites do.
#
# Environment: PYTHON (default python3), CONSOLE_SUITE_TIMEOUT (seconds, default 300).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
VENV="$HERE/.venv"
PYTHON="${PYTHON:-python3}"
SUITE_TIMEOUT="${CONSOLE_SUITE_TIMEOUT:-300}"

step() { printf '\n==> console: %s\n' "$*"; }
die() { printf '\nconsole: FAILED: %s\n' "$*" >&2; exit 1; }

if [[ -n "${AGENTLOG_BIN:-}" ]]; then
    BIN="$AGENTLOG_BIN"
else
    step "cargo build -p agentlog-server --bin agentlog --locked"
    BIN="$("$ROOT/scripts/agentlog-bin.sh" build -p agentlog-server --bin agentlog --locked)" ||
        die "cargo build did not produce the agentlog binary"
fi
[[ -x "$BIN" ]] || die "AGENTLOG_BIN=$BIN is not an executable"

# --- the browser ------------------------------------------------------------------------------
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    if [[ "$(id -u)" != 0 ]]; then
        die "chromium and chromedriver are needed: apt-get install chromium chromium-driver (as root)"
    fi
    step "apt-get install chromium chromium-driver"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || die "apt-get update failed"
    apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null ||
        die "apt-get could not install chromium and chromium-driver"
fi
echo "$(chromium --version 2>/dev/null | head -1); $(chromedriver --version | head -1)"

# --- Python: venv + pinned selenium -------------------------------------------------------------
STAMP="$VENV/.console-stamp"
WANT="$(sha256sum "$HERE/requirements.txt" | cut -d' ' -f1) $("$PYTHON" -c 'import sys; print(sys.version)' | head -1)"
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]] && "$VENV/bin/python" -c 'import selenium, pytest' 2>/dev/null; then
    step "python venv up to date ($VENV)"
else
    step "creating $VENV and installing requirements.txt"
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV" || die "cannot create a venv with $PYTHON (on Debian: apt-get install python3-venv)"
    if ! "$VENV/bin/pip" install --disable-pip-version-check --no-input -q -r "$HERE/requirements.txt"; then
        rm -rf "$VENV"
        die "pip could not install $HERE/requirements.txt: is PyPI reachable?"
    fi
    echo "$WANT" >"$STAMP"
fi

# --- the test -----------------------------------------------------------------------------------
export AGENTLOG_BIN="$BIN"
export CONSOLE_ARTIFACTS="${CONSOLE_ARTIFACTS:-$ROOT/target/console}"
mkdir -p "$CONSOLE_ARTIFACTS"
step "pytest (tests/console, selenium + headless chromium); screenshots in $CONSOLE_ARTIFACTS"
cd "$HERE"
timeout "$SUITE_TIMEOUT" "$VENV/bin/python" -m pytest -q -rs || die "the browser test failed (exit $?)"
