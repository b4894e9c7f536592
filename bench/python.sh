#!/usr/bin/env bash
# Binding overhead of a preflight (issue 13): the same steady-state preflight of a ~200k-token
# session (plus one new ~1k-token message) timed from Rust (decode + CompactManager::preflight +
# encode when changed) and through the Python package (`CompactManager.prepare`: conversion,
# the same Rust work with the GIL released, results in the caller's shape). Release builds.
#
#   bench/python.sh [SAMPLES]          # default 200; needs a Python with maturin (COMPACT_TEST_PYTHON)
set -euo pipefail
cd "$(dirname "$0")/.."
samples="${1:-200}"
python="${COMPACT_TEST_PYTHON:-python3}"
venv="$(cd "$(dirname "$python")/.." && pwd)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

(cd python && VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" maturin develop --release --locked --quiet)
cargo build --release --locked -q -p compact-python --example preflight_rust
"$python" bench/python_preflight.py write "$work/session.json"
for round in 1 2 3 4 5; do
  "${CARGO_TARGET_DIR:-target}/release/examples/preflight_rust" "$work/session.json" "$samples"
  "$python" bench/python_preflight.py time "$work/session.json" "$samples"
done
