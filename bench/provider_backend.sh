#!/usr/bin/env bash
# The provider's own compaction as the summariser (issue 19, item 6) against Compact's deterministic
# checkpoint, replayed over the shared corpus: the same strategies, the same policy, only the
# summariser differs. The provider is the simulator (`compact-sim`), whose on-demand compaction
# answers with the usage a real one reports (the pass's `iterations`) and a summary padded to the
# size Claude Code's own summaries have in the corpus (SUMMARY_TOKENS, default 2,666: the mean of
# the 26 recorded in the corpus, BENCHMARKS.md "Continuation"). Every call is made over HTTP and
# priced at the replayed model's prices. Prints one Markdown table per window.
#
#   bench/provider_backend.sh                       # 16k and 32k, claude-sonnet-4-5 prices
#   WINDOWS="32000" MODEL=gpt-5 bench/provider_backend.sh
#   COMPACTCTL=... SIM=... bench/provider_backend.sh  # skip the build
#
# The simulator's summary holds nothing (filler): retention and continuation of the provider rows
# count only what Compact kept besides it, so they are a floor, not a measure of a real summary.
set -euo pipefail
cd "$(dirname "$0")/.."
CORPUS=${CORPUS:-../shared/corpus}
WINDOWS=${WINDOWS:-"16000 32000"}
MODEL=${MODEL:-claude-sonnet-4-5}
STRATEGIES=${STRATEGIES:-tiered,codex}
SUMMARY_TOKENS=${SUMMARY_TOKENS:-2666}
if [ -z "${COMPACTCTL:-}" ] || [ -z "${SIM:-}" ]; then
    cargo build --release --locked -q -p compactctl -p compact-sim
    COMPACTCTL="${CARGO_TARGET_DIR:-target}/release/compactctl"
    SIM="${CARGO_TARGET_DIR:-target}/release/compact-sim"
fi
work=$(mktemp -d)
"$SIM" --window 4000000 --compaction-summary-tokens "$SUMMARY_TOKENS" > "$work/sim.log" 2>&1 &
sim_pid=$!
trap 'kill "$sim_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 50); do
    grep -q "listening on" "$work/sim.log" && break
    sleep 0.1
done
base=$(sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' "$work/sim.log")
[ -n "$base" ] || { echo "compact-sim did not start: $(cat "$work/sim.log")" >&2; exit 1; }

FILES=$(find "$CORPUS" -type f ! -name MANIFEST.md | sort)
for WINDOW in $WINDOWS; do
    for SUMMARIZER in deterministic anthropic-compaction; do
        extra=""
        if [ "$SUMMARIZER" != deterministic ]; then
            extra="--summarizer $SUMMARIZER --base-url $base"
        fi
        # shellcheck disable=SC2086 # one argument per file; corpus names have no spaces
        ANTHROPIC_API_KEY=sk-ant-bench-simulator "$COMPACTCTL" replay --lenient --window "$WINDOW" \
            --model "$MODEL" --compare "$STRATEGIES" --json $extra $FILES > "$work/$WINDOW-$SUMMARIZER.json" 2> "$work/$WINDOW-$SUMMARIZER.err"
    done
    python3 - "$work" "$WINDOW" "$MODEL" <<'EOF'
import json, sys
work, window, model = sys.argv[1:4]
runs = {s: json.load(open(f"{work}/{window}-{s}.json")) for s in ("deterministic", "anthropic-compaction")}
print(f"**{int(window) // 1000}k window, `{model}` prices, {len(runs['deterministic']['sessions'])} sessions**\n")
print("| strategy | summariser | compactions | summariser calls | their input / output tokens | summariser $ | total $ | vs deterministic | retained (floor for the provider) |")
print("|---|---|---|---|---|---|---|---|---|")
base = {t["strategy"]: t for t in runs["deterministic"]["strategies"]}
for name in ("deterministic", "anthropic-compaction"):
    for t in runs[name]["strategies"]:
        if t["strategy"] == "none":
            continue
        s = t["summarizer"]
        ref = base[t["strategy"]]["cost"]
        delta = f"{(t['cost'] / ref - 1) * 100:+.1f}%" if ref else "-"
        kept = t["retention"]
        print(f"| {t['strategy']} | {name} | {t['compactions']} | {s['calls']} | "
              f"{s['input_tokens'] / 1e6:.2f}M / {s['output_tokens'] / 1e6:.2f}M | {s['cost']:.2f} | "
              f"{t['cost']:.2f} | {delta} | {kept:.3f} |")
print()
EOF
done
