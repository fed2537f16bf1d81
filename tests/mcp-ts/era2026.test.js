// The 2026-07-28 era through the TypeScript v2 client (`@modelcontextprotocol/client`),
// pinned to that revision, over stdio and over streamable HTTP: a skill offered as a
// prompt, a mounted server's resource and prompt, and a tool call. Replies in this era
// must carry `resultType`; the client refuses one without it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import { cpSync, existsSync, mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { SkillsClient } from '@modelcontextprotocol/client/ext/skills';
import { serve } from './support.js';

const bin = process.env.TOOLSHED_BIN;
const here = dirname(fileURLToPath(import.meta.url));
const everything = join(here, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');
const skill = join(here, '..', 'fixtures', 'skills', 'csv-rows');
const ERA = { versionNegotiation: { mode: { pin: '2026-07-28' } } };

/** A workspace with a skill, and a home with server-everything mounted. */
function setUp() {
  assert.ok(bin, 'TOOLSHED_BIN is not set; run these tests through scripts/test');
  const dir = mkdtempSync(join(tmpdir(), 'toolshed-era-'));
  const workspace = join(dir, 'workspace');
  mkdirSync(join(workspace, '.claude', 'skills'), { recursive: true });
  cpSync(skill, join(workspace, '.claude', 'skills', 'csv-rows'), { recursive: true });
  const home = join(dir, 'home');
  const env = { PATH: process.env.PATH, HOME: home, TOOLSHED_HOME: home, TOOLSHED_CURATED_DIR: join(dir, 'none') };
  const added = spawnSync(bin, ['--workspace', workspace, 'mcp', 'add', 'everything', '--', 'node', everything, 'stdio'],
    { env, encoding: 'utf8', timeout: 60_000 });
  assert.equal(added.status, 0, added.stderr);
  return { workspace, env };
}

async function exercise(client) {
  assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');

  const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
  assert.ok(prompts.includes('csv-rows') && prompts.includes('everything__args-prompt'), prompts.join(', '));
  const skillPrompt = await client.getPrompt({ name: 'csv-rows', arguments: {} });
  assert.match(skillPrompt.messages[0].content.text, /count\.sh/);
  const args = await client.getPrompt({ name: 'everything__args-prompt', arguments: { city: 'Lisbon' } });
  assert.match(args.messages[0].content.text, /Lisbon/);

  const resources = (await client.listResources()).resources.map((r) => r.uri);
  const doc = resources.find((uri) => uri.startsWith('demo://resource/static/document/'));
  assert.ok(doc, resources.join(', '));
  const read = await client.readResource({ uri: doc });
  assert.ok(read.contents[0].text, JSON.stringify(read));
  const templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
  const dynamic = templates.find((t) => t.includes('/dynamic/text/'));
  assert.ok(dynamic, templates.join(', '));
  const made = await client.readResource({ uri: dynamic.replace('{resourceId}', '7') });
  assert.match(made.contents[0].text, /7/);

  // A mounted server's completions, forwarded under the prompt's mounted name, with the
  // context of the arguments already chosen.
  const departments = await client.complete({
    ref: { type: 'ref/prompt', name: 'everything__completable-prompt' },
    argument: { name: 'department', value: 'S' },
  });
  assert.deepEqual(departments.completion.values, ['Sales', 'Support']);
  const people = await client.complete({
    ref: { type: 'ref/prompt', name: 'everything__completable-prompt' },
    argument: { name: 'name', value: '' },
    context: { arguments: { department: 'Sales' } },
  });
  assert.deepEqual(people.completion.values, ['David', 'Eve', 'Frank']);
  const none = await client.complete({ ref: { type: 'ref/prompt', name: 'csv-rows' }, argument: { name: 'x', value: '' } });
  assert.deepEqual(none.completion.values, []);

  const sum = await client.callTool({ name: 'calculator', arguments: { expression: '6*7' } });
  assert.ok(!sum.isError, JSON.stringify(sum));
  assert.match(sum.content[0].text, /42/);
}

test('stdio, 2026-07-28: prompts, resources and tools through the v2 client', async () => {
  const { workspace, env } = setUp();
  const client = new Client({ name: 'toolshed-era-test', version: '1.0.0' }, ERA);
  await client.connect(new StdioClientTransport({ command: bin, args: ['--workspace', workspace, 'mcp'], env, stderr: 'pipe' }));
  try {
    await exercise(client);
  } finally {
    await client.close();
  }
});

test('streamable HTTP, 2026-07-28: prompts, resources and tools through the v2 client', async () => {
  const { workspace, env } = setUp();
  const { transport, stop } = await transportFor('http', workspace, env);
  const client = new Client({ name: 'toolshed-era-test', version: '1.0.0' }, ERA);
  try {
    await client.connect(transport);
    await exercise(client);
  } finally {
    await client.close();
    stop();
  }
});

/**
 * A transport to toolshed over `kind` (stdio, or HTTP to a `toolshed serve` started here
 * with the same environment), and what stops it.
 */
async function transportFor(kind, workspace, env) {
  if (kind === 'stdio') {
    return { transport: new StdioClientTransport({ command: bin, args: ['--workspace', workspace, 'mcp'], env, stderr: 'pipe' }), stop: () => {} };
  }
  const { url, token, stop } = await serve(workspace, env);
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  return { transport, stop };
}

function askBeforeCommands(env) {
  const policy = join(env.TOOLSHED_HOME, 'policy.toml');
  writeFileSync(policy, [
    '[[policy.rule]]', 'name = "ask before commands"', 'tools = ["group:exec"]', 'decision = "ask"',
    'message = "commands need a person\'s yes"', '',
  ].join('\n'));
  return { ...env, TOOLSHED_CONFIG: policy };
}

for (const kind of ['stdio', 'http']) {
  test(`${kind}, 2026-07-28: an approval answered through an input round trip`, async () => {
    const { workspace, env } = setUp();
    const asked = [];
    const answers = ['accept', 'decline'];
    const client = new Client({ name: 'toolshed-era-test', version: '1.0.0' },
      { ...ERA, capabilities: { elicitation: { form: {} } } });
    client.setRequestHandler('elicitation/create', async (request) => {
      asked.push(request.params.message);
      return { action: answers.shift() };
    });
    const { transport, stop } = await transportFor(kind, workspace, askBeforeCommands(env));
    try {
      await client.connect(transport);
      const ran = await client.callTool({ name: 'exec_command', arguments: { cmd: 'echo yes > approved.txt; echo done' } });
      assert.ok(!ran.isError, JSON.stringify(ran));
      assert.match(ran.content[0].text, /done/);
      const refused = await client.callTool({ name: 'exec_command', arguments: { cmd: 'echo no > declined.txt' } });
      assert.ok(refused.isError, JSON.stringify(refused));
      assert.match(refused.content[0].text, /declined/);
    } finally {
      await client.close();
      stop();
    }
    assert.equal(asked.length, 2);
    assert.match(asked[0], /ask before commands/);
    assert.ok(existsSync(join(workspace, 'approved.txt')) && !existsSync(join(workspace, 'declined.txt')));
  });

  test(`${kind}, 2026-07-28: a forged requestState is refused`, async () => {
    const { workspace, env } = setUp();
    const client = new Client({ name: 'toolshed-era-test', version: '1.0.0' },
      { ...ERA, capabilities: { elicitation: { form: {} } }, inputRequired: { autoFulfill: false } });
    client.setRequestHandler('elicitation/create', async () => { throw new Error('this test answers by hand'); });
    const { transport, stop } = await transportFor(kind, workspace, askBeforeCommands(env));
    const anything = { '~standard': { version: 1, vendor: 'toolshed-test', validate: (value) => ({ value }) } };
    try {
      await client.connect(transport);
      const args = { cmd: 'echo forged > forged.txt' };
      const first = await client.request({ method: 'tools/call', params: { name: 'exec_command', arguments: args } },
        anything, { allowInputRequired: true });
      assert.equal(first.resultType, 'input_required', JSON.stringify(first));
      assert.ok(first.requestState && first.inputRequests.approval, JSON.stringify(first));
      const state = first.requestState;
      const forged = state.slice(0, -3) + (state.endsWith('AAA') ? 'BBB' : 'AAA');
      await assert.rejects(
        client.request({ method: 'tools/call', params: { name: 'exec_command', arguments: args,
          inputResponses: { approval: { action: 'accept' } }, requestState: forged } }, anything, { allowInputRequired: true }),
        /requestState refused/);
    } finally {
      await client.close();
      stop();
    }
    assert.ok(!existsSync(join(workspace, 'forged.txt')));
  });
}

test('stdio, 2026-07-28: skills through the skills extension, every file verified', async () => {
  const { workspace, env } = setUp();
  const client = new Client({ name: 'toolshed-era-test', version: '1.0.0' }, ERA);
  await client.connect(new StdioClientTransport({ command: bin, args: ['--workspace', workspace, 'mcp'], env, stderr: 'pipe' }));
  try {
    const skills = new SkillsClient(client);
    assert.ok(skills.supported, 'the server declares io.modelcontextprotocol/skills');
    const listing = await skills.list();
    assert.equal(listing.invalid.length, 0);
    assert.equal(listing.ttlMs, 60000);
    const entry = listing.skills.find((s) => s.frontmatter.name === 'csv-rows');
    assert.ok(entry, JSON.stringify(listing.skills));
    assert.equal(entry.uri, 'skill://csv-rows/SKILL.md');
    const manifest = await skills.read(entry);
    assert.ok(manifest.verified);
    assert.match(manifest.body, /Counting CSV rows/);
    const script = entry.resources.find((r) => r.uri.endsWith('count.sh'));
    assert.ok(script, JSON.stringify(entry.resources));
    const file = await skills.read(entry, 'scripts/count.sh');
    assert.ok(file.verified && file.bytes.length > 0);
    const { skill } = await skills.get(entry.uri);
    assert.deepEqual(skill.frontmatter, entry.frontmatter);
    await assert.rejects(skills.get('skill://no-such-skill/SKILL.md'));
  } finally {
    await client.close();
  }
});

for (const kind of ['stdio', 'http']) {
test(`${kind}, 2026-07-28: a traceparent in _meta reaches a mounted server as the call's context`, async () => {
  // Spans are recorded (and context handed on) only with an exporter: a collector that
  // takes whatever it is sent.
  const collector = createServer((req, res) => { req.resume(); req.on('end', () => { res.writeHead(200); res.end(); }); });
  await new Promise((resolve) => collector.listen(0, '127.0.0.1', resolve));
  const { workspace, env } = setUp();
  const python = join(here, '..', '..', '.venv', 'bin', 'python');
  const traced = join(here, '..', 'mcp', 'servers', 'traced.py');
  const added = spawnSync(bin, ['--workspace', workspace, 'mcp', 'add', 'traced', '--', python, traced],
    { env, encoding: 'utf8', timeout: 60_000 });
  assert.equal(added.status, 0, added.stderr);
  const client = new Client({ name: 'toolshed-era-test', version: '1.0.0' }, ERA);
  const { transport, stop } = await transportFor(kind, workspace,
    { ...env, TOOLSHED_TELEMETRY__OTLP_ENDPOINT: `http://127.0.0.1:${collector.address().port}` });
  try {
    await client.connect(transport);
    const traceId = '6bf92f3577b34da6a3ce929d0e0e4736';
    const result = await client.callTool({
      name: 'traced__meta', arguments: {},
      _meta: { traceparent: `00-${traceId}-00f067aa0ba902b7-01`, tracestate: 'vendor=1' },
    });
    assert.ok(!result.isError, JSON.stringify(result));
    const seen = JSON.parse(result.content[0].text);
    // The same trace, a span of toolshed's (not the caller's), and the caller's state.
    assert.match(seen.traceparent, new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    assert.ok(!seen.traceparent.includes('00f067aa0ba902b7'), seen.traceparent);
    assert.equal(seen.tracestate, 'vendor=1');
  } finally {
    await client.close();
    stop();
    collector.close();
  }
});
}
