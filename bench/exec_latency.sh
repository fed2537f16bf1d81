#!/usr/bin/env bash
# exec_command round-trip latency through the whole pipeline, unsandboxed and sandboxed
# (the default workspace-write sandbox), against a raw spawn of the same command
# (`bash -c true`, `bash -c 'echo hi'`), and PTY write/read round trips.
# Medians over interleaved rounds, all in one run. Usage: bench/exec_latency.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p toolshed-cli --bins --example exec_latency
target="${CARGO_TARGET_DIR:-$PWD/target}/release"
# The helper toolshed runs commands through (the small one, as an installed toolshed does).
TOOLSHED_BIN="$target/toolshed-sandbox" exec "$target/examples/exec_latency" "$@"
