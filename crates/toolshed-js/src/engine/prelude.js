// Helpers the host uses to build the objects plugins see. Evaluated once per runtime as an
// expression: nothing here becomes a global.
(() => {
  "use strict";
  const freeze = Object.freeze;
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
    // ctx.api: Agent Spaces' helpers over ctx.http's request (spaces_api.js, put here
    // as the prelude is built).
    spacesApi: /*SPACES_API*/ null,
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
