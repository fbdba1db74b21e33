#!/usr/bin/env bash
# The one test command: every test the repository has.
#
# Rust: unit tests, the fixture runner, the log conformance suite (embedded always; Apache
# Iggy when an `iggy-server` binary is on PATH or in AGENTLOG_IGGY_SERVER, otherwise those
# tests print SKIPPED), crash tests and the bridge tests.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --workspace --locked
