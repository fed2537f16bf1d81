#!/usr/bin/env bash
# toolshed mcp over stdio side by side with @modelcontextprotocol/server-filesystem, then
# with the Rust peer rust-mcp-filesystem: cold start, 4 KiB file reads one at a time and 16
# in flight, peak RSS, CPU per call. The load average is printed before each comparison.
#
# Usage: bench/mcp_stdio.sh [DRIVER OPTIONS]     (see bench/mcp-driver/src/main.rs)
#        PEERS=node bench/mcp_stdio.sh  (only server-filesystem; PEERS=rust only the Rust peer)
#        DRIVER=python bench/mcp_stdio.sh [OPTIONS]  (the Python driver, bench/mcp_stdio.py)
# Needs: cargo, node and npm (python3 for DRIVER=python). server-filesystem is installed at
# the version pinned in bench/package.json / package-lock.json into bench/node_modules
# (ignored by git); rust-mcp-filesystem at RUST_FS_VERSION with `cargo install --locked`
# into bench/peers/ (its own target dir; ignored by git, reused while the version holds).
#
# The default driver, bench/mcp-driver, is a small Rust program (std and serde_json only)
# built as a package of its own, outside the workspace, so `cargo test --workspace` never
# compiles it. It costs about a tenth of the Python driver's CPU per call, which matters on
# a two-core machine where client and server share the cores. Both drivers speak
# newline-delimited JSON-RPC with no MCP SDK in the loop and run toolshed with a private
# TOOLSHED_HOME in a temporary directory, removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release -q -p toolshed-cli
bin=$target/release/toolshed
scripts/text-order/check "$bin"
fs=bench/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
if [ ! -f "$fs" ]; then
  (cd bench && npm ci --no-audit --no-fund --loglevel=error)
fi
if [ "${DRIVER:-rust}" = python ]; then
  exec python3 bench/mcp_stdio.py --toolshed "$bin" --filesystem "$fs" "$@"
fi
cargo build --release -q --manifest-path bench/mcp-driver/Cargo.toml --target-dir "$target"
peers=${PEERS:-node,rust}
if [[ $peers == *node* ]]; then
  echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  "$target/release/mcp-driver" --toolshed "$bin" --filesystem "$fs" "$@"
  echo
fi
if [[ $peers == *rust* ]]; then
  source bench/rust_fs_peer.sh
  echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  "$target/release/mcp-driver" --toolshed "$bin" --rust-filesystem "$rust_fs" "$@"
fi
