#!/usr/bin/env bash
# workspace_grep and workspace_glob against ripgrep on a generated tree, side by side.
#
# Usage: bench/search_vs_rg.sh [FILES] [RUNS]     (defaults: 50000 files, 15 runs)
# Needs: python3, ripgrep (rg) and hyperfine (Debian packages `ripgrep`, `hyperfine`);
# installs the two Debian packages when missing and apt-get is available.
#
# Both sides run as whole processes from the same directory, alternately, with warm-up
# runs, so they see the same page cache. toolshed's side includes its start-up (opening
# the state database, discovering plugins, writing the audit row). rg runs with
# --no-require-git so that it honours .gitignore outside a git repository, as toolshed does.
set -euo pipefail
cd "$(dirname "$0")/.."
files=${1:-50000}
runs=${2:-15}

for tool in rg hyperfine; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    pkg=$([ "$tool" = rg ] && echo ripgrep || echo hyperfine)
    if command -v apt-get >/dev/null 2>&1; then
      apt-get install -y -qq "$pkg" >/dev/null || { apt-get update -qq && apt-get install -y -qq "$pkg" >/dev/null; }
    else
      echo "bench: $tool is missing; install the $pkg package" >&2; exit 1
    fi
  fi
done

cargo build --release -q -p toolshed-cli
bin=$PWD/target/release/toolshed
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tree=$work/tree
python3 bench/gen_tree.py "$tree" "$files"
export TOOLSHED_HOME=$work/home
ts="$bin --workspace $tree call"

cd "$tree"
hyperfine --style basic --warmup 3 --runs "$runs" --export-json "$work/grep_rare.json" \
  -n rg "rg --no-require-git needle_token" \
  -n toolshed "$ts workspace_grep --args '{\"pattern\":\"needle_token\",\"max_matches\":100000}'" >/dev/null
hyperfine --style basic --warmup 3 --runs "$runs" --export-json "$work/grep_common.json" \
  -n rg "rg --no-require-git 'async \w+'" \
  -n toolshed "$ts workspace_grep --args '{\"pattern\":\"async \\\\w+\",\"max_matches\":100000}'" >/dev/null
hyperfine --style basic --warmup 3 --runs "$runs" --export-json "$work/glob.json" \
  -n rg "rg --no-require-git --files -g '*.rs'" \
  -n toolshed "$ts workspace_glob --args '{\"patterns\":[\"*.rs\"],\"max_results\":100000}'" >/dev/null

# Same answers: the number of matching lines and files must agree.
rg_lines=$(rg --no-require-git needle_token | wc -l)
ts_lines=$($ts workspace_grep --args '{"pattern":"needle_token","max_matches":100000}' | grep -c ':[0-9]*:' || true)
rg_globs=$(rg --no-require-git --files -g '*.rs' | wc -l)
ts_globs=$($ts workspace_glob --args '{"patterns":["*.rs"],"max_results":100000}' | wc -l)
cd - >/dev/null

python3 - "$work" "$files" "$rg_lines" "$ts_lines" "$rg_globs" "$ts_globs" <<'PY'
import json, sys, statistics
work, files, rg_lines, ts_lines, rg_globs, ts_globs = sys.argv[1:]
print(f"tree: {files} files; matches rg={rg_lines} toolshed={ts_lines}; *.rs files rg={rg_globs} toolshed={ts_globs}")
print("| case | rg median (ms) | toolshed median (ms) | toolshed / rg |")
print("|---|---|---|---|")
for name, label in [("grep_rare", "grep `needle_token` (rare)"), ("grep_common", "grep `async \\w+` (common)"), ("glob", "glob `*.rs`")]:
    results = {r["command"]: statistics.median(r["times"]) * 1000 for r in json.load(open(f"{work}/{name}.json"))["results"]}
    print(f"| {label} | {results['rg']:.1f} | {results['toolshed']:.1f} | {results['toolshed'] / results['rg']:.2f}× |")
PY
