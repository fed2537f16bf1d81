#!/usr/bin/env bash
# MCP over streamable HTTP and the REST door, driven by wrk, side by side in one run:
# toolshed's /mcp and /api/v1 (workspace_read of a 4 KiB file) and
# @modelcontextprotocol/server-everything over streamable HTTP (its `echo` tool), at one
# connection and at 64. Every reply is checked; the load average is printed with each run.
#
# Usage: bench/mcp_http.sh [--seconds 10] [--rounds 3]
# Needs: cargo, python3, node and npm, wrk (Debian: apt-get install wrk). server-everything
# is installed at the version pinned in bench/package.json into bench/node_modules.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v wrk >/dev/null; then
  echo "bench/mcp_http.sh needs wrk: apt-get install wrk" >&2
  exit 1
fi
target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release -q -p toolshed-cli
everything=bench/node_modules/@modelcontextprotocol/server-everything/dist/index.js
if [ ! -f "$everything" ]; then
  (cd bench && npm ci --no-audit --no-fund --loglevel=error)
fi
exec python3 bench/mcp_http.py --toolshed "$target/release/toolshed" --everything "$everything" "$@"
