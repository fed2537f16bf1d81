// ctx.api: the helpers Agent Spaces' plugins call, over the runtime's `request({method,
// url, headers, body, timeoutMs})` → `{status, ok, headers, body, json(), arrayBuffer()}`
// (ctx.http's: the plugin's grants and the web rules). A status other than 2xx rejects
// with it and the body's start; `timeout` is in milliseconds, as there. The app's other
// services (windows, dialogs, the clipboard, files) reject saying a headless host does not
// offer them, rather than being `undefined`. Shared by both runtimes; evaluated as one
// function expression.
(request) => {
  const call = async (method, url, o, parse) => {
    const opts = o || {};
    const headers = { ...(opts.headers || {}) };
    if (method === "POST" && !Object.keys(headers).some((h) => h.toLowerCase() === "content-type")) {
      headers["content-type"] = "application/json";
    }
    const r = await request({ method, url, headers, body: method === "POST" ? opts.body : undefined, timeoutMs: opts.timeout });
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
  const api = Object.freeze({
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
  });
  return new Proxy(api, {
    get: (target, key) => {
      if (key in target || typeof key !== "string" || key === "then" || key === "toJSON") return target[key];
      return async () => {
        throw new Error(`ctx.api.${key} is a service of Agent Spaces' desktop app, which toolshed (a headless host) does not offer`);
      };
    },
  });
}
