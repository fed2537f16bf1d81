// Drives `toolshed mcp` (stdio) with the TypeScript MCP SDK client.
// The binary is built by scripts/test, which points TOOLSHED_BIN at it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const bin = process.env.TOOLSHED_BIN;

async function connect(...flags) {
  assert.ok(bin, 'TOOLSHED_BIN is not set; run these tests through scripts/test');
  const dir = mkdtempSync(join(tmpdir(), 'toolshed-ts-'));
  const workspace = join(dir, 'workspace');
  mkdirSync(workspace);
  writeFileSync(join(workspace, 'hello.txt'), 'hello from the workspace\n');
  const transport = new StdioClientTransport({
    command: bin,
    args: ['--workspace', workspace, 'mcp', ...flags],
    env: { PATH: process.env.PATH, TOOLSHED_HOME: join(dir, 'home'), TOOLSHED_CURATED_DIR: join(dir, 'none') },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'toolshed-ts-test', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

async function withClient(flags, body) {
  const client = await connect(...flags);
  try {
    await body(client);
  } finally {
    await client.close();
  }
}

test('lists the tools with honest annotations', () =>
  withClient(['--catalog', 'full'], async (client) => {
    const { tools } = await client.listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    assert.ok(byName.calculator, 'calculator is listed');
    assert.equal(byName.calculator.annotations.readOnlyHint, true);
    // Hints at MCP's defaults are left out: an absent destructiveHint reads as true.
    assert.equal(byName.workspace_delete.annotations.destructiveHint, undefined);
    assert.equal(byName.workspace_delete.annotations.openWorldHint, false);
    assert.equal(byName.workspace_read.inputSchema.type, 'object');
    const names = tools.map((t) => t.name);
    assert.deepEqual(names, [...names].sort(), 'tools come in a stable order');
  }));

test('calls a tool', () =>
  withClient([], async (client) => {
    const result = await client.callTool({ name: 'calculator', arguments: { expression: '2+3*4' } });
    assert.ok(!result.isError);
    assert.equal(result.content[0].text, '14');
    const read = await client.callTool({ name: 'workspace_read', arguments: { path: 'hello.txt' } });
    assert.match(read.content[0].text, /hello from the workspace/);
  }));

test('bad arguments come back as an isError result naming the problem', () =>
  withClient([], async (client) => {
    const result = await client.callTool({ name: 'calculator', arguments: { expression: 5 } });
    assert.equal(result.isError, true);
    assert.match(result.content[0].text, /\/expression/);
  }));

test('an unknown tool is a protocol error', () =>
  withClient([], async (client) => {
    await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), /no_such_tool/);
  }));

test('--tools narrows what the client sees', () =>
  withClient(['--tools', 'calculator'], async (client) => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['calculator']);
  }));

test('the default catalog leaves the utilities to tool_search and still runs them by name', () =>
  withClient([], async (client) => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    assert.ok(names.includes('workspace_read') && names.includes('tool_search'), names.join(', '));
    assert.ok(!names.includes('calculator'), names.join(', '));
    const search = tools.find((t) => t.name === 'tool_search');
    assert.match(search.description, /calculator/);
    const result = await client.callTool({ name: 'calculator', arguments: { expression: '6*7' } });
    assert.ok(!result.isError, JSON.stringify(result));
    assert.match(result.content[0].text, /42/);
  }));
