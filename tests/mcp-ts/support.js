// What the TypeScript tests share: a fresh home and workspace, and a `toolshed serve`
// started on them (its MCP URL, admin token and a way to stop it).

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const bin = process.env.TOOLSHED_BIN;

/** A temporary workspace and home, and the environment that points toolshed at them. */
export function freshHome(prefix) {
  assert.ok(bin, 'TOOLSHED_BIN is not set; run these tests through scripts/test');
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const workspace = join(dir, 'workspace');
  mkdirSync(workspace);
  const home = join(dir, 'home');
  const env = { PATH: process.env.PATH, HOME: home, TOOLSHED_HOME: home, TOOLSHED_CURATED_DIR: join(dir, 'none') };
  return { dir, workspace, env };
}

/** Starts `toolshed serve --port 0` (and `args`); resolves once it listens. */
export async function serve(workspace, env, args = []) {
  const token = spawnSync(bin, ['token'], { env, encoding: 'utf8' }).stdout.trim();
  const server = spawn(bin, ['--workspace', workspace, 'serve', '--port', '0', ...args],
    { env, stdio: ['ignore', 'ignore', 'pipe'] });
  const url = await new Promise((resolve, reject) => {
    let seen = '';
    server.stderr.on('data', (chunk) => {
      seen += chunk;
      // Only a whole line: a chunk may end part way through the address.
      const found = seen.match(/^listening on (http\S+)\r?\n/m);
      if (found) resolve(found[1]);
    });
    server.on('exit', () => reject(new Error(`toolshed serve exited: ${seen}`)));
    setTimeout(() => { server.kill('SIGKILL'); reject(new Error(`toolshed serve did not listen within 30 s: ${seen}`)); }, 30_000).unref();
  });
  return { url, token, stop: () => server.kill('SIGTERM') };
}
