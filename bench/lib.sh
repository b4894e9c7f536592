# Shell helpers shared by the bench scripts that start servers (sourced, not run).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# wait_port PORT [TENTHS]: waits until 127.0.0.1:PORT accepts (default 10 s), else exits 1.
wait_port() { for _ in $(seq "${2:-100}"); do python3 -c "import socket; socket.create_connection(('127.0.0.1',$1)).close()" 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; exit 1; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
hwm_kb() { awk '/^VmHWM/ {print $2}' "/proc/$1/status"; }
