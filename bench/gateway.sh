#!/usr/bin/env bash
# An MCP server mounted in toolshed (kind `mcp`) against the same server called directly,
# with the same driver and the same call, for two servers: the reference
# @modelcontextprotocol/server-filesystem (Node) and the Rust peer rust-mcp-filesystem,
# each reading a 4 KiB file (`read_text_file`), directly and as `fs__read_text_file`
# through `toolshed mcp`. What it shows is what the gateway adds per call (latency one at
# a time, throughput with 16 in flight, memory, CPU).
#
# Usage: bench/gateway.sh [DRIVER OPTIONS]     (see bench/mcp-driver/src/main.rs)
#        PEERS=node bench/gateway.sh  (only server-filesystem; PEERS=rust only the Rust peer)
# Needs: cargo, node and npm. The servers are installed as for bench/mcp_stdio.sh:
# server-filesystem into bench/node_modules, rust-mcp-filesystem by bench/rust_fs_peer.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release -q -p toolshed-cli
bin=$target/release/toolshed
cargo build --release -q --manifest-path bench/mcp-driver/Cargo.toml --target-dir "$target"
peers=${PEERS:-node,rust}
if [[ $peers == *node* ]]; then
  fs=bench/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
  if [ ! -f "$fs" ]; then
    (cd bench && npm ci --no-audit --no-fund --loglevel=error)
  fi
  echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  "$target/release/mcp-driver" --toolshed "$bin" --filesystem "$fs" --gateway "$@"
  echo
fi
if [[ $peers == *rust* ]]; then
  source bench/rust_fs_peer.sh
  echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  "$target/release/mcp-driver" --toolshed "$bin" --rust-filesystem "$rust_fs" --gateway "$@"
fi
