#!/usr/bin/env bash
# exec_command round-trip latency through the whole pipeline against a raw spawn of the
# same command (`bash -c true`, `bash -c 'echo hi'`), and PTY write/read round trips.
# Medians over interleaved rounds, all in one run. Usage: bench/exec_latency.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p toolshed --example exec_latency
exec "${CARGO_TARGET_DIR:-$PWD/target}/release/examples/exec_latency" "$@"
