#!/bin/sh
# The SessionStart hook on the shared corpus: at every compaction a Claude Code (or Codex)
# transcript records, the share of the replay's fact probes from the dropped span (files modified,
# failed commands with their error line, requests, constraints, plan steps) present in the hook's
# added context, in the agent's own summary, and in either; and the sizes in tokens. Prints the
# Markdown of "Agent hooks" in BENCHMARKS.md.
#
#   bench/hooks.sh                          # corpus at ../shared/corpus, default budget (3000)
#   MAX_TOKENS=1500 bench/hooks.sh          # another budget
#   CORPUS=/path/to/corpus bench/hooks.sh
set -eu
cd "$(dirname "$0")/.."
CORPUS=${CORPUS:-../shared/corpus}
MAX_TOKENS=${MAX_TOKENS:-3000}
for DIR in claude-code codex-rollout; do
    echo "### $DIR"
    echo
    # shellcheck disable=SC2046 # one argument per file; corpus names have no spaces
    cargo run -q -p compact-agents --example hook_probes -- --max-tokens "$MAX_TOKENS" \
        $(find "$CORPUS/$DIR" -name '*.jsonl' | sort)
    echo
done
