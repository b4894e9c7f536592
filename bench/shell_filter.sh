#!/bin/sh
# The filter of `compactctl run` replayed over every recorded shell result of the shared corpus
# (Claude Code, Codex, SWE-agent, OpenHands) at 500, 1k and 2k tokens: shell-output tokens saved
# (overall and the median session), outputs passed unchanged, error lines and last lines kept, and
# the replay's fact probes lost from the filtered transcript (each only inside an output whose
# marker names the id to recall it by). Then the overhead of `compactctl run` on a command that
# prints nothing and on one that prints 10 MB, against running it directly. Prints the Markdown of
# "Shell output" in BENCHMARKS.md.
#
#   bench/shell_filter.sh
#   CORPUS=/path/to/corpus BUDGETS=1000 bench/shell_filter.sh
#   SHELL_FILTER_ERRORS=1 bench/shell_filter.sh 2>errors.tsv   # every error line of every output, to
#                                                              # compare two versions of is_error_line
set -eu
cd "$(dirname "$0")/.."
CORPUS=${CORPUS:-../shared/corpus}
BUDGETS=${BUDGETS:-500,1000,2000}
for DIR in claude-code codex-rollout swe-agent openhands; do
    echo "### $DIR"
    echo
    # shellcheck disable=SC2046 # one argument per file; corpus names have no spaces
    cargo run -q --release -p compact-agents --example shell_filter -- --budgets "$BUDGETS" \
        $(find "$CORPUS/$DIR" -type f \( -name '*.jsonl' -o -name '*.json' -o -name '*.traj' \) | sort)
    echo
done

echo "### Overhead of compactctl run"
echo
cargo build -q --release -p compactctl
BIN=${CARGO_TARGET_DIR:-target}/release/compactctl
STATE=$(mktemp -d)
export XDG_STATE_HOME="$STATE"
time_of() { # median wall time in ms of 5 runs of "$@", output discarded
    for _ in 1 2 3 4 5; do
        start=$(date +%s%N)
        "$@" > /dev/null 2>&1 || true
        end=$(date +%s%N)
        echo $(( (end - start) / 1000000 ))
    done | sort -n | sed -n 3p
}
echo "| command | direct (ms) | under compactctl run (ms) |"
echo "|---|---:|---:|"
echo "| \`true\` | $(time_of true) | $(time_of "$BIN" run -- true) |"
echo "| \`head -c 10M\` of text lines | $(time_of sh -c 'yes "a line of build output 0123456789" | head -c 10000000') | $(time_of "$BIN" run -- sh -c 'yes "a line of build output 0123456789" | head -c 10000000') |"
echo "| 36 MB of distinct lines | $(time_of sh -c 'seq 1 1300000 | sed "s/^/line of build output /"') | $(time_of "$BIN" run -- sh -c 'seq 1 1300000 | sed "s/^/line of build output /"') |"
rm -rf "$STATE"
