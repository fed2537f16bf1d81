// Helpers the host uses to build the objects plugins see. Evaluated once per runtime as an
// expression: nothing here becomes a global.
(() => {
  "use strict";
  const freeze = Object.freeze;
  // ctx.api's other methods are services of Agent Spaces' desktop app (windows, dialogs,
  // the clipboard): each rejects saying so, rather than being `undefined`.
  const unoffered = (api) =>
    new Proxy(api, {
      get: (target, key) => {
        if (key in target || typeof key !== "string" || key === "then" || key === "toJSON") return target[key];
        return async () => {
          throw new Error(`ctx.api.${key} is a service of Agent Spaces' desktop app, which toolshed (a headless host) does not offer`);
        };
      },
    });
  return freeze({
    // Calls fn(a, b) and always gives a promise: a synchronous throw becomes a rejection.
    invoke: async (fn, a, b) => fn(a, b),
    response: (status, headers, body, truncated, bytes) => ({
      status,
      ok: status >= 200 && status < 300,
      headers,
      body,
      truncated,
      json() {
        return JSON.parse(body);
      },
      // The body byte for byte (`body` is it read as UTF-8 text).
      arrayBuffer() {
        return bytes.slice(0);
      },
    }),
    // ctx.api: the HTTP helpers Agent Spaces' plugins call, over ctx.http's request (the
    // same grants and web rules). A status other than 2xx rejects with it and the body's
    // start; `timeout` is in milliseconds, as there.
    spacesApi: (request) => {
      const call = async (method, url, o, parse) => {
        const opts = o || {};
        const headers = { ...(opts.headers || {}) };
        if (method === "POST" && !Object.keys(headers).some((h) => h.toLowerCase() === "content-type")) {
          headers["content-type"] = "application/json";
        }
        const r = await request({
          method,
          url,
          headers,
          body: method === "POST" ? opts.body : undefined,
          timeoutMs: opts.timeout,
        });
        if (!r.ok) throw new Error(`HTTP ${r.status} from ${url}: ${String(r.body).slice(0, 200)}`);
        return parse(r);
      };
      const json = (r) => (r.body === "" ? null : r.json());
      const buffer = (r) => {
        const bytes = Buffer.from(new Uint8Array(r.arrayBuffer()));
        const type = String(r.headers["content-type"] || "application/octet-stream").split(";")[0].trim();
        return { buffer: bytes, size: bytes.length, mimeType: type };
      };
      const fetchBuffer = (url, o) => call("GET", url, o, buffer);
      return unoffered(freeze({
        fetchJson: (url, o) => call("GET", url, o, json),
        getJson: (url, o) => call("GET", url, o, json),
        postJson: (url, o) => call("POST", url, o, json),
        fetchText: (url, o) => call("GET", url, o, (r) => r.body),
        fetchBuffer,
        fetchBuffers: async (urls, o) => {
          const out = [];
          for (const url of Array.isArray(urls) ? urls : []) {
            try {
              out.push({ url, success: true, ...(await fetchBuffer(url, o)) });
            } catch (e) {
              out.push({ url, success: false, error: String(e && e.message ? e.message : e) });
            }
          }
          return out;
        },
      }));
    },
    http: (request) =>
      freeze({
        request,
        get: (url, opts) => request({ ...(opts || {}), method: "GET", url }),
        post: (url, body, opts) => request({ ...(opts || {}), method: "POST", url, body }),
      }),
    // ctx.memory over one host function: op(name, args).
    memory: (op) =>
      freeze({
        store: (memory) => op("store", typeof memory === "string" ? { text: memory } : memory),
        search: (query, opts) =>
          op("search", typeof query === "string" ? { ...(opts || {}), query } : query),
        get: (id) => op("get", { id }),
        list: (opts) => op("list", opts || {}),
        delete: (id) => op("delete", { id }),
      }),
    // ctx.config.set(key, value) beside the values (not enumerable, so listing the config
    // shows only fields); the local copy follows a successful set.
    configSet: (config, set) => {
      if (!Object.prototype.hasOwnProperty.call(config, "set")) {
        Object.defineProperty(config, "set", {
          enumerable: false,
          value: async (key, value) => {
            await set(key, value);
            config[key] = value;
          },
        });
      }
      return config;
    },
    // CommonJS: `require` over the host's resolve(from, name) and load(path); runs the
    // entry and returns its module.exports.
    commonjs: (host, entry) => {
      const cache = new Map();
      const dirname = (path) => path.slice(0, Math.max(path.lastIndexOf("/"), 0));
      const run = (path) => {
        const cached = cache.get(path);
        if (cached) return cached.exports;
        const loaded = host.load(path);
        const module = { exports: "json" in loaded ? loaded.json : {}, id: path, filename: path };
        cache.set(path, module);
        if (!("json" in loaded)) {
          loaded.run.call(module.exports, module.exports, requireFrom(path), module, path, dirname(path));
        }
        return module.exports;
      };
      const requireFrom = (from) => (name) => {
        if (typeof name !== "string") {
          throw new TypeError("require() takes a file of the plugin, such as './actions.js'");
        }
        return run(host.resolve(from, name));
      };
      return run(entry);
    },
    freeze,
  });
})()
