// The Tasks extension (io.modelcontextprotocol/tasks) through the TypeScript v2 client and
// the official Tasks client package (@modelcontextprotocol/ext-tasks), in the 2026-07-28
// era, over stdio and streamable HTTP: a long call becomes a task that the client settles,
// hands off as a reference, resumes from a new connection, and cancels.
//
// ext-tasks sends the Tasks methods itself ("raw dispatch"), framed as the 2026-07-28 era
// frames every request; the SDK Client has no public call for that, so a thin transport
// wrapper here sends those requests on the Client's own connection and hands back their
// replies.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { createTaskSessionFromClient, resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';
import { bin, freshHome, serve } from './support.js';
const VERSION = '2026-07-28';
const TASKS = 'io.modelcontextprotocol/tasks';
const INFO = { name: 'toolshed-tasks-test', version: '1.0.0' };
const CAPABILITIES = { extensions: { [TASKS]: {} } };

/** A transport that also carries requests its Client does not make (`dispatch`). */
class Tap {
  constructor(inner) {
    this.inner = inner;
    this.waiting = new Map();
    this.next = 0;
    return new Proxy(this, {
      get: (target, key) => (key in target ? target[key] : Reflect.get(inner, key)),
    });
  }

  async start() {
    this.inner.onmessage = (message, extra) => {
      const reply = message.id !== undefined && !('method' in message) && this.waiting.get(message.id);
      if (reply) {
        this.waiting.delete(message.id);
        reply(message);
      } else {
        this.onmessage?.(message, extra);
      }
    };
    this.inner.onerror = (error) => this.onerror?.(error);
    this.inner.onclose = () => this.onclose?.();
    return this.inner.start();
  }

  send(message, options) {
    return this.inner.send(message, options);
  }

  close() {
    return this.inner.close();
  }

  setProtocolVersion(version) {
    this.inner.setProtocolVersion?.(version);
  }

  /** ext-tasks' raw dispatch: one framed request, its reply as `{kind, result|error}`. */
  dispatch = async (request) => {
    const id = `tasks-${this.next++}`;
    const reply = new Promise((resolve) => this.waiting.set(id, resolve));
    await this.inner.send({ ...request, jsonrpc: '2.0', id });
    const message = await reply;
    return 'error' in message ? { kind: 'error', error: message.error } : { kind: 'result', result: message.result };
  };
}

function home() {
  return freshHome('toolshed-tasks-');
}

async function connect(transport) {
  const tap = new Tap(transport);
  const client = new Client(INFO, { versionNegotiation: { mode: { pin: VERSION } }, capabilities: CAPABILITIES });
  await client.connect(tap);
  assert.equal(client.getNegotiatedProtocolVersion(), VERSION);
  const session = createTaskSessionFromClient(client, {
    endpointId: 'toolshed',
    rawDispatch: tap.dispatch,
    v2RequestFraming: { protocolVersion: VERSION, clientInfo: INFO, clientCapabilities: CAPABILITIES },
  });
  return { client, session };
}

function running(marker) {
  return spawnSync('pgrep', ['-f', marker]).status === 0;
}

async function lifecycle(open, { reconnect }) {
  // Settled in the same connection.
  let { client, session } = await open();
  try {
    const quick = await session.callTool('exec_command', { cmd: 'echo quick' });
    assert.equal(quick.kind, 'immediate', 'a call that ends within the wait is answered as any call');
    assert.match(resultFromTaskOutcome((await quick.settle()).outcome).content[0].text, /quick/);
    const slow = await session.callTool('exec_command', { cmd: 'sleep 1.5; echo settled-here', yield_ms: 60000 });
    assert.equal(slow.kind, 'task');
    assert.match(slow.handle.taskId, /^job-\d+$/);
    const { outcome, lastTask } = await slow.settle();
    assert.equal(outcome.status, 'completed');
    assert.match(resultFromTaskOutcome(outcome).content[0].text, /settled-here/);
    assert.ok(lastTask === undefined || lastTask.suggestedPollIntervalMs > 0);

    // Handed off and resumed from a new connection when the server outlives the first
    // (HTTP); over stdio, where the server is the client's child and ends with it, read by
    // id on the same one.
    const detached = await session.callTool('exec_command', { cmd: 'sleep 2; echo resumed-later', yield_ms: 60000 });
    assert.equal(detached.kind, 'task');
    let reference;
    await detached.handoff((r) => { reference = r; });
    assert.equal(reference.generation, 'v2');
    if (reconnect) {
      await session.close();
      await client.close();
      ({ client, session } = await open());
    }
    const later = reconnect
      ? (await (await session.resumeTask(reference)).settle()).outcome
      : await session.task(reference.taskId).result();
    assert.equal(later.status, 'completed', JSON.stringify(later));
    assert.match(resultFromTaskOutcome(later).content[0].text, /resumed-later/);

    // Cancelled: the command's process is gone.
    const marker = `sleep 42.${process.pid % 1000}`;
    const doomed = await session.callTool('exec_command', { cmd: `${marker}; echo never`, yield_ms: 60000 });
    assert.equal(doomed.kind, 'task');
    assert.ok(running(marker));
    await doomed.cancel();
    const view = await session.task(doomed.handle.taskId).snapshot();
    assert.equal(view.status, 'cancelled');
    for (let i = 0; running(marker); i++) {
      assert.ok(i < 100, 'the cancelled task\'s command still runs');
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await session.close().catch(() => {});
    await client.close();
  }
}

test('stdio, 2026-07-28: a long call is a task the Tasks client settles, resumes and cancels', { timeout: 120_000 }, async () => {
  const { workspace, env } = home();
  await lifecycle(async () => connect(new StdioClientTransport({
    command: bin, args: ['--workspace', workspace, 'mcp'], env, stderr: 'pipe',
  })), { reconnect: false });
});

test('streamable HTTP, 2026-07-28: a long call is a task the Tasks client settles, resumes and cancels', { timeout: 120_000 }, async () => {
  const { workspace, env } = home();
  const { url, token, stop } = await serve(workspace, env);
  try {
    await lifecycle(async () => connect(new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    })), { reconnect: true });
  } finally {
    stop();
  }
});
