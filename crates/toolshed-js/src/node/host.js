// toolshed's host for a plugin run by Node.js. It is given on the command line (`node -e`);
// the plugin's directory, entry and settings come in the first line on stdin. Afterwards
// stdin carries the host's requests and stdout this process's answers, one JSON object per
// line; whatever the plugin prints goes to the log instead (stdout is the protocol's).
"use strict";
const fs = require("fs");
const path = require("path");
const net = require("net");
const tls = require("tls");
const http = require("http");
const https = require("https");
const { createRequire } = require("module");
const readline = require("readline");

// The sandbox gives no view of the host's network interfaces; packages that ask (for an
// id, say) get the loopback interface rather than an exception.
const os = require("os");
const interfaces = os.networkInterfaces;
os.networkInterfaces = () => {
  try {
    return interfaces.call(os);
  } catch {
    return { lo: [{ address: "127.0.0.1", netmask: "255.0.0.0", family: "IPv4", mac: "00:00:00:00:00:00", internal: true, cidr: "127.0.0.1/8" }] };
  }
};

const protocolWrite = process.stdout.write.bind(process.stdout);
const send = (message) => protocolWrite(JSON.stringify(message) + "\n");
// The plugin's own prints are its log, never the protocol.
process.stdout.write = process.stderr.write.bind(process.stderr);

const show = (args) =>
  args
    .map((a) => {
      if (typeof a === "string") return a;
      if (a instanceof Error) return a.stack || String(a);
      try {
        return JSON.stringify(a);
      } catch {
        return String(a);
      }
    })
    .join(" ");
const makeLogger = (call) => {
  const log = (level) => (...args) => send({ op: "log", call, level, text: show(args) });
  return Object.freeze({ debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") });
};
const rootLogger = makeLogger(null);
for (const [name, level] of [["log", "info"], ["info", "info"], ["debug", "debug"], ["warn", "warn"], ["error", "error"]]) {
  console[name] = rootLogger[level];
}

// The sandbox's network is a proxy (HTTP_PROXY): every connection is tunnelled through it
// with CONNECT, for http, https and fetch alike. Without one, Node's own network is used.
const proxyUrl = process.env.HTTPS_PROXY || process.env.HTTP_PROXY || "";
if (proxyUrl) {
  const proxy = new URL(proxyUrl);
  const tunnel = (opts, secure, done) => {
    const host = opts.host || opts.hostname || "localhost";
    const port = opts.port || (secure ? 443 : 80);
    const target = `${net.isIPv6(host) ? `[${host}]` : host}:${port}`;
    const socket = net.connect(Number(proxy.port || 80), proxy.hostname);
    let head = Buffer.alloc(0);
    const failed = (e) => done(e);
    socket.once("error", failed);
    socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
    const onData = (chunk) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) {
        if (head.length > 16384) {
          socket.destroy();
          done(new Error("the sandbox's network proxy answered too much"));
        }
        return;
      }
      socket.removeListener("data", onData);
      socket.removeListener("error", failed);
      const status = head.subarray(0, end).toString().split("\r\n")[0];
      if (!/^HTTP\/1\.[01] 200/.test(status)) {
        socket.destroy();
        const why = head.subarray(end + 4).toString().trim();
        const e = new Error(`the sandbox refused the connection to ${target}: ${why || status}`);
        e.code = "EACCES";
        return done(e);
      }
      const rest = head.subarray(end + 4);
      if (rest.length) socket.unshift(rest);
      if (!secure) return done(null, socket);
      done(
        null,
        tls.connect({
          socket,
          servername: opts.servername || (net.isIP(host) ? undefined : host),
          rejectUnauthorized: opts.rejectUnauthorized !== false,
          ca: opts.ca,
          cert: opts.cert,
          key: opts.key,
          ALPNProtocols: ["http/1.1"],
        })
      );
    };
    socket.on("data", onData);
  };
  class TunnelAgent extends http.Agent {
    constructor(secure) {
      super({ keepAlive: false });
      this.secure = secure;
      this.protocol = secure ? "https:" : "http:";
      this.defaultPort = secure ? 443 : 80;
    }
    createConnection(opts, done) {
      tunnel(opts, this.secure, done);
    }
  }
  http.globalAgent = new TunnelAgent(false);
  https.globalAgent = new TunnelAgent(true);
  globalThis.fetch = async function fetch(input, init) {
    const request = new Request(input, init);
    let url = new URL(request.url);
    let method = request.method;
    let body = request.body ? Buffer.from(await request.arrayBuffer()) : undefined;
    const headers = {};
    request.headers.forEach((v, k) => (headers[k] = v));
    for (let hop = 0; ; hop++) {
      if (url.protocol !== "http:" && url.protocol !== "https:") {
        throw new TypeError(`fetch failed: ${url.protocol} URLs are not supported`);
      }
      const res = await new Promise((resolve, reject) => {
        const mod = url.protocol === "https:" ? https : http;
        const r = mod.request(url, { method, headers, signal: request.signal }, resolve);
        r.on("error", (e) => reject(Object.assign(new TypeError(`fetch failed: ${e.message}`), { cause: e })));
        r.end(body);
      });
      const location = res.headers.location;
      if ([301, 302, 303, 307, 308].includes(res.statusCode) && location && request.redirect === "follow") {
        res.resume();
        if (hop >= 20) throw new TypeError("fetch failed: too many redirects");
        url = new URL(location, url);
        if (res.statusCode === 303 || ((res.statusCode === 301 || res.statusCode === 302) && method === "POST")) {
          method = "GET";
          body = undefined;
          delete headers["content-type"];
          delete headers["content-length"];
        }
        continue;
      }
      const chunks = [];
      for await (const chunk of res) chunks.push(chunk);
      const out = new Headers();
      for (const [k, v] of Object.entries(res.headers)) {
        for (const one of Array.isArray(v) ? v : [v]) out.append(k, one);
      }
      const empty = [101, 204, 205, 304].includes(res.statusCode) || method === "HEAD";
      const response = new Response(empty ? null : Buffer.concat(chunks), {
        status: res.statusCode,
        statusText: res.statusMessage,
        headers: out,
      });
      Object.defineProperty(response, "url", { value: url.href });
      Object.defineProperty(response, "redirected", { value: hop > 0 });
      return response;
    }
  };
}

// Requests to the host (tools, memory, events), answered by id.
let nextRequest = 1;
const waiting = new Map();
const ask = (call, method, params) =>
  new Promise((resolve, reject) => {
    const id = nextRequest++;
    waiting.set(id, { resolve, reject });
    send({ op: "host", call, id, method, params: params === undefined ? null : params });
  });

let settings = null;
let exportsOf = null;
const runs = new Map();
const running = new Map();

const lookup = (table, key) => {
  if (typeof table[key] === "string") return table[key];
  let current = table;
  for (const part of key.split(".")) {
    if (current === null || typeof current !== "object") return undefined;
    current = current[part];
  }
  return typeof current === "string" ? current : undefined;
};
// `t` over string tables in lookup order (the language's own, English, the others).
const translator = (strings) => (key, fallback, vars) => {
  if (fallback !== null && typeof fallback === "object") [fallback, vars] = [undefined, fallback];
  let text;
  for (const table of strings) {
    text = lookup(table, String(key));
    if (text !== undefined) break;
  }
  if (text === undefined) text = typeof fallback === "string" ? fallback : String(key);
  if (vars && typeof vars === "object") {
    text = text.replace(/\{([^{}]+)\}/g, (m, name) => (name in vars ? (typeof vars[name] === "string" ? vars[name] : JSON.stringify(vars[name])) : m));
  }
  return text;
};
const t = (key, fallback, vars) => translator(settings.strings)(key, fallback, vars);

const httpObject = () => {
  const request = async (o) => {
    const opts = o || {};
    const headers = { ...(opts.headers || {}) };
    let body = opts.body;
    if (body !== undefined && body !== null && typeof body !== "string" && !(body instanceof Uint8Array)) {
      body = JSON.stringify(body);
      if (!Object.keys(headers).some((h) => h.toLowerCase() === "content-type")) headers["content-type"] = "application/json";
    }
    const timeout = Math.min(Number(opts.timeoutMs) || 30000, 60000);
    const r = await fetch(opts.url, { method: opts.method || "GET", headers, body, signal: AbortSignal.timeout(timeout) });
    const bytes = Buffer.from(await r.arrayBuffer());
    const text = bytes.toString("utf8");
    const out = {};
    r.headers.forEach((v, k) => (out[k] = v));
    return {
      status: r.status,
      ok: r.ok,
      headers: out,
      body: text,
      truncated: false,
      json: () => JSON.parse(text),
      arrayBuffer: () => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length),
    };
  };
  return Object.freeze({
    request,
    get: (url, opts) => request({ ...(opts || {}), method: "GET", url }),
    post: (url, body, opts) => request({ ...(opts || {}), method: "POST", url, body }),
  });
};
const memoryObject = (call) =>
  Object.freeze({
    store: (m) => ask(call, "memory", ["store", typeof m === "string" ? { text: m } : m]),
    search: (q, o) => ask(call, "memory", ["search", typeof q === "string" ? { ...(o || {}), query: q } : q]),
    get: (id) => ask(call, "memory", ["get", { id }]),
    list: (o) => ask(call, "memory", ["list", o || {}]),
    delete: (id) => ask(call, "memory", ["delete", { id }]),
  });

const callContext = (call, config, controller) => {
  const h = httpObject();
  return {
    id: settings.id,
    plugin: Object.freeze({ id: settings.id, version: settings.version }),
    config,
    env: settings.env || {},
    t,
    logger: makeLogger(call),
    signal: controller.signal,
    cancelled: () => controller.signal.aborted,
    progress: (message) => send({ op: "progress", call, message: String(message) }),
    http: h,
    api: spacesApi(h.request),
    tools: Object.freeze({ call: (name, args) => ask(call, "tools.call", [String(name), args || {}]) }),
    memory: memoryObject(call),
    events: Object.freeze({ publish: (type, data) => ask(call, "events.publish", [String(type), data === undefined ? null : data]) }),
    llm: Object.freeze({ complete: (req) => ask(call, "llm.complete", [req]) }),
    ask: (question, schema) => ask(call, "ask", [question === undefined ? null : question, schema === undefined ? null : schema]),
  };
};

const errorOf = (e) => {
  if (e instanceof Error) {
    const name = e.name && e.name !== "Error" ? `${e.name}: ` : "";
    return { message: `${name}${e.message}`, stack: String(e.stack || "").split("\n")[1] || "" };
  }
  return { message: typeof e === "string" ? e : show([e]) };
};

const encode = (value) => {
  if (value === undefined || value === null) return { kind: "nothing" };
  if (typeof value === "string") return { kind: "text", value };
  if (typeof value === "function" || typeof value === "symbol") throw new TypeError(`run() returned a ${typeof value}`);
  return { kind: "json", value: JSON.parse(JSON.stringify(value)) };
};

async function activate() {
  const entry = path.join(settings.dir, settings.entry);
  const load = createRequire(entry);
  try {
    exportsOf = load(entry);
  } catch (e) {
    // A package neither Node's nor in the plugin's package.json: name it, and why.
    const missing = e && e.code === "MODULE_NOT_FOUND" && /Cannot find module '([^']+)'/.exec(String(e.message));
    if (missing && !missing[1].startsWith(".") && !missing[1].startsWith("/")) {
      const why = new Error(`the plugin requires \`${missing[1]}\`, which is neither a Node.js module nor a dependency in its package.json (a module of the app it was written for?); add it to package.json with a lock file, or remove the require`);
      why.stack = "";
      throw why;
    }
    throw e;
  }
  if (exportsOf && exportsOf.__esModule && exportsOf.default && typeof exportsOf.activate !== "function") {
    exportsOf = exportsOf.default;
  }
  const actions = [];
  let registered = false;
  const context = {
    id: settings.id,
    plugin: Object.freeze({ id: settings.id, version: settings.version }),
    config: settings.config,
    env: settings.env || {},
    t,
    logger: rootLogger,
    registerActions(list) {
      registered = true;
      const factory = typeof list === "function" ? list : null;
      if (factory) list = factory(t);
      if (!Array.isArray(list)) throw new TypeError("registerActions takes an array of actions, or a function (t) => [...] returning one");
      // The same actions in each other language the plugin ships, for their titles.
      const translated = {};
      for (const [language, strings] of Object.entries(factory ? settings.languages || {} : {})) {
        try {
          const again = factory(translator(strings));
          if (Array.isArray(again)) translated[language] = again;
        } catch {}
      }
      list.forEach((action, i) => {
        if (action === null || typeof action !== "object") throw new TypeError("each action is an object { name, label, description, properties, run }");
        const translations = {};
        for (const [language, again] of Object.entries(translated)) {
          const other = again[i];
          if (other && typeof other === "object" && other.name === action.name) translations[language] = JSON.parse(JSON.stringify(other));
        }
        actions.push({ action: JSON.parse(JSON.stringify(action)), runnable: typeof action.run === "function", translations });
        if (typeof action.run === "function" && typeof action.name === "string") runs.set(action.name, action.run);
      });
    },
  };
  const found = [];
  if (typeof (exportsOf && exportsOf.activate) === "function") {
    await exportsOf.activate(context);
  }
  // An Agent Spaces plugin that registered nothing may declare its actions in
  // workflow.js and tools.js instead.
  if (settings.contextFirst && actions.length === 0) {
    const load = (name) => (fs.existsSync(path.join(settings.dir, name)) ? createRequire(entry)(path.join(settings.dir, name)) : undefined);
    const declared = staticActions(load("workflow.js"), load("tools.js"));
    if (declared.length) context.registerActions(declared);
  }
  for (const name of settings.catalog) {
    if (exportsOf && typeof exportsOf[name] === "function") found.push(name);
  }
  return { actions, registered, exportsActivate: typeof (exportsOf && exportsOf.activate) === "function", catalog: found };
}

async function serve(message) {
  const { call } = message;
  const controller = new AbortController();
  running.set(call, controller);
  try {
    let run = runs.get(message.action);
    let value;
    if (message.action === "\u0000health") {
      value = typeof (exportsOf && exportsOf.health) === "function" ? await exportsOf.health() : undefined;
    } else {
      const ctx = callContext(call, message.config, controller);
      if (!run && exportsOf && typeof exportsOf[message.action] === "function") {
        run = exportsOf[message.action];
        value = await run(message.inputs, ctx);
      } else if (!run) {
        throw new Error(`no action named ${message.action}`);
      } else {
        value = settings.contextFirst ? await run(ctx, message.inputs) : await run(message.inputs, ctx);
      }
    }
    send({ op: "done", call, result: encode(value) });
  } catch (e) {
    send({ op: "done", call, error: errorOf(e) });
  } finally {
    running.delete(call);
  }
}

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    return;
  }
  switch (message.op) {
    case "init":
      settings = message;
      activate().then(
        (found) => send({ op: "ready", ...found }),
        (e) => send({ op: "failed", error: errorOf(e) })
      );
      break;
    case "call":
      serve(message);
      break;
    case "cancel": {
      const controller = running.get(message.call);
      if (controller) controller.abort(new Error("the call was cancelled"));
      break;
    }
    case "answer": {
      const pending = waiting.get(message.id);
      if (!pending) break;
      waiting.delete(message.id);
      if (message.error) {
        const e = new Error(message.error.message);
        if (message.error.kind) e.kind = message.error.kind;
        pending.reject(e);
      } else {
        pending.resolve(message.value);
      }
      break;
    }
    case "stop": {
      const done = () => process.exit(0);
      const deactivate = exportsOf && exportsOf.deactivate;
      if (typeof deactivate === "function") {
        Promise.resolve()
          .then(() => deactivate())
          .then(done, done);
        setTimeout(done, 2000).unref();
      } else {
        done();
      }
      break;
    }
  }
});
lines.on("close", () => process.exit(0));
process.on("unhandledRejection", (e) => rootLogger.warn("unhandled rejection:", e));
process.on("uncaughtException", (e) => rootLogger.error("uncaught exception:", e));
