#!/usr/bin/env sh
# Token counting benchmarks: exact-count throughput vs tiktoken-rs (o200k_base, cl100k_base) on the
# mixed corpus, estimator speed, and cold vs incremental recount of a 200k-token conversation.
# Figures and how to read them: BENCHMARKS.md, section "Token counting".
# Usage: bench/tokens.sh   (extra arguments go to cargo, e.g. --offline)
set -eu
cd "$(dirname "$0")/.."
exec cargo bench -p compact-core --bench tokens "$@"
