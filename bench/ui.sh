#!/bin/sh
# Page load of the web view (`compactctl ui`, issue 16): fills a SQLite store with a generated
# 1,000-call session through the session runtime, then times reading the log and rendering each page
# (list, session, compaction diff, item, search). Prints a table; BENCHMARKS.md "Web view" holds the
# figures.
#
#   bench/ui.sh              # 1,000 calls, 10 runs per page, release build
#   bench/ui.sh 2000 20      # other sizes
#   PROFILE=dev bench/ui.sh  # the test build (slower; what CI runs)
set -eu
cd "$(dirname "$0")/.."
if [ "${PROFILE:-release}" = release ]; then
    cargo run --quiet --release -p compact-ui --example page_load -- "${1:-1000}" "${2:-10}"
else
    cargo run --quiet -p compact-ui --example page_load -- "${1:-1000}" "${2:-10}"
fi
