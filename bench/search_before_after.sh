#!/usr/bin/env bash
# workspace_grep and workspace_glob of two toolshed builds (an older one and a newer one)
# beside ripgrep, side by side on one generated tree: a change that must not slow search.
#
# Usage: bench/search_before_after.sh BEFORE_BIN AFTER_BIN [FILES] [RUNS]
# Needs: python3, ripgrep (rg) and hyperfine (Debian packages `ripgrep`, `hyperfine`).
set -euo pipefail
before=$1; after=$2; files=${3:-50000}; runs=${4:-15}
cd "$(dirname "$0")/.."
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
python3 bench/gen_tree.py "$work/tree" "$files"
mkdir -p "$work/hb" "$work/ha"
b="env TOOLSHED_HOME=$work/hb $before --workspace $work/tree call"
a="env TOOLSHED_HOME=$work/ha $after --workspace $work/tree call"
cd "$work/tree"
hyperfine --style basic --warmup 3 --runs "$runs" --export-json "$work/rare.json" \
  -n rg "rg --no-require-git needle_token" \
  -n before "$b workspace_grep --args '{\"pattern\":\"needle_token\",\"max_matches\":100000}'" \
  -n after "$a workspace_grep --args '{\"pattern\":\"needle_token\",\"max_matches\":100000}'" >/dev/null
hyperfine --style basic --warmup 3 --runs "$runs" --export-json "$work/common.json" \
  -n rg "rg --no-require-git 'async \w+'" \
  -n before "$b workspace_grep --args '{\"pattern\":\"async \\\\w+\",\"max_matches\":100000}'" \
  -n after "$a workspace_grep --args '{\"pattern\":\"async \\\\w+\",\"max_matches\":100000}'" >/dev/null
hyperfine --style basic --warmup 3 --runs "$runs" --export-json "$work/glob.json" \
  -n rg "rg --no-require-git --files -g '*.rs'" \
  -n before "$b workspace_glob --args '{\"patterns\":[\"*.rs\"],\"max_results\":100000}'" \
  -n after "$a workspace_glob --args '{\"patterns\":[\"*.rs\"],\"max_results\":100000}'" >/dev/null
python3 - "$work" <<'PY'
import json, sys, statistics
work = sys.argv[1]
print("| case | rg (ms) | before (ms) | after (ms) | after / before |")
print("|---|---|---|---|---|")
for name in ["rare", "common", "glob"]:
    r = {x["command"]: statistics.median(x["times"]) * 1000 for x in json.load(open(f"{work}/{name}.json"))["results"]}
    print(f"| {name} | {r['rg']:.1f} | {r['before']:.1f} | {r['after']:.1f} | {r['after']/r['before']:.2f}× |")
PY
