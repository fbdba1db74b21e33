#!/usr/bin/env bash
# Prints the path of the `agentlog` executable that `cargo <args>` builds, from cargo's own
# messages, so CARGO_TARGET_DIR and the like just work. Cargo's output goes to stderr.
#   scripts/agentlog-bin.sh build -p agentlog-server --bin agentlog --locked
#   scripts/agentlog-bin.sh test --workspace --locked --no-run   (the binary the tests use)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo "$@" --message-format=json-render-diagnostics |
    "${PYTHON:-python3}" -c '
import json, sys
exe = None
for line in sys.stdin:
    msg = json.loads(line)
    if (msg.get("reason") == "compiler-artifact" and msg.get("executable")
            and msg["target"]["name"] == "agentlog" and not msg["profile"]["test"]):
        exe = msg["executable"]
if not exe:
    sys.exit("cargo built no agentlog executable")
print(exe)'
