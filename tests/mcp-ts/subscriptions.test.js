// List changes reach the TypeScript v2 client in the 2026-07-28 era, over stdio and
// streamable HTTP: the client's `listChanged` handler opens `subscriptions/listen`, and a
// plugin disabled with the CLI while it is connected is announced, the list it then reads
// without the plugin's tool.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { bin, freshHome, serve } from './support.js';

function home() {
  return freshHome('toolshed-listen-');
}

/** Connects with a `listChanged` handler; resolves `changed` with the list it was given. */
async function listening(transport) {
  let announced;
  const changed = new Promise((resolve) => { announced = resolve; });
  const client = new Client({ name: 'toolshed-listen-test', version: '1.0.0' }, {
    versionNegotiation: { mode: { pin: '2026-07-28' } },
    listChanged: { tools: { autoRefresh: true, debounceMs: 0, onChanged: (error, tools) => announced({ error, tools }) } },
  });
  await client.connect(transport);
  assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
  return { client, changed };
}

async function check({ client, changed }, env, workspace) {
  const before = (await client.listTools()).tools.map((t) => t.name);
  assert.ok(before.includes('calculator'), before.join(', '));
  // Give the subscription a moment to be accepted before the change is made.
  await new Promise((r) => setTimeout(r, 300));
  execFileSync(bin, ['--workspace', workspace, 'plugins', 'disable', 'system.calculator'], { env });
  const { error, tools } = await Promise.race([
    changed,
    new Promise((_, reject) => setTimeout(() => reject(new Error('no list change within 15 s')), 15_000)),
  ]);
  assert.equal(error, null);
  const names = tools.map((t) => t.name);
  assert.ok(!names.includes('calculator') && names.includes('workspace_read'), names.join(', '));
}

test('stdio, 2026-07-28: a plugin disabled meanwhile is announced to the v2 client', { timeout: 60_000 }, async () => {
  const { workspace, env } = home();
  const session = await listening(new StdioClientTransport({
    command: bin, args: ['--workspace', workspace, 'mcp', '--catalog', 'full'], env, stderr: 'pipe',
  }));
  try {
    await check(session, env, workspace);
  } finally {
    await session.client.close();
  }
});

test('streamable HTTP, 2026-07-28: a plugin disabled meanwhile is announced to the v2 client', { timeout: 60_000 }, async () => {
  const { workspace, env } = home();
  const { url, token, stop } = await serve(workspace, env, ['--catalog', 'full']);
  try {
    const session = await listening(new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }));
    try {
      await check(session, env, workspace);
    } finally {
      await session.client.close();
    }
  } finally {
    stop();
  }
});
