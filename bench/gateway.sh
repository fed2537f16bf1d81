#!/usr/bin/env bash
# An MCP server mounted in toolshed (kind `mcp`) against the same server called directly,
# with the same driver and the same call: the Rust peer rust-mcp-filesystem reading a
# 4 KiB file (`read_text_file`), directly and as `fs__read_text_file` through
# `toolshed mcp`. What it shows is what the gateway adds per call (latency one at a time,
# throughput with 16 in flight, memory, CPU).
#
# Usage: bench/gateway.sh [DRIVER OPTIONS]     (see bench/mcp-driver/src/main.rs)
# Needs: cargo. rust-mcp-filesystem is installed at RUST_FS_VERSION with `cargo install
# --locked` into bench/peers/ (ignored by git, reused while the version holds), as
# bench/mcp_stdio.sh does.
set -euo pipefail
cd "$(dirname "$0")/.."

target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release -q -p toolshed
bin=$target/release/toolshed
cargo build --release -q --manifest-path bench/mcp-driver/Cargo.toml --target-dir "$target"
version=${RUST_FS_VERSION:-0.4.5}
peer=bench/peers/rust-mcp-filesystem-$version
if [ ! -x "$peer/bin/rust-mcp-filesystem" ]; then
  cargo install --locked --quiet rust-mcp-filesystem --version "$version" \
    --root "$peer" --target-dir bench/peers/target
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"$target/release/mcp-driver" --toolshed "$bin" --rust-filesystem "$peer/bin/rust-mcp-filesystem" --gateway "$@"
