#!/bin/sh
# The real agent CLIs' sessions, direct and through `compactctl serve`: tokens sent, cached and
# written, and the cost at cache pricing (input $3/M, cache writes 1.25x, cache reads 0.1x, output
# $15/M), per session, from the usage the provider simulator reported. The same task for every run:
# 14 shell commands of a few thousand tokens each (crates/cli/tests/cli/clients.rs). Prints the
# lines the client tests print; BENCHMARKS.md, "Real clients", holds them as a table.
#
#   bench/clients.sh             # the pinned CLIs (scripts/clients)
#   bench/clients.sh --latest    # the newest published ones
set -eu
cd "$(dirname "$0")/.."
eval "$(scripts/clients "$@")"
export COMPACT_REQUIRE_CLIENTS=1
echo "Claude Code $COMPACT_CLAUDE_VERSION, Codex CLI $COMPACT_CODEX_VERSION"
cargo nextest run -p compactctl --locked -E 'test(/clients::/)' --no-capture 2>&1 |
    grep -E '(direct|through the proxy|with the hooks)(:|, window)|^ *Summary' || true
