#!/bin/sh
# Input limits at full size: time and peak memory (GNU time's maximum resident set) of `compactctl`
# on generated hostile inputs: a 64 MB single string, one million tiny JSONL records (every
# strategy), one record over the limit, 100 000 levels of nesting. The figures of "Input limits" in
# README.md and FUZZING.md come from this script; the small versions run in
# crates/cli/tests/cli/limits.rs.
#
#   bench/limits.sh                                        # builds the release binary
#   COMPACTCTL=/path/to/compactctl bench/limits.sh         # skip the build
#   RECORDS=2000000 bench/limits.sh                        # another record count
set -eu
cd "$(dirname "$0")/.."
if [ -z "${COMPACTCTL:-}" ]; then
    cargo build --release -p compactctl
    COMPACTCTL="${CARGO_TARGET_DIR:-target}/release/compactctl"
fi
RECORDS=${RECORDS:-1000000}
TIME=/usr/bin/time
[ -x "$TIME" ] || { echo "bench/limits.sh needs GNU time at $TIME" >&2; exit 2; }
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT

python3 - "$DIR" "$RECORDS" <<'EOF'
import sys
d, n = sys.argv[1], int(sys.argv[2])
s = "lorem ipsum dolor sit amet, consectetur adipiscing elit 12345 "
text = s * ((64 << 20) // len(s))
with open(f"{d}/string64.json", "w") as f:
    f.write('{"messages":[{"role":"system","content":"You are helpful."},{"role":"user","content":"%s"}]}' % text)
with open(f"{d}/records.jsonl", "w") as f:
    for i in range(n):
        f.write('{"role":"%s","content":"m%d"}\n' % ("user" if i % 2 == 0 else "assistant", i))
with open(f"{d}/over.jsonl", "w") as f:
    f.write("{}\n" * 1000001)
depth = 100000
with open(f"{d}/deep.json", "w") as f:
    f.write('{"messages":[{"role":"user","content":' + "[" * depth + "]" * depth + "}]}")
EOF

# One measured run: label, then the command's arguments.
measure() {
    label=$1
    shift
    if "$TIME" -f "%e %M" -o "$DIR/time" "$COMPACTCTL" "$@" >"$DIR/out" 2>"$DIR/err"; then
        code=0
    else
        code=$?
    fi
    # shellcheck disable=SC2046 # two numbers: seconds and kilobytes
    set -- $(tail -n 1 "$DIR/time")
    printf '| %s | %s | %s s | %s MB |\n' "$label" "$code" "$1" "$(($2 / 1024))"
}

echo "| input and command | exit | wall | peak RSS |"
echo "|---|---|---|---|"
ls -l "$DIR"/string64.json "$DIR"/records.jsonl | awk '{ printf "<!-- %s: %d bytes -->\n", $NF, $5 }' >&2
measure "64 MB string: inspect" inspect "$DIR/string64.json"
measure "64 MB string: count" count "$DIR/string64.json"
measure "64 MB string: compact --window 8000" compact "$DIR/string64.json" --window 8000 -o "$DIR/o.json"
measure "$RECORDS records: inspect" inspect "$DIR/records.jsonl"
for s in tiered codex segmented observation-masking sliding-window deletion cfpm; do
    measure "$RECORDS records: compact --window 8000 --strategy $s" compact "$DIR/records.jsonl" --window 8000 --strategy "$s" -o "$DIR/o.json"
done
measure "1000001 records: inspect (refused)" inspect "$DIR/over.jsonl"
measure "100000 levels of nesting: inspect (refused)" inspect "$DIR/deep.json"
