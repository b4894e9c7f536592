#!/bin/sh
# CPU time per request of a proxy in front of the same fake provider (the simulator), in one run:
# nginx `proxy_pass` (Debian's nginx, one worker, keep-alive to the upstream), `compactctl serve` on
# each store (memory, SQLite, and PostgreSQL when a server is there) and, when installed, LiteLLM and
# Headroom (the virtualenv of bench/peers.sh). For each, REQUESTS requests one at a time over one
# keep-alive connection, of two shapes: "agent" (one session growing by a turn per request: the
# reply's assistant message and a new user message appended, as an agent loop does) and "fresh" (the
# same ~20 KB Chat Completions conversation as a new session each time). The figure is the server
# processes' own utime + stime (/proc/<pid>/stat, all threads) over the requests, divided by
# REQUESTS; "sched" is the same from the threads' schedstat (nanoseconds, live threads only). The
# client is crates/proxy/examples/proxy_cpu.rs. The "Proxy CPU per request" table of BENCHMARKS.md
# comes from this script.
#
#   bench/proxy_cpu.sh                          # release build, REQUESTS=1000, every store
#   REQUESTS=600 STORES="memory sqlite" bench/proxy_cpu.sh
#   BUILD=0 bench/proxy_cpu.sh                  # the release binaries as they are
#   BUILD=0 BIN=/tmp/old CPU_CLIENT=target/release/examples/proxy_cpu bench/proxy_cpu.sh   # another build
#   POSTGRES_URL=postgres://... bench/proxy_cpu.sh   # else scripts/services starts one (POSTGRES=0: none)
#   PINNED=1 ...                                # each server on core 0 (taskset), client and simulator on core 1
set -eu
cd "$(dirname "$0")/.."
REQUESTS=${REQUESTS:-1000}
STORES=${STORES:-memory sqlite postgres}
SHAPES=${SHAPES:-agent fresh}
VENV=${PEERS_VENV:-$HOME/.cache/compact/bench-peers}
if [ "${BUILD:-1}" != 0 ]; then
    cargo build --release -q -p compactctl -p compact-sim
    cargo build --release -q -p compact-proxy --example proxy_cpu
fi
BIN=${BIN:-"${CARGO_TARGET_DIR:-target}/release"}
CPU_CLIENT=${CPU_CLIENT:-"$BIN/examples/proxy_cpu"}
HZ=$(getconf CLK_TCK)
DIR=$(mktemp -d)
PIDS=""
SERVICES=""
cleanup() {
    for p in $PIDS; do kill "$p" 2>/dev/null || true; done
    if [ -n "$SERVICES" ]; then scripts/services stop "$SERVICES" >/dev/null 2>&1 || true; fi
    rm -rf "$DIR"
}
trap cleanup EXIT
. bench/lib.sh
if [ "${PINNED:-0}" = 1 ]; then SERVER="taskset -c 0"; CLIENT="taskset -c 1"; else SERVER=""; CLIENT=""; fi

SIM_PORT=$(free_port)
# The estimate keeps the simulator cheap (its CPU is not measured, but it shares the machine).
$CLIENT "$BIN/compact-sim" --port "$SIM_PORT" --window 128000 --encoding estimate > "$DIR/sim.log" 2>&1 &
PIDS="$PIDS $!"
wait_port "$SIM_PORT"

# measure LABEL PORT PIDS: both shapes against 127.0.0.1:PORT, the CPU of PIDS (comma separated).
measure() {
    for shape in $SHAPES; do
        $CLIENT "$CPU_CLIENT" "http://127.0.0.1:$2" "$REQUESTS" --pids "$3" --shape "$shape" \
            --label "$1" --clk-tck "$HZ"
    done
}

stop() { kill -TERM "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

# nginx: one worker, the request body kept in memory (a 20-120 KB body would otherwise go to a
# temporary file), HTTP/1.1 keep-alive to the upstream, access log on as shipped.
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
if [ -x "$NGINX" ]; then
    PORT=$(free_port)
    mkdir -p "$DIR/nginx/logs" "$DIR/nginx/tmp"
    cat > "$DIR/nginx/nginx.conf" <<CONF
worker_processes 1;
pid $DIR/nginx/nginx.pid;
error_log $DIR/nginx/logs/error.log warn;
events { worker_connections 256; }
http {
    access_log $DIR/nginx/logs/access.log;
    client_body_temp_path $DIR/nginx/tmp/body;
    proxy_temp_path $DIR/nginx/tmp/proxy;
    fastcgi_temp_path $DIR/nginx/tmp/fastcgi;
    uwsgi_temp_path $DIR/nginx/tmp/uwsgi;
    scgi_temp_path $DIR/nginx/tmp/scgi;
    client_max_body_size 16m;
    client_body_buffer_size 4m;
    proxy_buffer_size 64k;
    proxy_buffers 8 64k;
    keepalive_requests 100000;
    upstream sim { server 127.0.0.1:$SIM_PORT; keepalive 8; }
    server {
        listen 127.0.0.1:$PORT;
        location / {
            proxy_pass http://sim;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
CONF
    $SERVER "$NGINX" -p "$DIR/nginx" -c "$DIR/nginx/nginx.conf" -g 'daemon off;' 2> "$DIR/nginx/stderr" &
    NPID=$!
    PIDS="$PIDS $NPID"
    wait_port "$PORT"
    sleep 0.5
    WORKERS=$(pgrep -P "$NPID" | paste -sd, -)
    measure nginx "$PORT" "$NPID,$WORKERS"
    stop "$NPID"
else
    echo '{"label": "nginx", "status": "not installed"}'
fi

for store in $STORES; do
    case "$store" in
        memory) URL=memory ;;
        sqlite) URL="sqlite:$DIR/sessions.db" ;;
        postgres)
            URL=${POSTGRES_URL:-${COMPACT_TEST_POSTGRES_URL:-}}
            if [ -z "$URL" ] && [ "${POSTGRES:-1}" = 1 ]; then
                if services=$(scripts/services start 2> "$DIR/services.log"); then
                    eval "$services"
                    SERVICES=$COMPACT_SERVICES_DIR
                    URL=$COMPACT_TEST_POSTGRES_URL
                fi
            fi
            if [ -z "$URL" ]; then echo '{"label": "compact-postgres", "status": "no server"}'; continue; fi ;;
        *) echo "unknown store $store" >&2; exit 2 ;;
    esac
    PORT=$(free_port)
    $SERVER "$BIN/compactctl" serve --listen "127.0.0.1:$PORT" --openai-base-url "http://127.0.0.1:$SIM_PORT" \
        --store "$URL" --window 128000 2> "$DIR/compact-$store.log" &
    CPID=$!
    PIDS="$PIDS $CPID"
    wait_port "$PORT"
    measure "compact-$store" "$PORT" "$CPID"
    stop "$CPID"
done

KEY=sk-bench-master-0123456789abcdef
export PROXY_LATENCY_TOKEN=$KEY
for peer in litellm headroom; do
    if [ ! -x "$VENV/bin/$peer" ]; then
        echo "{\"label\": \"$peer\", \"status\": \"not installed\"}"
        continue
    fi
    PORT=$(free_port)
    case "$peer" in
        litellm)
            cat > "$DIR/litellm.yaml" <<YAML
model_list:
  - model_name: bench-model
    litellm_params: {model: openai/bench-model, api_base: "http://127.0.0.1:$SIM_PORT/v1", api_key: sk-bench}
litellm_settings: {set_verbose: false}
YAML
            LITELLM_MASTER_KEY=$KEY LITELLM_LOCAL_MODEL_COST_MAP=True LITELLM_LOG=ERROR \
                $SERVER "$VENV/bin/litellm" --config "$DIR/litellm.yaml" --host 127.0.0.1 --port "$PORT" \
                > "$DIR/$peer.log" 2>&1 & ;;
        headroom)
            HEADROOM_TELEMETRY=off $SERVER "$VENV/bin/headroom" proxy --host 127.0.0.1 --port "$PORT" \
                --openai-api-url "http://127.0.0.1:$SIM_PORT" --no-optimize --no-cache --no-rate-limit \
                > "$DIR/$peer.log" 2>&1 & ;;
    esac
    PPID_=$!
    PIDS="$PIDS $PPID_"
    wait_port "$PORT" 600
    sleep 2
    ALL=$(echo "$PPID_ $(pgrep -P "$PPID_" || true)" | tr -s ' \n' ',' | sed 's/,$//')
    measure "$peer" "$PORT" "$ALL"
    stop "$PPID_"
done
