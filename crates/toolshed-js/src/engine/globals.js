// The globals a plugin author expects — console, timers, URL, TextEncoder, atob, Buffer,
// crypto, fetch — each on the capability model: console writes the plugin's log, timers and
// fetch are host operations of the running call (bounded by its deadline; fetch through the
// granted HTTP client, under the same grants as ctx.http). Evaluated once per runtime as a
// function of the host's helpers; it defines the globals and returns nothing.
(host) => {
  "use strict";
  const define = (name, value) =>
    Object.defineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: false });

  // console: to the plugin's log, tagged with its id.
  const log = host.logger;
  define("console", Object.freeze({
    log: log.info, info: log.info, debug: log.debug, trace: log.debug,
    warn: log.warn, error: log.error,
  }));

  // Timers: each wait a host operation of the call; cleared ones never run their callback.
  let nextTimer = 1;
  const live = new Set();
  const later = (fn, ms, args, repeat) => {
    if (typeof fn !== "function") throw new TypeError("setTimeout takes a function");
    const id = nextTimer++;
    live.add(id);
    const tick = () =>
      host.sleep(Number(ms) || 0).then(() => {
        if (!live.has(id)) return;
        if (!repeat) live.delete(id);
        fn(...args);
        if (repeat && live.has(id)) tick();
      });
    tick();
    return id;
  };
  define("setTimeout", (fn, ms, ...args) => later(fn, ms, args, false));
  define("setInterval", (fn, ms, ...args) => later(fn, Math.max(Number(ms) || 0, 1), args, true));
  define("clearTimeout", (id) => void live.delete(id));
  define("clearInterval", (id) => void live.delete(id));
  define("queueMicrotask", (fn) => void Promise.resolve().then(fn));

  // UTF-8, base64 and hex, in JavaScript.
  const utf8Encode = (text) => {
    const s = String(text);
    const out = [];
    for (let i = 0; i < s.length; i++) {
      let c = s.charCodeAt(i);
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
        const d = s.charCodeAt(i + 1);
        if (d >= 0xdc00 && d <= 0xdfff) {
          c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
          i++;
        }
      }
      if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
      if (c < 0x80) out.push(c);
      else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
      else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
      else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    }
    return new Uint8Array(out);
  };
  const utf8Decode = (bytes) => {
    let out = "";
    for (let i = 0; i < bytes.length; ) {
      const b = bytes[i];
      let need = b < 0x80 ? 0 : b >= 0xf0 && b < 0xf8 ? 3 : b >= 0xe0 ? 2 : b >= 0xc2 && b < 0xe0 ? 1 : -1;
      if (need < 0) { out += "\ufffd"; i++; continue; }
      let c = need === 0 ? b : b & (0x3f >> need);
      let ok = i + need < bytes.length;
      for (let k = 1; ok && k <= need; k++) {
        const n = bytes[i + k];
        if ((n & 0xc0) !== 0x80) ok = false;
        else c = (c << 6) | (n & 63);
      }
      if (!ok || (need === 2 && c < 0x800) || (need === 3 && (c < 0x10000 || c > 0x10ffff)) || (c >= 0xd800 && c <= 0xdfff)) {
        out += "\ufffd"; i++; continue;
      }
      out += String.fromCodePoint(c);
      i += need + 1;
    }
    return out;
  };
  const asBytes = (input) => {
    if (input instanceof Uint8Array) return input;
    if (input instanceof ArrayBuffer) return new Uint8Array(input);
    if (ArrayBuffer.isView(input)) return new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
    if (Array.isArray(input)) return Uint8Array.from(input);
    throw new TypeError("expected bytes: a Uint8Array, an ArrayBuffer or an array of numbers");
  };
  const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const toBase64 = (bytes) => {
    let out = "";
    for (let i = 0; i < bytes.length; i += 3) {
      const n = (bytes[i] << 16) | ((bytes[i + 1] || 0) << 8) | (bytes[i + 2] || 0);
      out += B64[n >> 18] + B64[(n >> 12) & 63];
      out += i + 1 < bytes.length ? B64[(n >> 6) & 63] : "=";
      out += i + 2 < bytes.length ? B64[n & 63] : "=";
    }
    return out;
  };
  const fromBase64 = (text) => {
    const s = String(text).replace(/[\s=]/g, "").replace(/-/g, "+").replace(/_/g, "/");
    if (/[^A-Za-z0-9+/]/.test(s) || s.length % 4 === 1) {
      throw new Error("the text is not base64");
    }
    const out = [];
    for (let i = 0; i < s.length; i += 4) {
      const n = [0, 1, 2, 3].map((k) => (i + k < s.length ? B64.indexOf(s[i + k]) : 0));
      const v = (n[0] << 18) | (n[1] << 12) | (n[2] << 6) | n[3];
      out.push(v >> 16);
      if (i + 2 < s.length) out.push((v >> 8) & 255);
      if (i + 3 < s.length) out.push(v & 255);
    }
    return new Uint8Array(out);
  };
  const toHex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  const fromHex = (text) => {
    const s = String(text);
    if (s.length % 2 || /[^0-9a-fA-F]/.test(s)) throw new Error("the text is not hex");
    const out = new Uint8Array(s.length / 2);
    for (let i = 0; i < out.length; i++) out[i] = parseInt(s.slice(2 * i, 2 * i + 2), 16);
    return out;
  };

  class TextEncoder {
    get encoding() { return "utf-8"; }
    encode(text = "") { return utf8Encode(text); }
  }
  class TextDecoder {
    constructor(label = "utf-8") {
      if (!/^utf-?8$/i.test(String(label))) throw new RangeError(`TextDecoder supports utf-8 only, not ${label}`);
    }
    get encoding() { return "utf-8"; }
    decode(bytes) { return bytes === undefined ? "" : utf8Decode(asBytes(bytes)); }
  }
  define("TextEncoder", TextEncoder);
  define("TextDecoder", TextDecoder);
  // atob/btoa: base64 of Latin-1 strings, as in browsers.
  define("btoa", (text) => {
    const s = String(text);
    if (/[^\u0000-\u00ff]/.test(s)) throw new Error("btoa: the string has characters outside Latin-1");
    return toBase64(Array.from(s, (c) => c.charCodeAt(0)));
  });
  define("atob", (text) => String.fromCharCode(...fromBase64(text)));

  // Buffer: the subset plugins use — from/toString in utf8, base64, hex; concat; byteLength.
  class Buffer extends Uint8Array {
    static from(value, encoding = "utf8") {
      let bytes;
      if (typeof value === "string") {
        const e = String(encoding).toLowerCase();
        if (e === "utf8" || e === "utf-8") bytes = utf8Encode(value);
        else if (e === "base64" || e === "base64url") bytes = fromBase64(value);
        else if (e === "hex") bytes = fromHex(value);
        else if (e === "latin1" || e === "binary") bytes = Uint8Array.from(value, (c) => c.charCodeAt(0) & 255);
        else throw new TypeError(`Buffer: unknown encoding ${encoding}`);
      } else {
        bytes = asBytes(value);
      }
      const out = new Buffer(bytes.length);
      out.set(bytes);
      return out;
    }
    static alloc(size) { return new Buffer(size); }
    static isBuffer(value) { return value instanceof Buffer; }
    static byteLength(value, encoding) { return Buffer.from(value, encoding).length; }
    static concat(list) {
      const out = new Buffer(list.reduce((n, b) => n + b.length, 0));
      let at = 0;
      for (const b of list) { out.set(b, at); at += b.length; }
      return out;
    }
    toString(encoding = "utf8") {
      const e = String(encoding).toLowerCase();
      if (e === "utf8" || e === "utf-8") return utf8Decode(this);
      if (e === "base64") return toBase64(this);
      if (e === "base64url") return toBase64(this).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
      if (e === "hex") return toHex(this);
      if (e === "latin1" || e === "binary") return String.fromCharCode(...this);
      throw new TypeError(`Buffer: unknown encoding ${encoding}`);
    }
    toJSON() { return { type: "Buffer", data: Array.from(this) }; }
  }
  define("Buffer", Buffer);

  // crypto: random values from the host's generator.
  const randomUUID = () => {
    const b = host.randomBytes(16);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const h = toHex(b);
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  };
  // createHash/createHmac as Node has them (update, then digest once), and the
  // WebCrypto digest and HMAC sign; the hashing itself is the host's.
  const hostDigest = (algorithm, data, key) =>
    key === undefined ? host.digest(algorithm, Array.from(data)) : host.digest(algorithm, Array.from(data), Array.from(key));
  const bytesOf = (data, encoding) => (typeof data === "string" ? Buffer.from(data, encoding || "utf8") : asBytes(data));
  class Hash {
    #algorithm; #key; #chunks = []; #done = false;
    constructor(algorithm, key) {
      this.#algorithm = String(algorithm);
      this.#key = key;
      hostDigest(this.#algorithm, [], key); // an unknown algorithm throws now
    }
    update(data, encoding) {
      if (this.#done) throw new Error("Digest already called");
      this.#chunks.push(bytesOf(data, encoding));
      return this;
    }
    digest(encoding) {
      if (this.#done) throw new Error("Digest already called");
      this.#done = true;
      const out = Buffer.from(hostDigest(this.#algorithm, Buffer.concat(this.#chunks), this.#key));
      return encoding === undefined ? out : out.toString(encoding);
    }
  }
  const hashName = (algorithm) => String(typeof algorithm === "object" && algorithm !== null ? algorithm.name : algorithm);
  const subtle = Object.freeze({
    digest: async (algorithm, data) => new Uint8Array(hostDigest(hashName(algorithm), asBytes(data))).buffer,
    importKey: async (format, keyData, algorithm, extractable, usages) => {
      if (format !== "raw") throw new TypeError("subtle.importKey: only raw keys are supported");
      if (String(algorithm && algorithm.name).toUpperCase() !== "HMAC") throw new TypeError("subtle.importKey: only HMAC keys are supported");
      return Object.freeze({ type: "secret", algorithm: { name: "HMAC", hash: { name: hashName(algorithm.hash) } }, extractable: Boolean(extractable), usages: usages || [], raw: asBytes(keyData).slice() });
    },
    sign: async (algorithm, key, data) => {
      if (String(hashName(algorithm)).toUpperCase() !== "HMAC") throw new TypeError("subtle.sign: only HMAC is supported");
      return new Uint8Array(hostDigest(key.algorithm.hash.name, asBytes(data), key.raw)).buffer;
    },
  });
  define("crypto", Object.freeze({
    createHash: (algorithm) => new Hash(algorithm),
    createHmac: (algorithm, key) => new Hash(algorithm, bytesOf(key)),
    randomBytes: (size) => Buffer.from(host.randomBytes(size)),
    subtle,
    randomUUID,
    getRandomValues(array) {
      if (!ArrayBuffer.isView(array) || array instanceof Float32Array || array instanceof Float64Array) {
        throw new TypeError("getRandomValues takes an integer typed array");
      }
      if (array.byteLength > 65536) throw new RangeError("getRandomValues fills at most 65536 bytes");
      new Uint8Array(array.buffer, array.byteOffset, array.byteLength).set(host.randomBytes(array.byteLength));
      return array;
    },
  }));

  // URLSearchParams, in JavaScript; URL parsed by the host (WHATWG rules).
  const formEncode = (s) => encodeURIComponent(s).replace(/%20/g, "+").replace(/[!'()~]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());
  const formDecode = (s) => {
    try { return decodeURIComponent(s.replace(/\+/g, " ")); } catch { return s; }
  };
  class URLSearchParams {
    #pairs = [];
    #changed = null;
    constructor(init = "") {
      if (typeof init === "string") {
        for (const part of init.replace(/^\?/, "").split("&")) {
          if (!part) continue;
          const at = part.indexOf("=");
          this.#pairs.push(at < 0 ? [formDecode(part), ""] : [formDecode(part.slice(0, at)), formDecode(part.slice(at + 1))]);
        }
      } else if (init && typeof init[Symbol.iterator] === "function") {
        for (const [k, v] of init) this.#pairs.push([String(k), String(v)]);
      } else if (init && typeof init === "object") {
        for (const k of Object.keys(init)) this.#pairs.push([k, String(init[k])]);
      }
    }
    static _link(params, onChange) { params.#changed = onChange; return params; }
    #update() { if (this.#changed) this.#changed(this.toString()); }
    get size() { return this.#pairs.length; }
    append(k, v) { this.#pairs.push([String(k), String(v)]); this.#update(); }
    delete(k) { this.#pairs = this.#pairs.filter(([n]) => n !== String(k)); this.#update(); }
    get(k) { const p = this.#pairs.find(([n]) => n === String(k)); return p ? p[1] : null; }
    getAll(k) { return this.#pairs.filter(([n]) => n === String(k)).map(([, v]) => v); }
    has(k) { return this.#pairs.some(([n]) => n === String(k)); }
    set(k, v) {
      const i = this.#pairs.findIndex(([n]) => n === String(k));
      if (i < 0) this.#pairs.push([String(k), String(v)]);
      else this.#pairs = this.#pairs.filter(([n], j) => j <= i || n !== String(k)).map((p, j) => (j === i ? [p[0], String(v)] : p));
      this.#update();
    }
    sort() { this.#pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)); this.#update(); }
    forEach(fn, self) { for (const [k, v] of this.#pairs) fn.call(self, v, k, this); }
    *entries() { yield* this.#pairs.map((p) => [...p]); }
    *keys() { for (const [k] of this.#pairs) yield k; }
    *values() { for (const [, v] of this.#pairs) yield v; }
    [Symbol.iterator]() { return this.entries(); }
    toString() { return this.#pairs.map(([k, v]) => formEncode(k) + "=" + formEncode(v)).join("&"); }
  }
  // Kept here, then taken off the class: how a URL's searchParams writes back to it.
  const linkParams = URLSearchParams._link;
  delete URLSearchParams._link;
  class URL {
    #parts;
    #params;
    constructor(input, base) {
      const parts = host.url(String(input), base === undefined ? null : String(base));
      if (!parts) throw new TypeError(`Invalid URL: ${input}`);
      this.#parts = parts;
    }
    static canParse(input, base) { return Boolean(host.url(String(input), base === undefined ? null : String(base))); }
    #with(part, value) {
      const parts = host.urlWith(this.#parts.href, part, String(value));
      if (parts) { this.#parts = parts; this.#params = undefined; }
    }
    get href() { return this.#parts.href; }
    set href(v) {
      const parts = host.url(String(v), null);
      if (!parts) throw new TypeError(`Invalid URL: ${v}`);
      this.#parts = parts; this.#params = undefined;
    }
    get origin() { return this.#parts.origin; }
    get protocol() { return this.#parts.protocol; }
    get username() { return this.#parts.username; }
    get password() { return this.#parts.password; }
    get host() { return this.#parts.host; }
    get hostname() { return this.#parts.hostname; }
    get port() { return this.#parts.port; }
    get pathname() { return this.#parts.pathname; }
    set pathname(v) { this.#with("pathname", v); }
    get search() { return this.#parts.search; }
    set search(v) { this.#with("search", v); }
    get hash() { return this.#parts.hash; }
    set hash(v) { this.#with("hash", v); }
    get searchParams() {
      if (!this.#params) {
        this.#params = linkParams(new URLSearchParams(this.#parts.search), (query) => {
          const params = this.#params;
          this.#with("search", query);
          this.#params = params;
        });
      }
      return this.#params;
    }
    toString() { return this.href; }
    toJSON() { return this.href; }
  }
  define("URL", URL);
  define("URLSearchParams", URLSearchParams);

  // fetch over the call's granted HTTP client (the same grants and rules as ctx.http).
  class Headers {
    #map = new Map();
    constructor(init) {
      if (init instanceof Headers) init.forEach((v, k) => this.append(k, v));
      else if (init && typeof init[Symbol.iterator] === "function") for (const [k, v] of init) this.append(k, v);
      else if (init) for (const k of Object.keys(init)) this.append(k, init[k]);
    }
    append(k, v) {
      const key = String(k).toLowerCase();
      this.#map.set(key, this.#map.has(key) ? this.#map.get(key) + ", " + v : String(v));
    }
    set(k, v) { this.#map.set(String(k).toLowerCase(), String(v)); }
    get(k) { const v = this.#map.get(String(k).toLowerCase()); return v === undefined ? null : v; }
    has(k) { return this.#map.has(String(k).toLowerCase()); }
    delete(k) { this.#map.delete(String(k).toLowerCase()); }
    forEach(fn, self) { for (const [k, v] of this.#map) fn.call(self, v, k, this); }
    *entries() { yield* this.#map.entries(); }
    *keys() { yield* this.#map.keys(); }
    *values() { yield* this.#map.values(); }
    [Symbol.iterator]() { return this.entries(); }
  }
  // The bytes of responses fetch received, for arrayBuffer() byte for byte.
  const raw = new WeakMap();
  class Response {
    #body;
    #used = false;
    constructor(body, init = {}) {
      this.#body = body === undefined || body === null ? "" : String(body);
      this.status = init.status === undefined ? 200 : init.status;
      this.statusText = init.statusText || "";
      this.ok = this.status >= 200 && this.status < 300;
      this.headers = new Headers(init.headers);
      this.url = init.url || "";
      this.redirected = false;
      this.type = "basic";
    }
    get bodyUsed() { return this.#used; }
    #take() {
      if (this.#used) return Promise.reject(new TypeError("the body has been read already"));
      this.#used = true;
      return Promise.resolve(this.#body);
    }
    text() { return this.#take(); }
    json() { return this.#take().then((t) => JSON.parse(t)); }
    arrayBuffer() {
      return this.#take().then((t) => (raw.has(this) ? raw.get(this).slice(0) : utf8Encode(t).buffer));
    }
    clone() {
      if (this.#used) throw new TypeError("the body has been read already");
      const copy = new Response(this.#body, this);
      if (raw.has(this)) raw.set(copy, raw.get(this));
      return copy;
    }
  }
  define("Headers", Headers);
  define("Response", Response);
  define("fetch", async (input, init = {}) => {
    const url = input instanceof URL ? input.href : typeof input === "object" && input && input.url ? input.url : String(input);
    const headers = {};
    new Headers(init.headers).forEach((v, k) => { headers[k] = v; });
    let body = init.body;
    if (body !== undefined && body !== null && typeof body !== "string") {
      if (body instanceof URLSearchParams) {
        body = body.toString();
        if (!("content-type" in headers)) headers["content-type"] = "application/x-www-form-urlencoded;charset=UTF-8";
      } else if (ArrayBuffer.isView(body) || body instanceof ArrayBuffer) {
        body = utf8Decode(asBytes(body));
      } else {
        throw new TypeError("fetch: the body must be a string, URLSearchParams or bytes (use JSON.stringify for objects)");
      }
    }
    const r = await host.request({
      method: init.method || "GET", url, headers,
      ...(body === undefined || body === null ? {} : { body }),
      ...(init.timeoutMs ? { timeoutMs: init.timeoutMs } : {}),
    });
    const response = new Response(r.body, { status: r.status, headers: r.headers, url });
    raw.set(response, r.arrayBuffer());
    return response;
  });
};
