#!/bin/sh
# Load shedding (issue 41): REQUESTS requests (each its own connection and session), all at once or
# RATE per second, against `compactctl serve` in front of the simulator, which holds every request
# it gets for DELAY_MS; the proxy runs with MAX_IN_FLIGHT slots and a queue of MAX_QUEUE waiting at most
# QUEUE_TIMEOUT_MS. Prints, per run, how many were admitted and shed, how fast the 503s came back
# (p50 / p99 / max, from send to the whole reply) and the latency of the admitted requests; then
# the same burst with `--max-in-flight off` for comparison. The load generator is
# bench/shed_load.py (Python standard library). The figures of "Load shedding" in BENCHMARKS.md
# come from this script.
#
#   bench/shed.sh                                  # release build; 200 requests at once, 32 slots, queue 8
#   REQUESTS=2000 RATE=500 bench/shed.sh           # open loop: 500 requests a second for 4 s
#   PROFILE=debug BUILD=0 MAX_IN_FLIGHT=64 bench/shed.sh   # BUILD=0: the binaries as they are
set -eu
cd "$(dirname "$0")/.."
PROFILE=${PROFILE:-release}
REQUESTS=${REQUESTS:-200}
DELAY_MS=${DELAY_MS:-2000}
MAX_IN_FLIGHT=${MAX_IN_FLIGHT:-32}
MAX_QUEUE=${MAX_QUEUE:-8}
QUEUE_TIMEOUT_MS=${QUEUE_TIMEOUT_MS:-500}
RATE=${RATE:-0}
if [ "$PROFILE" = release ]; then
    [ "${BUILD:-1}" = 0 ] || cargo build --release -q -p compactctl -p compact-sim
else
    [ "${BUILD:-1}" = 0 ] || cargo build -q -p compactctl -p compact-sim
fi
BIN="${CARGO_TARGET_DIR:-target}/$PROFILE"
DIR=$(mktemp -d)
PIDS=""
cleanup() { for p in $PIDS; do kill "$p" 2>/dev/null || true; done; rm -rf "$DIR"; }
trap cleanup EXIT

. bench/lib.sh

SIM_PORT=$(free_port)
"$BIN/compact-sim" --port "$SIM_PORT" --window 128000 > "$DIR/sim.log" 2>&1 &
PIDS="$PIDS $!"
wait_port "$SIM_PORT"

for bound in "$MAX_IN_FLIGHT" off; do
    PORT=$(free_port)
    "$BIN/compactctl" serve --listen "127.0.0.1:$PORT" --anthropic-base-url "http://127.0.0.1:$SIM_PORT" \
        --store memory --window 128000 --max-in-flight "$bound" --max-queue "$MAX_QUEUE" \
        --queue-timeout-ms "$QUEUE_TIMEOUT_MS" 2> "$DIR/proxy-$bound.log" &
    PROXY=$!
    PIDS="$PIDS $PROXY"
    wait_port "$PORT"
    python3 bench/shed_load.py "$PORT" --requests "$REQUESTS" --delay-ms "$DELAY_MS" --rate "$RATE" \
        --label "max_in_flight=$bound max_queue=$MAX_QUEUE queue_timeout_ms=$QUEUE_TIMEOUT_MS"
    grep -c '"event":"shed"' "$DIR/proxy-$bound.log" | sed 's/^/shed log lines: /'
    kill -TERM "$PROXY"
    wait "$PROXY" || true
done
