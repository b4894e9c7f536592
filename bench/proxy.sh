#!/bin/sh
# The compaction proxy's cost: latency it adds over calling the provider directly (p50/p99, one
# request at a time, ~20 KB Chat Completions bodies, a fresh session per request) for requests that
# pass through (they fit a 128k window) and requests it compacts (a 4k window), and its resident
# memory idle and after a loaded run (16 requests in flight). The provider is the simulator
# (`compact-sim`), each in its own process; the client is crates/proxy/examples/proxy_latency.rs.
# The figures of "Proxy" in BENCHMARKS.md come from this script.
#
#   bench/proxy.sh                     # release build, 500 requests per mode
#   REQUESTS=2000 bench/proxy.sh
set -eu
cd "$(dirname "$0")/.."
REQUESTS=${REQUESTS:-500}
cargo build --release -q -p compactctl -p compact-sim
cargo build --release -q -p compact-proxy --example proxy_latency
BIN="${CARGO_TARGET_DIR:-target}/release"
DIR=$(mktemp -d)
PIDS=""
cleanup() { for p in $PIDS; do kill "$p" 2>/dev/null || true; done; rm -rf "$DIR"; }
trap cleanup EXIT

. bench/lib.sh

SIM_PORT=$(free_port)
"$BIN/compact-sim" --port "$SIM_PORT" --window 128000 > "$DIR/sim.log" 2>&1 &
PIDS="$PIDS $!"
wait_port "$SIM_PORT"

cat > "$DIR/small.yaml" <<YAML
max_context_tokens: 4000
policy: { reserved_output_tokens: 256 }
YAML

for mode in pass-through compacting; do
    PORT=$(free_port)
    if [ "$mode" = compacting ]; then CONFIG="--config $DIR/small.yaml"; else CONFIG="--window 128000"; fi
    # shellcheck disable=SC2086
    "$BIN/compactctl" serve --listen "127.0.0.1:$PORT" --openai-base-url "http://127.0.0.1:$SIM_PORT" \
        --store memory $CONFIG 2> "$DIR/proxy-$mode.log" &
    PROXY=$!
    PIDS="$PIDS $PROXY"
    wait_port "$PORT"
    IDLE=$(rss_kb "$PROXY")
    "$BIN/examples/proxy_latency" "http://127.0.0.1:$SIM_PORT" "http://127.0.0.1:$PORT" "$REQUESTS" \
        --label "$mode" --load 16
    echo "{\"label\": \"$mode\", \"proxy_rss_idle_kb\": $IDLE, \"proxy_rss_after_load_kb\": $(rss_kb "$PROXY"), \"proxy_peak_rss_kb\": $(hwm_kb "$PROXY")}"
    kill -TERM "$PROXY"
    wait "$PROXY" || true
done
