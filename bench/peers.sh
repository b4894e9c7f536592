#!/bin/sh
# Added latency of Compact's proxy and of two peer proxies, LiteLLM and Headroom, in front of the same
# provider (the simulator), under the same open-loop load: RATE requests/s of ~20 KB Chat Completions
# bodies, first straight to the simulator then through each proxy, each request timed from the instant
# it was scheduled (crates/proxy/examples/proxy_latency.rs --rate). Two traffic shapes per proxy:
# "agent" (SESSIONS sessions in turn, each request its session's previous one plus a reply and a new
# user message) and "fresh" (a new conversation per request). Every proxy passes the request through
# (128k window for Compact, `--no-optimize` for Headroom, LiteLLM has no compaction); Compact keeps
# its session log in memory. Prints one JSON line per run and each proxy's RSS idle and after.
# The peers are installed from PyPI into ~/.cache/compact/bench-peers (offline once installed).
# The "Proxy versus peers" table in BENCHMARKS.md comes from this script.
#
#   bench/peers.sh                               # RATE=300 REQUESTS=3000 SESSIONS=20
#   RATE=1000 REQUESTS=10000 SESSIONS=100 bench/peers.sh
#   PEERS="compact litellm" bench/peers.sh
#   SIM_ENCODING=estimate SIM_THREADS=2 RATE=1000 PEERS=compact bench/peers.sh
# SIM_ENCODING / SIM_THREADS are the simulator's --encoding and --threads: at 1,000 requests/s its
# exact counting (two tokenizer passes per request, on one thread) saturates it before any proxy.
#   PINNED=1 SIM_ENCODING=estimate RATE=1000 PEERS=compact bench/peers.sh
# PINNED=1: each proxy on core 0 (taskset -c 0), the simulator and the load generator on core 1.
# BUILD=0 BIN=DIR: the binaries in DIR (DIR/examples/proxy_latency too), nothing built.
# STORE: Compact's session store (memory by default; sqlite: a file in the run's directory).
set -eu
cd "$(dirname "$0")/.."
RATE=${RATE:-300}
REQUESTS=${REQUESTS:-3000}
SESSIONS=${SESSIONS:-20}
PEERS=${PEERS:-compact litellm headroom}
VENV=${PEERS_VENV:-$HOME/.cache/compact/bench-peers}
if [ "${BUILD:-1}" != 0 ]; then
    cargo build --release -q -p compactctl -p compact-sim
    cargo build --release -q -p compact-proxy --example proxy_latency
fi
BIN=${BIN:-"${CARGO_TARGET_DIR:-target}/release"}
if { [ ! -x "$VENV/bin/litellm" ] || [ ! -x "$VENV/bin/headroom" ]; } && [ "$PEERS" != compact ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q 'litellm[proxy]' 'headroom-ai[proxy]'
fi
DIR=$(mktemp -d)
if [ "${PINNED:-0}" = 1 ]; then SERVER="taskset -c 0"; CLIENT="taskset -c 1"; else SERVER=""; CLIENT=""; fi
case "${STORE:-memory}" in sqlite) STORE_URL="sqlite:$DIR/sessions.db" ;; *) STORE_URL=${STORE:-memory} ;; esac
PIDS=""
cleanup() { for p in $PIDS; do kill "$p" 2>/dev/null || true; done; rm -rf "$DIR"; }
trap cleanup EXIT
. bench/lib.sh
# RSS of a process and its children (uvicorn workers).
tree_rss_kb() { total=0; for p in $1 $(pgrep -P "$1" || true); do total=$((total + $(rss_kb "$p"))); done; echo "$total"; }

SIM_PORT=$(free_port)
$CLIENT "$BIN/compact-sim" --port "$SIM_PORT" --window 128000 --encoding "${SIM_ENCODING:-o200k_base}" \
    --threads "${SIM_THREADS:-1}" > "$DIR/sim.log" 2>&1 &
PIDS="$PIDS $!"
wait_port "$SIM_PORT"
KEY=sk-bench-master-0123456789abcdef
cat > "$DIR/litellm.yaml" <<YAML
model_list:
  - model_name: bench-model
    litellm_params: {model: openai/bench-model, api_base: "http://127.0.0.1:$SIM_PORT/v1", api_key: sk-bench}
litellm_settings: {set_verbose: false}
YAML

for peer in $PEERS; do
    PORT=$(free_port)
    case "$peer" in
        compact)
            $SERVER "$BIN/compactctl" serve --listen "127.0.0.1:$PORT" --openai-base-url "http://127.0.0.1:$SIM_PORT" \
                --store "$STORE_URL" --window 128000 2> "$DIR/$peer.log" & ;;
        litellm)
            LITELLM_MASTER_KEY=$KEY LITELLM_LOCAL_MODEL_COST_MAP=True LITELLM_LOG=ERROR \
                $SERVER "$VENV/bin/litellm" --config "$DIR/litellm.yaml" --host 127.0.0.1 --port "$PORT" > "$DIR/$peer.log" 2>&1 & ;;
        headroom)
            HEADROOM_TELEMETRY=off $SERVER "$VENV/bin/headroom" proxy --host 127.0.0.1 --port "$PORT" \
                --openai-api-url "http://127.0.0.1:$SIM_PORT" --no-optimize --no-cache --no-rate-limit \
                > "$DIR/$peer.log" 2>&1 & ;;
        *) echo "unknown peer $peer" >&2; exit 2 ;;
    esac
    PID=$!
    PIDS="$PIDS $PID"
    wait_port "$PORT" 600
    sleep 2
    IDLE=$(tree_rss_kb "$PID")
    for shape in agent fresh; do
        if [ "$shape" = agent ]; then S=$SESSIONS; else S=0; fi
        PROXY_LATENCY_TOKEN=$KEY $CLIENT "$BIN/examples/proxy_latency" "http://127.0.0.1:$SIM_PORT" "http://127.0.0.1:$PORT" \
            "$REQUESTS" --rate "$RATE" --sessions "$S" --label "$peer-$shape"
    done
    echo "{\"label\": \"$peer\", \"rss_idle_kb\": $IDLE, \"rss_after_kb\": $(tree_rss_kb "$PID")}"
    kill -TERM "$PID"
    wait "$PID" 2>/dev/null || true
done
