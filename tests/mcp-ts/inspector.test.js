// `npx @modelcontextprotocol/inspector --cli <toolshed> mcp --method tools/list`, with the
// inspector's `--strict` check of every tool schema's portability across model providers.
// The inspector is pinned in package.json; the binary comes from scripts/test (TOOLSHED_BIN).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const bin = process.env.TOOLSHED_BIN;

test('the inspector lists every tool and its --strict schema check passes', () => {
  assert.ok(bin, 'TOOLSHED_BIN is not set; run these tests through scripts/test');
  const dir = mkdtempSync(join(tmpdir(), 'toolshed-inspector-'));
  const workspace = join(dir, 'workspace');
  mkdirSync(workspace);
  const home = join(dir, 'home');
  const run = spawnSync(
    'npx',
    [
      '--no-install', 'mcp-inspector', '--cli',
      '-e', `TOOLSHED_HOME=${home}`,
      bin, '--workspace', workspace, 'mcp',
      '--method', 'tools/list', '--strict',
    ],
    { encoding: 'utf8', timeout: 120_000, env: { ...process.env, MCP_CATALOG_PATH: join(dir, 'catalog.json') } },
  );
  assert.equal(run.status, 0, `inspector exited ${run.status}:\n${run.stderr}`);
  const tools = JSON.parse(run.stdout).tools.map((t) => t.name);
  // The calculator is on demand: found through tool_search (docs/mcp.md).
  assert.ok(tools.includes('workspace_read') && tools.includes('tool_search'), tools.join(', '));
  assert.match(run.stderr, /(^|\n)0 errors/, run.stderr);
});
