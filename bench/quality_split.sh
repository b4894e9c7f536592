#!/bin/sh
# Compaction quality on the two halves of the corpus split by project (issue 45): tune on one half,
# report on the other. For each half (A, B: `compactctl replay --split`, rule in
# crates/replay/src/split.rs), each window (16k, 32k) and each family (Claude Code, Codex), prints
# `tiered`'s continuation against the same-size tail and the usable-budget tail, its fact probes
# (overall, exact error lines of failed commands, failed actions, user requests; at each session's
# last call), the agents' own compactions scored against a checkpoint of exactly the summary's size
# (and the one built with the summary's size as budget), and the write-time shell filter at 1,000
# tokens (saved, error lines kept) over the half's shell outputs.
#
#   bench/quality_split.sh                      # corpus at ../shared/corpus
#   CORPUS=/path/to/corpus bench/quality_split.sh
#   COMPACTCTL=/path/to/compactctl bench/quality_split.sh    # skip the build
#   HALVES=A WINDOWS=32000 bench/quality_split.sh            # one half, one window
#   PARTS=replay bench/quality_split.sh                      # replay only (PARTS=filter: the filter)
set -eu
cd "$(dirname "$0")/.."
CORPUS=${CORPUS:-../shared/corpus}
HALVES=${HALVES:-A B}
WINDOWS=${WINDOWS:-16000 32000}
PARTS=${PARTS:-replay filter}
if [ -z "${COMPACTCTL:-}" ]; then
    cargo build -q --release -p compactctl
    COMPACTCTL="${CARGO_TARGET_DIR:-target}/release/compactctl"
fi
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
FILES=$(find "$CORPUS" -type f ! -name MANIFEST.md | sort)

echo "### The split"
echo
# shellcheck disable=SC2086 # one argument per file; corpus names have no spaces
"$COMPACTCTL" replay --lenient --window 32000 --list-split $FILES 2>/dev/null > "$OUT/split.tsv"
python3 - "$OUT/split.tsv" <<'EOF'
import sys, collections
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
projects = collections.defaultdict(lambda: collections.Counter())
for f, project, family, half in rows:
    projects[(half, family)][project] += 1
print("| half | family | sessions | projects |")
print("|---|---|---:|---|")
for (half, family), c in sorted(projects.items()):
    print(f"| {half} | {family} | {sum(c.values())} | {', '.join(f'{p} ({n})' for p, n in sorted(c.items()))} |")
print()
EOF

case " $PARTS " in *" replay "*)
for HALF in $HALVES; do
    for WINDOW in $WINDOWS; do
        # shellcheck disable=SC2086
        "$COMPACTCTL" replay --lenient --window "$WINDOW" --compare tiered --split "$HALF" --json $FILES \
            2>"$OUT/$HALF-$WINDOW.err" > "$OUT/$HALF-$WINDOW.json" || { cat "$OUT/$HALF-$WINDOW.err" >&2; exit 1; }
    done
done

echo "### Continuation, fact probes and the agents' own compactions (tiered)"
echo
python3 - "$OUT" "$HALVES" "$WINDOWS" <<'EOF'
import json, sys, os
out, halves, windows = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
fams = [("claude-code", "Claude Code"), ("codex-rollout", "Codex")]
def f(x, signed=False):
    if x is None:
        return "-"
    return f"{x:+.3f}" if signed else f"{x:.3f}"
print("| half | window | family | cuts | tiered | same-size tail | margin | usable-budget tail | vs usable | facts | exact error lines | failed actions | user requests | cost $ | compactions |")
print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
bounds = []
for half in halves:
    for w in windows:
        path = os.path.join(out, f"{half}-{w}.json")
        r = json.load(open(path))
        for key, name in fams:
            agg = r["by_format"].get(key)
            if not agg:
                continue
            t = agg[0]
            c = t["continuation"]
            k = t["retention_by_kind"]
            s, tail, win = c["score"], c["tail_same_size"], c["window_usable"]
            margin = None if s is None else s - tail
            vs = None if s is None else s - win
            print(f"| {half} | {int(w)//1000}k | {name} | {c['cuts']} | {f(s)} | {f(tail)} | {f(margin, True)} | {f(win)} | {f(vs, True)} "
                  f"| {f(t['retention'])} | {f(k.get('failures'))} | {f(k.get('failed_actions'))} | {f(k.get('requests'))} | {t['cost']:.2f} | {t['compactions']} |")
        for key, b in r.get("source_compactions", {}).items():
            if key == "all":
                continue
            bounds.append((half, w, key, b))
print()
print("Agents' own compactions (continuation anchors of the calls after each): the agent's summary, a")
print("deterministic checkpoint of exactly its size, the checkpoint built with its size as budget, a tail of its size.")
print()
print("| half | window | family | compactions | summary (tokens) | summary held | checkpoint (tokens) | checkpoint held | budgeted checkpoint (tokens) | budgeted held | tail held |")
print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for half, w, key, b in bounds:
    tok = lambda x: "-" if x is None else f"{x:,.0f}"
    print(f"| {half} | {int(w)//1000}k | {key} | {b['compactions']} | {tok(b['summary_tokens'])} | {f(b['summary'])} | {tok(b['checkpoint_tokens'])} | {f(b['checkpoint'])} "
          f"| {tok(b.get('checkpoint_budgeted_tokens'))} | {f(b.get('checkpoint_budgeted'))} | {f(b['tail'])} |")
print()
EOF
;; esac

case " $PARTS " in *" filter "*)
echo "### Write-time shell filter at 1,000 tokens"
echo
for HALF in $HALVES; do
    for DIR in claude-code codex-rollout; do
        SEL=$(awk -F'\t' -v h="$HALF" -v d="/$DIR/" '$4 == h && index($1, d) { print $1 }' "$OUT/split.tsv")
        [ -n "$SEL" ] || continue
        echo "Half $HALF, $DIR:"
        echo
        # shellcheck disable=SC2086
        cargo run -q --release -p compact-agents --example shell_filter -- --budgets 1000 $SEL
        echo
    done
done
;; esac
