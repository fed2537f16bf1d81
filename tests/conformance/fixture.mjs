// A fixture MCP server for the @modelcontextprotocol/conformance server scenarios: every
// tool, prompt and resource they call by name (test_simple_text, test://static-text, …),
// written once with the TypeScript SDK v2, which serves both protocol eras (2025-era
// `initialize` and 2026-07-28 per-request `_meta`).
//
//   node fixture.mjs stdio          serve over stdio (what toolshed mounts)
//   node fixture.mjs http [PORT]    serve streamable HTTP at http://127.0.0.1:PORT/mcp
//
// The SDK (its server package, pinned in package.json here) from this folder's node_modules,
// or $MCP_TS_MODULES.
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deflateSync } from 'node:zlib';

const modules = process.env.MCP_TS_MODULES ?? fileURLToPath(new URL('./node_modules/', import.meta.url));
const sdk = await import(join(modules, '@modelcontextprotocol/server/dist/index.mjs'));
const { z } = await import(join(modules, 'zod/index.js'));
const {
  McpServer, ResourceTemplate,
  completable, fromJsonSchema, inputRequired, inputResponse, acceptedContent, createRequestStateCodec,
} = sdk;

// --- Payloads --------------------------------------------------------------------------

// A 1x1 red PNG, built here (zlib for the pixel data, a table-less CRC-32 for the chunks).
function png() {
  const crc = (buf) => {
    let c = ~0;
    for (const byte of buf) { c ^= byte; for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1)); }
    return ~c >>> 0;
  };
  const chunk = (type, data) => {
    const body = Buffer.concat([Buffer.from(type), data]);
    const out = Buffer.alloc(body.length + 8);
    out.writeUInt32BE(data.length, 0); body.copy(out, 4); out.writeUInt32BE(crc(body), body.length + 4);
    return out;
  };
  const ihdr = Buffer.from([0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0]); // 1x1, 8-bit RGB
  const pixels = deflateSync(Buffer.from([0, 255, 0, 0])); // filter byte, then red
  return Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), chunk('IHDR', ihdr), chunk('IDAT', pixels), chunk('IEND', Buffer.alloc(0))]).toString('base64');
}
const PNG = png();

// A WAV file of 0.01 s of silence (8 kHz, 8 bit, mono), built here rather than pasted.
function wav(samples = 80) {
  const b = Buffer.alloc(44 + samples, 0x80);
  b.write('RIFF', 0); b.writeUInt32LE(36 + samples, 4); b.write('WAVE', 8);
  b.write('fmt ', 12); b.writeUInt32LE(16, 16); b.writeUInt16LE(1, 20); b.writeUInt16LE(1, 22);
  b.writeUInt32LE(8000, 24); b.writeUInt32LE(8000, 28); b.writeUInt16LE(1, 32); b.writeUInt16LE(8, 34);
  b.write('data', 36); b.writeUInt32LE(samples, 40);
  return b.toString('base64');
}
const WAV = wav();

const text = (t) => ({ content: [{ type: 'text', text: t }] });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const noArgs = fromJsonSchema({ type: 'object', properties: {} });

// The schema of json-schema-2020-12: $schema, $defs, $anchor, allOf/anyOf, if/then/else.
const SCHEMA_2020_12 = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  $defs: { address: { $anchor: 'addressDef', type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
  properties: {
    name: { type: 'string' }, address: { $ref: '#/$defs/address' },
    contactMethod: { type: 'string', enum: ['phone', 'email'] }, phone: { type: 'string' }, email: { type: 'string' },
  },
  allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
  if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
  then: { required: ['phone'] },
  else: { required: ['email'] },
  additionalProperties: false,
};

// Elicitation forms.
const str = { type: 'string' };
const form = (properties, required = Object.keys(properties)) => ({ type: 'object', properties, required });
const ELICIT_USER = form({ username: { type: 'string', description: "User's response" }, email: { type: 'string', description: "User's email address" } });
const ELICIT_DEFAULTS = form({
  name: { type: 'string', default: 'John Doe' },
  age: { type: 'integer', default: 30 },
  score: { type: 'number', default: 95.5 },
  status: { type: 'string', enum: ['active', 'inactive', 'pending'], default: 'active' },
  verified: { type: 'boolean', default: true },
}, []);
const ELICIT_ENUMS = form({
  untitledSingle: { type: 'string', enum: ['option1', 'option2', 'option3'] },
  titledSingle: { type: 'string', oneOf: [{ const: 'value1', title: 'First Option' }, { const: 'value2', title: 'Second Option' }, { const: 'value3', title: 'Third Option' }] },
  legacyEnum: { type: 'string', enum: ['opt1', 'opt2', 'opt3'], enumNames: ['Option One', 'Option Two', 'Option Three'] },
  untitledMulti: { type: 'array', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
  titledMulti: { type: 'array', items: { anyOf: [{ const: 'value1', title: 'First Choice' }, { const: 'value2', title: 'Second Choice' }, { const: 'value3', title: 'Third Choice' }] } },
}, []);

// requestState is HMAC-signed; a tampered one is refused by the SDK before a handler runs.
const codec = createRequestStateCodec({ key: randomBytes(32) });

// --- The server ------------------------------------------------------------------------

/** One McpServer with the whole fixture; `notify` publishes list changes (HTTP mode). */
function fixture(notify) {
  const server = new McpServer(
    { name: 'toolshed-conformance-fixture', version: '1.0.0' },
    {
      capabilities: {
        tools: { listChanged: true }, prompts: { listChanged: true },
        resources: { subscribe: true, listChanged: true }, completions: {}, logging: {},
      },
      requestState: { verify: codec.verify },
    },
  );
  const tool = (name, description, inputSchema, handler) =>
    server.registerTool(name, { description, inputSchema: inputSchema ?? noArgs }, handler);
  const ask = (key, request, state) => inputRequired({ inputRequests: { [key]: request }, ...(state && { requestState: state }) });

  // Content types.
  tool('test_simple_text', 'Returns simple text', null, async () => text('This is a simple text response for testing.'));
  tool('test_image_content', 'Returns an image', null, async () => ({ content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] }));
  tool('test_audio_content', 'Returns audio', null, async () => ({ content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }] }));
  tool('test_embedded_resource', 'Returns an embedded resource', null, async () => ({
    content: [{ type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }],
  }));
  tool('test_multiple_content_types', 'Returns text, an image and a resource', null, async () => ({
    content: [
      { type: 'text', text: 'Multiple content types test:' },
      { type: 'image', data: PNG, mimeType: 'image/png' },
      { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: '{"test":"data","value":123}' } },
    ],
  }));
  tool('test_error_handling', 'Always fails', null, async () => ({
    isError: true, content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }],
  }));
  tool('json_schema_2020_12_tool', 'Tool with JSON Schema 2020-12 features', fromJsonSchema(SCHEMA_2020_12), async (args) => text(JSON.stringify(args)));

  // Logging and progress.
  const logThrice = async (ctx) => {
    for (const [i, m] of ['Tool execution started', 'Tool processing data', 'Tool execution completed'].entries()) {
      if (i) await sleep(50);
      await ctx.mcpReq.log('info', m);
    }
    return text('Logging tool completed');
  };
  tool('test_tool_with_logging', 'Sends three log messages', null, async (_a, ctx) => logThrice(ctx));
  tool('test_logging_tool', 'Logs (only when the request asked for a log level)', null, async (_a, ctx) => logThrice(ctx));
  tool('test_tool_with_progress', 'Reports progress 0, 50, 100 of 100', null, async (_a, ctx) => {
    const token = ctx.mcpReq._meta?.progressToken;
    for (const progress of [0, 50, 100]) {
      if (progress) await sleep(50);
      if (token !== undefined) await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress, total: 100 } });
    }
    return text('Progress tool completed');
  });

  // Sampling and elicitation: written as multi-round-trip (input_required) handlers; on a
  // 2025-era connection the SDK turns them into sampling/elicitation requests to the client.
  tool('test_sampling', 'Asks the client to sample', z.object({ prompt: z.string() }), async ({ prompt }, ctx) => {
    const r = inputResponse(ctx.mcpReq.inputResponses, 'sample');
    if (r.kind !== 'sampling') {
      return ask('sample', inputRequired.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: prompt } }], maxTokens: 100 }));
    }
    const c = r.result.content;
    return text(`LLM response: ${Array.isArray(c) ? c.map((x) => x.text).join('') : c?.text ?? ''}`);
  });
  const elicitTool = (name, description, schema, params, reply) =>
    tool(name, description, params, async (args, ctx) => {
      const r = inputResponse(ctx.mcpReq.inputResponses, 'form');
      if (r.kind !== 'elicit') return ask('form', inputRequired.elicit({ message: args.message ?? `Please fill in the form (${name})`, requestedSchema: schema }));
      return text(reply(r));
    });
  elicitTool('test_elicitation', 'Asks the user for a username and email', ELICIT_USER, z.object({ message: z.string() }),
    (r) => `User response: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
  elicitTool('test_elicitation_sep1034_defaults', 'Elicits with defaults for every primitive type', ELICIT_DEFAULTS, null,
    (r) => `Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
  elicitTool('test_elicitation_sep1330_enums', 'Elicits with every enum variant', ELICIT_ENUMS, null,
    (r) => `Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
  tool('test_streaming_elicitation', 'Asks for input (as input_required, never as a request on the stream)', null, async (_a, ctx) => {
    const name = acceptedContent(ctx.mcpReq.inputResponses, 'name')?.name;
    return name ? text(`Hello, ${name}!`) : ask('name', inputRequired.elicit({ message: 'What is your name?', requestedSchema: form({ name: str }) }));
  });

  // 2026-07-28 multi-round-trip (SEP-2322).
  const NAME_FORM = form({ name: str });
  tool('test_input_required_result_elicitation', 'input_required: one elicitation', null, async (_a, ctx) => {
    const name = acceptedContent(ctx.mcpReq.inputResponses, 'user_name')?.name;
    if (typeof name === 'string') return text(`Hello, ${name}!`);
    return ask('user_name', inputRequired.elicit({ message: 'What is your name?', requestedSchema: NAME_FORM }));
  });
  tool('test_input_required_result_sampling', 'input_required: one sampling request', null, async (_a, ctx) => {
    const r = inputResponse(ctx.mcpReq.inputResponses, 'capital_question');
    if (r.kind === 'sampling') return text(`Sampling said: ${r.result.content?.text ?? JSON.stringify(r.result.content)}`);
    return ask('capital_question', inputRequired.createMessage({
      messages: [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }], maxTokens: 100,
    }));
  });
  tool('test_input_required_result_list_roots', 'input_required: roots/list', null, async (_a, ctx) => {
    const r = inputResponse(ctx.mcpReq.inputResponses, 'client_roots');
    if (r.kind === 'roots') return text(`Roots: ${r.roots.map((x) => x.uri).join(', ') || '(none)'}`);
    return ask('client_roots', inputRequired.listRoots());
  });
  tool('test_input_required_result_request_state', 'input_required with requestState', null, async (_a, ctx) => {
    const state = ctx.mcpReq.requestState();
    const ok = acceptedContent(ctx.mcpReq.inputResponses, 'confirm');
    if (state?.step === 'confirm' && ok) return text(`state-ok: confirmed=${ok.ok}`);
    return ask('confirm', inputRequired.elicit({ message: 'Please confirm', requestedSchema: form({ ok: { type: 'boolean' } }) }),
      await codec.mint({ step: 'confirm' }));
  });
  tool('test_input_required_result_multiple_inputs', 'input_required: elicitation, sampling and roots at once', null, async (_a, ctx) => {
    const got = ['user_name', 'greeting', 'client_roots'].map((k) => inputResponse(ctx.mcpReq.inputResponses, k).kind);
    if (ctx.mcpReq.requestState()?.step === 'all' && !got.includes('missing')) return text(`Got all inputs (${got.join(', ')})`);
    return inputRequired({
      inputRequests: {
        user_name: inputRequired.elicit({ message: 'What is your name?', requestedSchema: NAME_FORM }),
        greeting: inputRequired.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }], maxTokens: 50 }),
        client_roots: inputRequired.listRoots(),
      },
      requestState: await codec.mint({ step: 'all' }),
    });
  });
  tool('test_input_required_result_multi_round', 'input_required over two rounds', null, async (_a, ctx) => {
    const state = ctx.mcpReq.requestState();
    const step1 = acceptedContent(ctx.mcpReq.inputResponses, 'step1');
    const step2 = acceptedContent(ctx.mcpReq.inputResponses, 'step2');
    if (state?.round === 2 && step2) return text(`Done: ${state.name} likes ${step2.color}`);
    if (state?.round === 1 && step1) {
      return ask('step2', inputRequired.elicit({ message: 'Step 2: What is your favorite color?', requestedSchema: form({ color: str }) }),
        await codec.mint({ round: 2, name: step1.name }));
    }
    return ask('step1', inputRequired.elicit({ message: 'Step 1: What is your name?', requestedSchema: NAME_FORM }), await codec.mint({ round: 1 }));
  });
  tool('test_input_required_result_tampered_state', 'input_required with signed requestState', null, async (_a, ctx) => {
    if (ctx.mcpReq.requestState()?.step === 'signed') return text('state verified');
    return ask('confirm', inputRequired.elicit({ message: 'Please confirm', requestedSchema: form({ ok: { type: 'boolean' } }) }),
      await codec.mint({ step: 'signed' }));
  });
  tool('test_input_required_result_capabilities', 'input_required only for declared client capabilities', null, async (_a, ctx) => {
    const caps = ctx.mcpReq.envelope?.['io.modelcontextprotocol/clientCapabilities'] ?? {};
    const requests = {};
    if (caps.elicitation) requests.user_name = inputRequired.elicit({ message: 'What is your name?', requestedSchema: NAME_FORM });
    if (caps.sampling) requests.greeting = inputRequired.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: 'Say hi' } }], maxTokens: 20 });
    if (ctx.mcpReq.inputResponses || !Object.keys(requests).length) return text('Nothing (more) to ask');
    return inputRequired({ inputRequests: requests });
  });
  // Asking for sampling the request did not declare: the SDK answers -32021 (HTTP 400).
  tool('test_missing_capability', 'Needs the client to declare sampling', null, async (_a, ctx) => {
    const r = inputResponse(ctx.mcpReq.inputResponses, 'sample');
    if (r.kind === 'sampling') return text('sampled');
    return ask('sample', inputRequired.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: 'Hi' } }], maxTokens: 10 }));
  });

  // List changes, SSE reconnection, custom headers (SEP-2243).
  tool('test_trigger_tool_change', 'Announces that the tool list changed', null, async () => {
    server.sendToolListChanged(); notify?.toolsChanged();
    return text('tools/list_changed sent');
  });
  tool('test_trigger_prompt_change', 'Announces that the prompt list changed', null, async () => {
    server.sendPromptListChanged(); notify?.promptsChanged();
    return text('prompts/list_changed sent');
  });
  tool('test_reconnection', 'Closes its SSE stream mid-call (HTTP only), then answers', null, async (_a, ctx) => {
    ctx.http?.closeSSE?.();
    await sleep(200);
    return text('Reconnection test completed');
  });
  tool('test_custom_headers', 'Takes a parameter mirrored in the Mcp-Param-Region header',
    fromJsonSchema({ type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' } }, required: ['region'] }),
    async ({ region }) => text(`region=${region}`));

  // The tasks extension's fixture tools (SEP-2663). The SDK has no server side for tasks,
  // so these are ordinary tools: a gateway that turns slow calls into tasks (toolshed's
  // server-directed tasks) is what the tasks scenarios then measure.
  tool('greet', 'Says hello (sync only)', z.object({ name: z.string() }), async ({ name }) => text(`Hello, ${name}!`));
  tool('slow_compute', 'Sleeps `seconds`, then answers (cancellable)', z.object({ seconds: z.number(), label: z.string().optional() }),
    async ({ seconds, label }, ctx) => {
      await new Promise((resolve, reject) => {
        const timer = setTimeout(resolve, seconds * 1000);
        ctx.mcpReq.signal.addEventListener('abort', () => { clearTimeout(timer); reject(new Error('cancelled')); }, { once: true });
      });
      return text(`computed ${label ?? ''} after ${seconds}s`);
    });
  tool('failing_job', 'Fails as a tool (isError) after a second', null, async () => {
    await sleep(1000);
    return { isError: true, content: [{ type: 'text', text: 'failing_job failed, as it always does' }] };
  });
  tool('protocol_error_job', 'After a second, answers with a malformed result: the SDK makes it a protocol error', null,
    async () => { await sleep(1000); return { content: 'not a content array' }; });
  tool('confirm_delete', 'Asks for confirmation, then deletes nothing', z.object({ filename: z.string() }), async ({ filename }, ctx) => {
    const answer = inputResponse(ctx.mcpReq.inputResponses, 'confirm');
    if (answer.kind === 'elicit') return text(`${answer.action === 'accept' && answer.content?.confirm ? 'deleted' : 'kept'} ${filename}`);
    return ask('confirm', inputRequired.elicit({ message: `Delete ${filename}?`, requestedSchema: form({ confirm: { type: 'boolean' } }) }));
  });
  tool('multi_input', 'Asks two questions at once', null, async (_a, ctx) => {
    const first = acceptedContent(ctx.mcpReq.inputResponses, 'first');
    const second = acceptedContent(ctx.mcpReq.inputResponses, 'second');
    if (first && second) return text(`first=${first.value}, second=${second.value}`);
    return inputRequired({ inputRequests: {
      first: inputRequired.elicit({ message: 'First value?', requestedSchema: form({ value: str }) }),
      second: inputRequired.elicit({ message: 'Second value?', requestedSchema: form({ value: str }) }),
    } });
  });
  tool('test_tool_with_task', 'Asks for a name, then works a while with it', null, async (_a, ctx) => {
    const name = acceptedContent(ctx.mcpReq.inputResponses, 'user_name')?.name;
    if (typeof name !== 'string') return ask('user_name', inputRequired.elicit({ message: 'What is your name?', requestedSchema: NAME_FORM }));
    await sleep(2000);
    return text(`Finished the task for ${name}`);
  });

  // Prompts.
  server.registerPrompt('test_simple_prompt', { description: 'A simple prompt without arguments' }, () => ({
    messages: [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }],
  }));
  server.registerPrompt('test_prompt_with_arguments', {
    description: 'A prompt with two arguments',
    argsSchema: z.object({
      arg1: completable(z.string().describe('First test argument'), (v) => ['paris', 'park', 'party'].filter((x) => x.startsWith(v))),
      arg2: z.string().describe('Second test argument'),
    }),
  }, ({ arg1, arg2 }) => ({
    messages: [{ role: 'user', content: { type: 'text', text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` } }],
  }));
  server.registerPrompt('test_prompt_with_embedded_resource', {
    description: 'A prompt embedding a resource', argsSchema: z.object({ resourceUri: z.string().describe('URI of the resource to embed') }),
  }, ({ resourceUri }) => ({
    messages: [
      { role: 'user', content: { type: 'resource', resource: { uri: resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' } } },
      { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
    ],
  }));
  server.registerPrompt('test_prompt_with_image', { description: 'A prompt with an image' }, () => ({
    messages: [
      { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
      { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
    ],
  }));
  server.registerPrompt('test_input_required_result_prompt', { description: 'A prompt that first asks for context' }, (ctx) => {
    const c = acceptedContent(ctx.mcpReq.inputResponses, 'user_context')?.context;
    if (typeof c !== 'string') {
      return inputRequired({ inputRequests: { user_context: inputRequired.elicit({ message: 'What context should the prompt use?', requestedSchema: form({ context: str }) }) } });
    }
    return { messages: [{ role: 'user', content: { type: 'text', text: `Use this context: ${c}` } }] };
  });

  // Resources.
  server.registerResource('static-text', 'test://static-text', { description: 'A static text resource', mimeType: 'text/plain' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'This is the content of the static text resource.' }] }));
  server.registerResource('static-binary', 'test://static-binary', { description: 'A static binary resource', mimeType: 'image/png' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'image/png', blob: PNG }] }));
  server.registerResource('watched-resource', 'test://watched-resource', { description: 'A resource to subscribe to', mimeType: 'text/plain' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'Watched resource content' }] }));
  server.registerResource('template', new ResourceTemplate('test://template/{id}/data', {
    list: undefined, complete: { id: (v) => ['1', '2', '123'].filter((x) => x.startsWith(v)) },
  }), { description: 'A resource template with an id', mimeType: 'application/json' },
  async (uri, { id }) => ({
    contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }) }],
  }));

  // Subscriptions (2025 era): accepted and remembered; nothing ever changes.
  const subscribed = new Set();
  server.server.setRequestHandler('resources/subscribe', async (req) => { subscribed.add(req.params.uri); return {}; });
  server.server.setRequestHandler('resources/unsubscribe', async (req) => { subscribed.delete(req.params.uri); return {}; });
  return server;
}

// --- Serving ---------------------------------------------------------------------------

const [mode = 'stdio', portArg = '0'] = process.argv.slice(2);
if (mode === 'stdio') {
  const { serveStdio } = await import(join(modules, '@modelcontextprotocol/server/dist/stdio.mjs'));
  serveStdio(() => fixture());
} else if (mode === 'http') {
  await serveHttp(Number(portArg));
} else {
  console.error('usage: node fixture.mjs stdio | http [PORT]');
  process.exit(2);
}

/** Streamable HTTP: 2026-07-28 requests through createMcpHandler, 2025-era ones through a
 * session of their own (sampling, elicitation and subscriptions need one). */
async function serveHttp(port) {
  const { createMcpHandler, isLegacyRequest, WebStandardStreamableHTTPServerTransport,
    hostHeaderValidationResponse, originValidationResponse, localhostAllowedHostnames, localhostAllowedOrigins } = sdk;
  const modern = createMcpHandler(() => fixture(modern.notify), { legacy: 'reject' });
  const sessions = new Map();

  async function legacy(request) {
    const id = request.headers.get('mcp-session-id');
    if (id) return sessions.get(id)?.handleRequest(request) ?? new Response('unknown session', { status: 404 });
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID, eventStore: memoryEventStore(), retryInterval: 500,
      onsessioninitialized: (sid) => sessions.set(sid, transport),
      onsessionclosed: (sid) => sessions.delete(sid),
    });
    await fixture().connect(transport);
    return transport.handleRequest(request);
  }

  async function handle(request) {
    const refused = hostHeaderValidationResponse(request, localhostAllowedHostnames())
      ?? originValidationResponse(request, localhostAllowedOrigins());
    if (refused) return refused;
    return (await isLegacyRequest(request)) ? legacy(request) : modern.fetch(request);
  }

  const httpServer = createServer(async (req, res) => {
    try {
      await writeResponse(res, await handle(await toRequest(req, res)));
    } catch (e) {
      console.error(e);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    }
  });
  httpServer.listen(port, '127.0.0.1', () => {
    console.error(`fixture listening on http://127.0.0.1:${httpServer.address().port}/mcp`);
  });
}

async function toRequest(req, res) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
  const abort = new AbortController();
  res.on('close', () => abort.abort());
  const hasBody = !['GET', 'HEAD'].includes(req.method) && chunks.length;
  return new Request(`http://${req.headers.host ?? 'localhost'}${req.url}`, {
    method: req.method, headers, signal: abort.signal, ...(hasBody && { body: Buffer.concat(chunks), duplex: 'half' }),
  });
}

async function writeResponse(res, response) {
  res.writeHead(response.status, Object.fromEntries(response.headers));
  res.flushHeaders();
  if (response.body) for await (const chunk of response.body) res.write(chunk);
  res.end();
}

/** The smallest EventStore: keeps every event so a closed SSE stream can be resumed. */
function memoryEventStore() {
  const events = [];
  return {
    async storeEvent(streamId, message) { const id = `${streamId}_${events.length}`; events.push({ id, streamId, message }); return id; },
    async getStreamIdForEventId(id) { return events.find((e) => e.id === id)?.streamId; },
    async replayEventsAfter(lastId, { send }) {
      const i = events.findIndex((e) => e.id === lastId);
      if (i < 0) return undefined;
      const { streamId } = events[i];
      for (const e of events.slice(i + 1)) if (e.streamId === streamId) await send(e.id, e.message);
      return streamId;
    },
  };
}
