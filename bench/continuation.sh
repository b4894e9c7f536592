#!/bin/sh
# Continuation probes (could the agent go on?) for every strategy at a 16k and a 32k window over the
# shared corpus, with the same-size tail and usable-budget window baselines computed in the same run,
# and the transcripts' own compactions scored against a checkpoint of their summary's size. Prints the
# Markdown tables of the "## Continuation" section of BENCHMARKS.md.
#
#   bench/continuation.sh                 # corpus at ../shared/corpus
#   CORPUS=/path/to/corpus bench/continuation.sh
#   COMPACTCTL=/path/to/compactctl bench/continuation.sh   # skip the build
#   CONFIG=policy.yaml bench/continuation.sh               # another policy (e.g. a min_gain_pct sweep)
set -eu
cd "$(dirname "$0")/.."
CORPUS=${CORPUS:-../shared/corpus}
if [ -z "${COMPACTCTL:-}" ]; then
    cargo build --release -p compactctl
    COMPACTCTL="${CARGO_TARGET_DIR:-target}/release/compactctl"
fi
FILES=$(find "$CORPUS" -type f ! -name MANIFEST.md | sort)
for WINDOW in 16000 32000; do
    echo "### Window $WINDOW"
    echo
    # shellcheck disable=SC2086 # one argument per file; corpus names have no spaces
    "$COMPACTCTL" replay --lenient --window "$WINDOW" --compare all --markdown ${CONFIG:+--config "$CONFIG"} $FILES
    echo
done
