#!/usr/bin/env bash
# REST calls through HAProxy: one toolshed on SQLite, one and two on one Postgres, side by
# side in one run (bench/replicas.py says what and how).
#
# Usage: bench/replicas.sh [--seconds 10] [--rounds 3] [--connections 1,32]
# Needs: cargo, python3, wrk and haproxy (Debian: apt-get install wrk haproxy), Postgres
# (Debian: apt-get install postgresql; a throwaway cluster is made and removed).
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in wrk haproxy; do
  if ! command -v "$tool" >/dev/null; then
    echo "bench/replicas.sh needs $tool: apt-get install wrk haproxy" >&2
    exit 1
  fi
done
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  echo "bench/replicas.sh needs Postgres: apt-get install postgresql" >&2
  exit 1
fi
target=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release -q -p toolshed-cli
exec python3 bench/replicas.py --toolshed "$target/release/toolshed" "$@"
