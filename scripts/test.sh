#!/usr/bin/env bash
# The one test command: every test the repository has.
#
# Rust: unit tests, the fixture runner, the log conformance suite (embedded always; Apache
# Iggy when an `iggy-server` binary is on PATH or in AGENTLOG_IGGY_SERVER, otherwise those
# tests print SKIPPED), crash tests and the bridge tests.
# Then the interop tests: the official A2A clients (Python a2a-sdk, JS @a2a-js/sdk) against
# `agentlog serve --demo` (tests/interop/run.sh; needs Python >= 3.10, Node >= 20, and PyPI and
# npm on the first run, after which the installs are cached).
# Then the MCP interop tests: the official MCP clients (Python mcp, TS @modelcontextprotocol/client)
# and the MCP conformance suite (on the Node 22 it installs from npm) against `agentlog serve
# --demo`'s /mcp, with baselines of expected failures (tests/interop/mcp/run.sh; cached installs).
# Then the web console's browser test: headless Chromium over WebDriver (tests/console/run.sh;
# installs Debian's chromium and chromium-driver with apt-get when missing, selenium from PyPI).
# Then the tracing test: the official a2a-sdk client's trace through `serve`, the log and
# `agentlog worker` processes across a SIGKILL, exported over OTLP and decoded
# (tests/tracing/run.sh; a2a-sdk, the OpenTelemetry SDK and opentelemetry-proto from PyPI).
# Then the Node binding's tests (bindings/node/run-tests.sh: npm ci, the addon built with the
# dev profile in the same target directory, node --test).
# Then the Python binding's tests (bindings/python/run-tests.sh: the module built in the dev
# profile against the same target directory, pytest, mypy --strict, stubtest).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --workspace --locked
# The interop tests run the binary the tests above built: building it apart would compile the
# SDK and its dependencies once more with another feature set (time, and gigabytes of disk).
AGENTLOG_BIN="$(scripts/agentlog-bin.sh test --workspace --locked --no-run)"
export AGENTLOG_BIN
bindings/node/run-tests.sh
tests/interop/run.sh
tests/interop/mcp/run.sh
tests/console/run.sh
tests/tracing/run.sh
bindings/python/run-tests.sh
