#!/bin/sh
# Page load of the web view (`compactctl ui`, issue 16): fills a SQLite store with a generated
# 1,000-call session through the session runtime, times reading the log and rendering each page
# (list, session, compaction diff, item, search) in-process, then, when the test virtualenv has
# Playwright and Chromium is installed, serves the store and times each page in Chromium (request
# start to load event). BENCHMARKS.md "Web view" holds the figures.
#
#   bench/ui.sh              # 1,000 calls, 10 runs per page, release build
#   bench/ui.sh 2000 20      # other sizes
#   PROFILE=dev bench/ui.sh  # the test build (slower)
set -eu
cd "$(dirname "$0")/.."
CALLS=${1:-1000}
RUNS=${2:-10}
PROFILE=${PROFILE:-release}
cargo build --quiet --profile "$PROFILE" -p compact-ui --example page_load
DIR=$( [ "$PROFILE" = dev ] && echo debug || echo "$PROFILE" )
BIN="${CARGO_TARGET_DIR:-target}/$DIR/examples/page_load"
PY=${COMPACT_TEST_PYTHON:-${XDG_CACHE_HOME:-$HOME/.cache}/compact/test-venv/bin/python}
if ! "$PY" -c 'import playwright' 2>/dev/null || ! command -v chromium >/dev/null 2>&1; then
    "$BIN" "$CALLS" "$RUNS"
    exit 0
fi
OUT=$(mktemp)
"$BIN" "$CALLS" "$RUNS" serve >"$OUT" &
PID=$!
trap 'kill $PID 2>/dev/null; rm -f "$OUT"' EXIT
until grep -q '^listening on ' "$OUT"; do
    kill -0 $PID 2>/dev/null || { cat "$OUT"; exit 1; }
    sleep 0.2
done
grep -v '^listening on ' "$OUT"
echo
"$PY" bench/ui_browser.py "$(sed -n 's/^listening on //p' "$OUT")" bench "$RUNS"
