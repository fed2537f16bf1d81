#!/usr/bin/env bash
# toolshed mcp against @modelcontextprotocol/server-filesystem over stdio, side by side:
# cold start, 4 KiB file reads one at a time and 16 in flight, peak RSS.
#
# Usage: bench/mcp_stdio.sh [DRIVER OPTIONS]     (see bench/mcp_stdio.py --help)
# Needs: cargo, python3, node and npm. server-filesystem is installed at the version pinned
# in bench/package.json / package-lock.json into bench/node_modules (ignored by git).
#
# The driver (bench/mcp_stdio.py) is Python stdlib only: no MCP SDK in the loop. It runs
# toolshed with a private TOOLSHED_HOME in a temporary directory, removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release -q -p toolshed
bin=${CARGO_TARGET_DIR:-$PWD/target}/release/toolshed
fs=bench/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
if [ ! -f "$fs" ]; then
  (cd bench && npm ci --no-audit --no-fund --loglevel=error)
fi
exec python3 bench/mcp_stdio.py --toolshed "$bin" --filesystem "$fs" "$@"
