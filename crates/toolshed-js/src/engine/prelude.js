// Helpers the host uses to build the objects plugins see. Evaluated once per runtime as an
// expression: nothing here becomes a global.
(() => {
  "use strict";
  const freeze = Object.freeze;
  return freeze({
    // Calls fn(a, b) and always gives a promise: a synchronous throw becomes a rejection.
    invoke: async (fn, a, b) => fn(a, b),
    response: (status, headers, body, truncated) => ({
      status,
      ok: status >= 200 && status < 300,
      headers,
      body,
      truncated,
      json() {
        return JSON.parse(body);
      },
    }),
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
    freeze,
  });
})()
