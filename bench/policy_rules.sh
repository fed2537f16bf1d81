#!/usr/bin/env bash
# The pipeline's cost of policy rules: toolshed mcp without rules against toolshed mcp with
# the ten rules of bench/policy-rules.toml, side by side in one run (interleaved rounds),
# through the same driver and calls as bench/mcp_stdio.sh (workspace_read of a 4 KiB file).
# Usage: bench/policy_rules.sh [DRIVER OPTIONS]     (see bench/mcp-driver/src/main.rs)
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release -q -p toolshed-cli
cargo build --release -q --manifest-path bench/mcp-driver/Cargo.toml --target-dir "$target"
exec "$target/release/mcp-driver" --toolshed "$target/release/toolshed" \
  --versus-config bench/policy-rules.toml "$@"
