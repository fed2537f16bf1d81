#!/usr/bin/env bash
# The bytes (and estimated tokens) of `tools/list` a client's model pays for: toolshed's
# default catalog beside the reference filesystem server's (issue 20's first figure).
#
# Usage: bench/catalog_size.sh
# Needs: cargo, python3, node and npm (server-filesystem is installed at the version pinned
# in bench/package.json into bench/node_modules, as for bench/mcp_stdio.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release -q -p toolshed-cli
if [ ! -d bench/node_modules/@modelcontextprotocol/server-filesystem ]; then
  (cd bench && npm ci --silent)
fi
python3 bench/catalog_size.py "$target/release/toolshed" \
  bench/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
