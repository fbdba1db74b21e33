#!/usr/bin/env bash
# The Python binding's tests, run by scripts/test.sh (and so by CI). Self-contained, idempotent:
#   1. creates bindings/python/.venv and pip-installs requirements-dev.txt (+ constraints.txt)
#      unless it is up to date (a stamp holds the hash of both files and the Python version);
#   2. builds the module in the dev profile with `maturin develop` into that venv, sharing the
#      workspace's target directory (CARGO_TARGET_DIR is honoured), so the SDK the workspace
#      tests compiled is reused and an unchanged module relinks only;
#   3. runs pytest (every fixture vector, the bridge, workers, serve, the a2a-sdk client, the
#      exit and Ctrl-C tests), then `mypy --strict` over the package, tests and examples, and
#      stubtest (the stubs against the built module).
# Needs Python >= 3.10, a Rust toolchain, and PyPI on the first run.
# Environment: PYTHON (default python3).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
VENV="$HERE/.venv"
PYTHON="${PYTHON:-python3}"
START=$SECONDS

step() { printf '\n==> bindings/python: %s\n' "$*"; }
die() { printf '\nbindings/python: FAILED: %s\n' "$*" >&2; exit 1; }

command -v cargo >/dev/null 2>&1 || die "cargo not found on PATH (the module is built from source)"
command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found (set PYTHON to a Python >= 3.10)"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
    die "$("$PYTHON" --version 2>&1) is too old: agentlog needs Python >= 3.10"

hash_of() { cat "$@" | sha256sum | cut -d' ' -f1; }
STAMP="$VENV/.agentlog-stamp"
WANT="$(hash_of "$HERE/requirements-dev.txt" "$HERE/constraints.txt") $("$PYTHON" -c 'import sys; print(sys.version)' | head -1)"
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
    step "venv up to date ($VENV)"
else
    step "creating $VENV and installing requirements-dev.txt"
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV" || die "cannot create a venv with $PYTHON (on Debian/Ubuntu: apt-get install python3-venv)"
    "$VENV/bin/pip" install --disable-pip-version-check --no-input -q \
        -r "$HERE/requirements-dev.txt" -c "$HERE/constraints.txt" ||
        { rm -rf "$VENV"; die "pip could not install requirements-dev.txt: is PyPI reachable?"; }
    echo "$WANT" >"$STAMP"
fi

step "maturin develop (dev profile)"
# No toolchain download if cargo were missing: a plain error instead.
(cd "$HERE" && MATURIN_NO_INSTALL_RUST=1 VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH" \
    "$VENV/bin/maturin" develop --profile dev --locked -q) || die "maturin develop failed"
BUILT=$SECONDS

step "pytest"
(cd "$HERE" && "$VENV/bin/python" -m pytest -q -p no:cacheprovider) || die "pytest failed"

step "mypy --strict"
(cd "$HERE" && "$VENV/bin/python" -m mypy --strict --no-incremental) || die "mypy --strict failed"

step "stubtest (the stubs against the module)"
(cd "$HERE" && "$VENV/bin/python" -m mypy.stubtest agentlog) ||
    die "stubtest: the stubs and the module disagree"

echo "bindings/python: build $((BUILT - START)) s, tests $((SECONDS - BUILT)) s"
