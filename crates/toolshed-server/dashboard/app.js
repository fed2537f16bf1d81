// The toolshed dashboard: one page over the REST API (/api/v1), no framework, no other
// origin. Every value from the server is put into the page as text (never as HTML).
"use strict";

const state = {
  token: sessionStorage.getItem("toolshed.token"),
  csrf: null,
  info: null,
  version: "",
  cleanup: [],
  gen: 0,
};

// ---- DOM helpers ---------------------------------------------------------------------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else if (key === "value") el.value = value;
    else if (key === "checked") el.checked = !!value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

// Shows a page; a page whose turn has passed (the reader went elsewhere while it loaded)
// shows nothing. `gen` is the page's turn (`undefined`: always shown).
function render(gen, ...children) {
  if (gen !== undefined && gen !== state.gen) return;
  const main = document.getElementById("main");
  main.replaceChildren();
  append(main, children);
}

function badge(text) {
  return h("span", { class: `badge s-${String(text).toLowerCase().replace(/\s+/g, "-")}` }, text);
}

function toast(message, bad) {
  const box = h("div", { class: bad ? "reason" : "" }, message);
  document.getElementById("toast").append(box);
  setTimeout(() => box.remove(), bad ? 8000 : 2500);
}

function when(ms) {
  return ms ? new Date(ms).toLocaleTimeString() : "";
}

// ---- the API ---------------------------------------------------------------------------

class SignedOut extends Error {}

async function api(path, { method = "GET", body, owner } = {}) {
  // Its own reads (memories) are then not written to the audit log as calls.
  const headers = { "X-Toolshed-Client": "dashboard" };
  if (owner) headers["X-Toolshed-Owner"] = owner;
  if (state.token) headers.Authorization = `Bearer ${state.token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && state.csrf && !state.token) headers["X-CSRF-Token"] = state.csrf;
  const url = path.startsWith("/api/") ? path : `/api/v1${path}`;
  const res = await fetch(url, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
    cache: "no-store",
  });
  if (res.status === 401) {
    // A first visit has nothing to sign in again with: just the form.
    showLogin(state.token || state.csrf ? "Sign in again: the server did not accept the token or session." : undefined);
    throw new SignedOut("signed out");
  }
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = text;
  }
  if (!res.ok) throw new Error((data && data.error && data.error.message) || `${res.status} ${res.statusText}`);
  return data;
}

// Calls `tool`; `owner` names whose call it is (the admin may act for any owner).
function execute(tool, args, owner) {
  return api(`/tools/${encodeURIComponent(tool)}/execute`, { method: "POST", body: { arguments: args }, owner });
}

// Runs `work`; a failure becomes a toast (signing out is shown by the login page).
async function attempt(work) {
  try {
    return await work();
  } catch (e) {
    if (!(e instanceof SignedOut)) toast(e.message, true);
    return undefined;
  }
}

// ---- signing in ------------------------------------------------------------------------

function showLogin(message) {
  stopEvents();
  leavePage();
  document.getElementById("logout").hidden = true;
  const input = h("input", { type: "password", id: "token", autocomplete: "off", required: true,
    "aria-describedby": "token-help" });
  render(
    undefined,
    h("form", {
      class: "login card",
      onsubmit: (e) => {
        e.preventDefault();
        state.token = input.value.trim();
        sessionStorage.setItem("toolshed.token", state.token);
        boot();
      },
    },
      h("h1", {}, "Sign in to toolshed"),
      message ? h("p", { class: "reason" }, message) : null,
      h("label", { for: "token" }, "Token"),
      input,
      h("p", { id: "token-help", class: "field-help" },
        "`toolshed token` prints it. It is kept in this tab only. Or run `toolshed dashboard` for a one-time login link."),
      h("button", { class: "primary", type: "submit" }, "Sign in")),
  );
  input.focus();
}

async function boot() {
  try {
    const session = await api("/api/ui/session");
    state.csrf = session.csrf;
    state.info = session.info;
    state.version = session.version;
  } catch (e) {
    if (!(e instanceof SignedOut)) showLogin(e.message);
    return;
  }
  if (!state.token && !state.csrf) return showLogin();
  document.getElementById("logout").hidden = false;
  startEvents();
  route();
}

document.getElementById("logout").addEventListener("click", async () => {
  sessionStorage.removeItem("toolshed.token");
  state.token = null;
  await attempt(() => api("/api/ui/logout", { method: "POST" }));
  state.csrf = null;
  showLogin("Signed out.");
});

// ---- the event stream (Server-Sent Events read with fetch, so the token goes in a header)

let events = null;

function startEvents() {
  if (events) return;
  const controller = new AbortController();
  events = controller;
  let lastId = null;
  (async () => {
    while (!controller.signal.aborted) {
      try {
        const headers = {};
        if (state.token) headers.Authorization = `Bearer ${state.token}`;
        if (lastId) headers["Last-Event-ID"] = lastId;
        const res = await fetch("/api/v1/events", { headers, signal: controller.signal, credentials: "same-origin" });
        if (!res.ok || !res.body) throw new Error(String(res.status));
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value;
          let cut;
          while ((cut = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, cut);
            buffer = buffer.slice(cut + 2);
            let data = "";
            for (const line of block.split("\n")) {
              if (line.startsWith("data:")) data += line.slice(5).trim();
              else if (line.startsWith("id:")) lastId = line.slice(3).trim();
            }
            if (!data) continue;
            try {
              window.dispatchEvent(new CustomEvent("toolshed-event", { detail: JSON.parse(data) }));
            } catch {
              /* not JSON: skipped */
            }
          }
        }
      } catch {
        /* reconnect below */
      }
      if (!controller.signal.aborted) await new Promise((r) => setTimeout(r, 2000));
    }
  })();
}

function stopEvents() {
  if (events) events.abort();
  events = null;
}

// Calls `handler` for events of the given type prefixes while the page is shown.
function onEvents(gen, prefixes, handler) {
  if (gen !== state.gen) return;
  const listener = (e) => {
    if (prefixes.some((p) => String(e.detail.type || "").startsWith(p))) handler(e.detail);
  };
  window.addEventListener("toolshed-event", listener);
  state.cleanup.push(() => window.removeEventListener("toolshed-event", listener));
}

function every(gen, ms, work) {
  if (gen !== state.gen) return;
  const timer = setInterval(work, ms);
  state.cleanup.push(() => clearInterval(timer));
}

// ---- pages -----------------------------------------------------------------------------

const pages = { "": overview, plugins, tools, activity, approvals, jobs, processes, servers, agents, memory };

function leavePage() {
  state.gen += 1;
  for (const undo of state.cleanup.splice(0)) undo();
}

function route() {
  if (!state.token && !state.csrf) return;
  leavePage();
  const [name, ...rest] = location.hash.replace(/^#\/?/, "").split("/");
  for (const link of document.querySelectorAll("#nav a")) {
    const target = link.getAttribute("href").replace(/^#\/?/, "");
    if (target === name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const page = pages[name] || overview;
  const gen = ++state.gen;
  attempt(() => page(rest.map(decodeURIComponent), gen));
}

window.addEventListener("hashchange", route);

async function overview(_args, gen) {
  const [health, list, audit] = await Promise.all([api("/health"), api("/plugins"), api("/audit?limit=500")]);
  const counts = {};
  for (const p of list.plugins) counts[p.state] = (counts[p.state] || 0) + 1;
  const minuteAgo = Date.now() - 60_000;
  const recent = audit.audit.filter((row) => row.ts_ms >= minuteAgo);
  const errors = audit.audit.filter((row) => row.outcome !== "ok");
  const info = state.info || {};
  const card = (label, value, extra) => h("div", { class: "card" }, h("div", { class: "muted" }, label), h("div", { class: "big" }, value), extra);
  const charts = h("div", { class: "charts", id: "charts" }, h("p", { class: "muted" }, "Loading the figures…"));
  render(
    gen,
    h("h1", {}, "Overview"),
    h("div", { class: "grid" },
      card("Version", health.version, h("div", { class: "muted" }, `up ${Math.round(health.uptime_ms / 1000)} s`)),
      card("Calls in the last minute", recent.length),
      card("Errors (last 500 calls)", errors.length),
      card("Plugins", list.plugins.length,
        h("div", { class: "actions" }, Object.entries(counts).map(([s, n]) => h("span", {}, badge(s), ` ${n}`))))),
    h("h2", {}, "The last hour"),
    charts,
    h("h2", {}, "Workspace"),
    h("p", {}, h("code", {}, info.workspace || "")),
    h("h2", {}, "Sandbox"),
    h("p", {}, "Commands run in ", h("code", {}, (info.sandbox && info.sandbox.mode) || "?"),
      " mode, network ", h("code", {}, (info.sandbox && info.sandbox.network) || "?"), "."),
    errors.length ? h("h2", {}, "Latest errors") : null,
    errors.length ? auditTable(errors.slice(0, 10)) : null,
  );
  let seen = "";
  const draw = async () => {
    const stats = await api("/stats?minutes=60");
    // Only the moment changes: redraw when the figures do.
    const now = JSON.stringify([stats.audit, stats.samples.length, stats.now.approvals, stats.now.processes]);
    if (now === seen) return;
    seen = now;
    charts.replaceChildren(...drawCharts(stats).filter(Boolean));
  };
  await attempt(draw);
  every(gen, 10_000, () => attempt(draw));
}

// -- plugins

async function plugins(args, gen) {
  const list = await api("/plugins");
  const selected = args[0];
  // Plugins that need a person first.
  const rank = (p) => ({ error: 0, degraded: 1, paused: 1 })[p.state] ?? 2;
  const sorted = list.plugins.map((p, i) => [p, i]).sort((a, b) => rank(a[0]) - rank(b[0]) || a[1] - b[1]).map(([p]) => p);
  const rows = sorted.map((p) =>
    h("tr", { "data-plugin": p.id },
      h("td", {}, h("a", { href: `#/plugins/${encodeURIComponent(p.id)}` }, p.name), h("div", { class: "muted" }, p.id),
        (p.tags || []).length ? h("div", { class: "tags" }, (p.tags || []).map((t) => h("span", { class: "tag" }, t))) : null,
        p.runtime ? h("div", { class: "muted" }, p.runtime) : null),
      h("td", {}, p.needs_setup && p.state === "running"
        ? [badge("needs setup"), h("div", { class: "reason" }, p.needs_setup)]
        : [badge(p.state), p.reason ? h("div", { class: "reason" }, p.reason) : null]),
      h("td", { class: "wide" }, p.root, p.dir ? h("div", { class: "muted" }, p.dir) : null),
      h("td", { class: "wide" }, String(p.tools.length)),
      h("td", {}, pluginActions(p))));
  const path = h("input", { id: "install-source", placeholder: "/path/to/plugin, or https://…/plugin.zip" });
  const sha = h("input", { id: "install-sha", placeholder: "sha256 (for a URL)" });
  const progress = h("progress", { hidden: true });
  const steps = h("ol", { id: "install-steps", class: "steps", hidden: true });
  // Each step of an install (download, bytes so far, checks, unpacking) as it comes.
  onEvents(gen, ["plugin.install_progress"], (e) => {
    steps.hidden = false;
    steps.append(h("li", {}, e.data.message));
  });
  render(
    gen,
    h("h1", {}, "Plugins"),
    selected ? await pluginDetails(selected) : null,
    h("table", {},
      h("thead", {}, h("tr", {}, h("th", {}, "Plugin"), h("th", {}, "State"), h("th", { class: "wide" }, "Source"), h("th", { class: "wide" }, "Tools"), h("th", {}, "Actions"))),
      h("tbody", {}, rows)),
    h("h2", {}, "Install"),
    h("form", {
      class: "toolbar",
      onsubmit: async (e) => {
        e.preventDefault();
        progress.hidden = false;
        steps.replaceChildren();
        const body = { source: path.value.trim() };
        if (sha.value.trim()) body.sha256 = sha.value.trim();
        const done = await attempt(() => api("/plugins", { method: "POST", body }));
        progress.hidden = true;
        if (done) {
          toast(`installed ${(done.plugin && done.plugin.id) || body.source}`);
          route();
        }
      },
    }, h("div", {}, h("label", { for: "install-source" }, "Path or URL"), path), h("div", {}, h("label", { for: "install-sha" }, "SHA-256"), sha),
      h("button", { type: "submit" }, "Install"), progress),
    steps,
  );
  onEvents(gen, ["plugin.state_changed"], () => route());
}

function pluginActions(p) {
  const act = (label, method, suffix, cls) =>
    h("button", {
      type: "button",
      class: cls,
      "data-action": label.toLowerCase(),
      onclick: async (e) => {
        if (label === "Uninstall" && !confirm(`Uninstall ${p.id}?`)) return;
        e.target.disabled = true;
        const done = await attempt(() => api(`/plugins/${encodeURIComponent(p.id)}${suffix}`, { method }));
        if (done !== undefined) toast(`${label.toLowerCase()}: ${p.id}`);
        route();
      },
    }, label);
  const off = p.state === "disabled" || p.state === "installed";
  return h("div", { class: "actions" },
    off ? act("Enable", "POST", "/enable") : act("Disable", "POST", "/disable"),
    p.state === "paused" ? act("Resume", "POST", "/resume")
      : p.state === "running" || p.state === "degraded" ? act("Pause", "POST", "/pause") : null,
    act("Reload", "POST", "/reload"),
    p.root === "user" ? act("Uninstall", "DELETE", "", "danger") : null);
}

async function pluginDetails(id) {
  const enc = encodeURIComponent(id);
  const [config, grants] = await Promise.all([api(`/plugins/${enc}/config`), api(`/plugins/${enc}/grants`).catch(() => null)]);
  const inputs = {};
  const fields = config.fields.map((f) => {
    const fid = `cfg-${f.key}`;
    let input;
    if (f.type === "boolean") input = h("input", { id: fid, type: "checkbox", checked: f.value === true, class: "check" });
    else if (f.options && f.options.length) input = h("select", { id: fid }, f.options.map((o) => h("option", { value: o, selected: o === f.value }, String(o))));
    else if (f.secret) input = h("input", { id: fid, type: "password", autocomplete: "off", placeholder: f.set ? "set (type to replace)" : "not set" });
    else input = h("input", { id: fid, type: f.type === "number" ? "number" : "text", value: f.value === undefined || f.value === null ? "" : String(f.value) });
    inputs[f.key] = { field: f, input };
    return h("div", {}, h("label", { for: fid }, f.label || f.key, f.required ? " *" : ""), input,
      f.description ? h("div", { class: "field-help" }, f.description) : null);
  });
  const save = async (e) => {
    e.preventDefault();
    const values = {};
    for (const [key, { field, input }] of Object.entries(inputs)) {
      if (field.type === "boolean") values[key] = input.checked;
      else if (field.secret) { if (input.value) values[key] = input.value; }
      else if (input.value === "") continue;
      else values[key] = field.type === "number" ? Number(input.value) : input.value;
    }
    if (await attempt(() => api(`/plugins/${enc}/config`, { method: "PUT", body: { values } }))) toast(`saved the config of ${id}`);
  };
  return h("section", { class: "card", "aria-label": `Details of ${id}` },
    h("h2", {}, id),
    fields.length ? h("form", { onsubmit: save }, fields, h("p", {}, h("button", { class: "primary", type: "submit" }, "Save"))) : h("p", { class: "muted" }, "No settings."),
    grants ? h("div", {}, h("h2", {}, "Grants"), h("pre", {}, JSON.stringify(grants, null, 2))) : null);
}

// -- tools and the run form

async function tools(args, gen) {
  const [list, described] = await Promise.all([api("/tools").then((r) => r.tools), api("/tools/groups").then((r) => r.groups).catch(() => [])]);
  const search = h("input", { type: "search", placeholder: "Search tools", "aria-label": "Search tools", id: "tool-search" });
  const about = Object.fromEntries(described.map((g) => [g.name, g]));
  const groups = [...new Set(list.map((t) => t.group))].sort();
  const group = h("select", { "aria-label": "Group", id: "tool-group" }, h("option", { value: "" }, "all groups"),
    groups.map((g) => h("option", { value: g, title: (about[g] && about[g].description) || "" }, about[g] ? `${about[g].label} (${g})` : g)));
  const groupNote = h("p", { class: "muted", id: "tool-group-about" });
  const listBox = h("div", { class: "list card", role: "list" });
  const detail = h("div", {});
  const show = () => {
    const q = search.value.toLowerCase();
    groupNote.textContent = (group.value && about[group.value] && about[group.value].description) || "";
    listBox.replaceChildren();
    for (const t of list) {
      if (group.value && t.group !== group.value) continue;
      if (q && !`${t.name} ${t.title || ""} ${t.description}`.toLowerCase().includes(q)) continue;
      append(listBox, [h("button", { type: "button", role: "listitem", "aria-pressed": t.name === args[0] ? "true" : "false",
        onclick: () => { location.hash = `#/tools/${encodeURIComponent(t.name)}`; } },
        h("strong", {}, t.name), " ", h("span", { class: "muted", title: (about[t.group] && about[t.group].description) || "" }, about[t.group] ? about[t.group].label : t.group))]);
    }
  };
  search.addEventListener("input", show);
  group.addEventListener("change", show);
  show();
  const chosen = list.find((t) => t.name === args[0]);
  if (chosen) append(detail, [toolDetail(chosen)]);
  else append(detail, [h("p", { class: "muted" }, `${list.length} tools. Choose one to see its schema and run it.`)]);
  render(gen, h("h1", {}, "Tools"), h("div", { class: "toolbar" }, search, group), groupNote, h("div", { class: "split" }, listBox, detail));
}

function toolDetail(t) {
  const a = t.annotations || {};
  const flags = ["read_only", "destructive", "idempotent", "open_world"].filter((k) => a[k]);
  const form = schemaForm(t.input_schema || {}, "arg");
  const out = h("div", { id: "result", "aria-live": "polite" });
  return h("section", { class: "card" },
    h("h2", {}, t.title || t.name, " ", h("code", {}, t.name)),
    h("p", {}, t.description),
    h("p", { class: "actions" }, badge(`danger ${t.danger}`), flags.map((f) => badge(f.replace("_", " "))), h("span", { class: "muted" }, t.plugin_id)),
    h("form", {
      id: "run-form",
      onsubmit: async (e) => {
        e.preventDefault();
        let value;
        try {
          value = form.read();
        } catch (err) {
          out.replaceChildren(h("p", { class: "reason" }, err.message));
          return;
        }
        out.replaceChildren(h("p", { class: "muted" }, "Running…"));
        try {
          showResult(out, await execute(t.name, value));
        } catch (err) {
          if (!(err instanceof SignedOut)) out.replaceChildren(h("div", { class: "result-error" }, h("pre", {}, err.message)));
        }
      },
    }, form.node, h("p", {}, h("button", { class: "primary", type: "submit" }, "Run"))),
    out);
}

// A form for a JSON Schema; `read()` gives the value or throws naming the field.
function schemaForm(schema, path, name, required) {
  const type = Array.isArray(schema.type) ? schema.type.find((x) => x !== "null") : schema.type;
  const id = path.replace(/[^a-zA-Z0-9_-]/g, "-");
  const label = name ? h("label", { for: id }, name, required ? " *" : "", schema.description ? h("div", { class: "field-help" }, schema.description) : null) : null;
  if (type === "object" && schema.properties && Object.keys(schema.properties).length) {
    const req = new Set(schema.required || []);
    const parts = Object.entries(schema.properties).map(([key, sub]) => [key, schemaForm(sub, `${path}-${key}`, key, req.has(key))]);
    const node = name ? h("fieldset", {}, h("legend", {}, name), parts.map(([, p]) => p.node)) : h("div", {}, parts.map(([, p]) => p.node));
    return {
      node,
      read() {
        const value = {};
        for (const [key, part] of parts) {
          const v = part.read();
          if (v === undefined) {
            if (req.has(key)) throw new Error(`${key} is required`);
          } else value[key] = v;
        }
        return name && !required && Object.keys(value).length === 0 ? undefined : value;
      },
    };
  }
  let input;
  let read;
  if (schema.enum) {
    input = h("select", { id }, h("option", { value: "" }, ""), schema.enum.map((v) => h("option", { value: JSON.stringify(v) }, String(v))));
    read = () => (input.value === "" ? undefined : JSON.parse(input.value));
  } else if (type === "boolean") {
    input = h("select", { id }, h("option", { value: "" }, ""), h("option", { value: "true" }, "true"), h("option", { value: "false" }, "false"));
    read = () => (input.value === "" ? undefined : input.value === "true");
  } else if (type === "integer" || type === "number") {
    input = h("input", { id, type: "number", step: type === "integer" ? "1" : "any", value: schema.default });
    read = () => (input.value === "" ? undefined : Number(input.value));
  } else if (type === "string") {
    const long = (schema.maxLength || 0) > 20000 || /content|text|body|patch|code|script/.test(name || "");
    input = long ? h("textarea", { id }) : h("input", { id, type: "text", value: schema.default });
    read = () => (input.value === "" ? undefined : input.value);
  } else if (type === "array" && schema.items && ["string", "number", "integer"].includes(schema.items.type)) {
    input = h("textarea", { id, placeholder: "one per line" });
    read = () => {
      const lines = input.value.split("\n").map((l) => l.trim()).filter(Boolean);
      if (!lines.length) return undefined;
      return schema.items.type === "string" ? lines : lines.map(Number);
    };
  } else {
    input = h("textarea", { id, placeholder: "JSON" });
    read = () => {
      if (!input.value.trim()) return undefined;
      try {
        return JSON.parse(input.value);
      } catch {
        throw new Error(`${name || "the arguments"}: not valid JSON`);
      }
    };
  }
  return { node: h("div", {}, label, input), read };
}

function showResult(out, result) {
  const blocks = [];
  for (const c of result.content || []) {
    if (c.type === "text") blocks.push(h("pre", { class: "result-text" }, c.text));
    else if (c.type === "image") blocks.push(h("img", { class: "result", alt: "image result", src: `data:${c.mimeType || c.mime_type};base64,${c.data}` }));
    else blocks.push(h("pre", {}, JSON.stringify(c, null, 2)));
  }
  if (result.structured !== undefined && result.structured !== null) {
    blocks.push(h("details", {}, h("summary", {}, "Structured result (JSON)"), h("pre", { class: "result-json" }, JSON.stringify(result.structured, null, 2))));
  }
  out.replaceChildren(h("div", { class: result.is_error ? "result-error" : "" },
    h("p", { class: "muted" }, result.is_error ? "Error" : "Result", ` · ${result.duration_ms} ms · call ${result.call_id}`), blocks));
}

// -- activity

function auditTable(rows) {
  return h("table", { class: "audit" },
    h("thead", {}, h("tr", {}, h("th", {}, "Time"), h("th", {}, "Tool"), h("th", {}, "Outcome"), h("th", { class: "wide" }, "Owner"), h("th", { class: "wide" }, "Door"), h("th", { class: "wide" }, "ms"))),
    h("tbody", {}, rows.map((r) => h("tr", { "data-call": r.call_id, tabindex: 0, title: `call ${r.call_id}`,
      onclick: () => showCall(r), onkeydown: (e) => { if (e.key === "Enter") showCall(r); } },
      h("td", {}, when(r.ts_ms)), h("td", {}, h("code", {}, r.tool)),
      h("td", {}, badge(r.outcome), r.error_kind ? h("span", { class: "muted" }, ` ${r.error_kind}`) : null),
      h("td", { class: "wide" }, r.owner), h("td", { class: "wide" }, r.door), h("td", { class: "wide" }, r.duration_ms)))));
}

function showCall(row) {
  const box = document.getElementById("call-detail");
  if (box) box.replaceChildren(h("h2", {}, `Call ${row.call_id}`), h("pre", {}, JSON.stringify(row, null, 2)));
}

async function activity(_args, gen) {
  const tool = h("input", { id: "f-tool", placeholder: "tool (glob)", "aria-label": "Tool" });
  const owner = h("input", { id: "f-owner", placeholder: "owner", "aria-label": "Owner" });
  const outcome = h("select", { id: "f-outcome", "aria-label": "Outcome" }, ["", "ok", "tool_error", "error"].map((o) => h("option", { value: o }, o || "any outcome")));
  const table = h("div", { id: "activity" });
  const eventsBox = h("pre", { id: "event-log" }, "");
  let newest = 0;
  let rows = [];
  const load = async (fresh) => {
    const q = new URLSearchParams({ limit: "100" });
    if (tool.value) q.set("tool", tool.value);
    if (owner.value) q.set("owner", owner.value);
    if (outcome.value) q.set("outcome", outcome.value);
    const data = await api(`/audit?${q}`);
    if (fresh) rows = [];
    const seen = new Set(rows.map((r) => r.id));
    rows = [...data.audit.filter((r) => !seen.has(r.id)), ...rows].sort((a, b) => b.id - a.id).slice(0, 200);
    const top = rows.length ? rows[0].id : 0;
    if (fresh || top !== newest) {
      newest = top;
      table.replaceChildren(rows.length ? auditTable(rows) : h("p", { class: "muted" }, "No calls yet."));
    }
  };
  for (const input of [tool, owner, outcome]) input.addEventListener("change", () => attempt(() => load(true)));
  render(gen, h("h1", {}, "Activity"),
    h("div", { class: "toolbar" }, tool, owner, outcome),
    h("p", { class: "muted" }, "Every call through every door (MCP, REST, CLI), newest first; updated live."),
    table, h("div", { id: "call-detail" }),
    h("h2", {}, "Events"), eventsBox);
  await load(true);
  every(gen, 700, () => attempt(() => load(false)));
  const lines = [];
  onEvents(gen, [""], (ev) => {
    lines.unshift(`${when(ev.time_ms)}  ${ev.type}  ${JSON.stringify(ev.data || {}).slice(0, 200)}`);
    lines.length = Math.min(lines.length, 50);
    eventsBox.textContent = lines.join("\n");
  });
}

// -- approvals and questions

async function approvals(_args, gen) {
  // Questions need `tools:call`, approvals `approvals:answer`: one missing leaves the other.
  const [data, asked] = await Promise.all([api("/approvals"),
    api("/questions").catch(() => ({ questions: [] }))]);
  const pending = data.approvals.filter((a) => !a.state || a.state === "pending");
  const decide = (a, how) => async () => {
    if (await attempt(() => api(`/approvals/${encodeURIComponent(a.id)}/${how}`, { method: "POST", body: {} })) !== undefined) toast(`${how === "deny" ? "denied" : "approved"} ${a.tool}`);
    route();
  };
  render(gen, h("h1", {}, "Approvals"),
    pending.length
      ? h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Tool"), h("th", {}, "Owner"), h("th", {}, "Arguments"), h("th", {}, "Asked"), h("th", {}, ""))),
        h("tbody", {}, pending.map((a) => h("tr", { "data-approval": a.id },
          h("td", {}, h("code", {}, a.tool)), h("td", {}, a.owner),
          h("td", {}, h("pre", {}, a.summary || JSON.stringify(a.arguments || a.args || {}, null, 1))),
          h("td", {}, when(a.created_ms || a.requested_ms || a.ts_ms)),
          h("td", {}, h("div", { class: "actions" }, h("button", { class: "primary", onclick: decide(a, "approve") }, "Approve"), h("button", { class: "danger", onclick: decide(a, "deny") }, "Deny")))))))
      : h("p", { class: "muted" }, "Nothing is waiting for approval."),
    h("h2", {}, "Questions"),
    asked.questions.length
      ? h("div", {}, asked.questions.map(questionForm))
      : h("p", { class: "muted" }, "No call is asking anything (ask_user, a plugin's ctx.ask)."));
  onEvents(gen, ["approval."], () => route());
  // Questions announce nothing: they are looked for again while the page is open.
  let seen = asked.questions.map((q) => q.id).join();
  every(gen, 1500, () => attempt(async () => {
    const now = (await api("/questions").catch(() => ({ questions: [] }))).questions.map((q) => q.id).join();
    if (now !== seen) route();
    seen = now;
  }));
}

/** One waiting question: a field per property of its answer's schema. */
function questionForm(q) {
  const props = (q.schema && q.schema.properties) || {};
  const inputs = Object.entries(props).map(([name, field]) => {
    const id = `answer-${q.id}-${name}`;
    const input = field.enum
      ? h("select", { id, name }, field.enum.map((v, i) => h("option", { value: String(i) }, String(v))))
      : field.type === "boolean"
        ? h("input", { id, name, type: "checkbox" })
        : h("input", { id, name, type: field.type === "number" || field.type === "integer" ? "number" : "text" });
    return h("label", { for: id }, h("span", {}, field.title || name), input);
  });
  const send = (action) => async (e) => {
    e.preventDefault();
    const content = {};
    for (const [name, field] of Object.entries(props)) {
      const el = document.getElementById(`answer-${q.id}-${name}`);
      if (field.enum) content[name] = field.enum[Number(el.value)];  // the choice as the schema has it
      else if (field.type === "boolean") content[name] = el.checked;
      else if (el.value === "") continue;  // left empty: not given (a required one is refused, saying so)
      else content[name] = field.type === "number" || field.type === "integer" ? Number(el.value) : el.value;
    }
    const body = action === "accept" ? { action, content } : { action };
    if (await attempt(() => api(`/questions/${encodeURIComponent(q.id)}/answer`, { method: "POST", body })) !== undefined) toast("answered");
    route();
  };
  return h("form", { class: "question", "data-question": q.id, onsubmit: send("accept") },
    h("p", {}, h("strong", {}, q.message), h("span", { class: "muted" }, ` · ${q.owner} · ${when(q.created_ms)}`)),
    inputs,
    h("div", { class: "actions" }, h("button", { class: "primary", type: "submit" }, "Answer"),
      h("button", { type: "button", onclick: send("decline") }, "Decline")));
}

// -- jobs

async function jobs(args, gen) {
  const box = h("div", {});
  const detail = h("pre", { id: "job-detail", hidden: true });
  const owner = h("input", { type: "search", id: "jobs-owner", placeholder: "Owner (all)", "aria-label": "Only this owner's jobs" });
  const load = async () => {
    const wanted = owner.value.trim();
    const list = (await api(`/jobs${wanted ? `?${new URLSearchParams({ owner: wanted })}` : ""}`)).jobs.slice().reverse();
    box.replaceChildren(list.length
      ? h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Job"), h("th", {}, "Tool"), h("th", {}, "Owner"), h("th", {}, "State"), h("th", {}, "Started"), h("th", { class: "wide" }, "Latest"), h("th", {}, ""))),
        h("tbody", {}, list.map((j) => h("tr", { "data-job": j.id },
          h("td", {}, h("a", { href: "#/jobs", onclick: (e) => { e.preventDefault(); show(j.id); } }, j.id)),
          h("td", {}, h("code", {}, j.tool)), h("td", {}, j.owner), h("td", {}, badge(j.state)),
          h("td", {}, when(j.created_ms)),
          h("td", { class: "wide muted" }, latest(j)),
          h("td", {}, j.state === "running" ? h("button", { type: "button", class: "danger", "data-action": "cancel",
            onclick: async (e) => { e.target.disabled = true; if (await attempt(() => api(`/jobs/${encodeURIComponent(j.id)}/cancel`, { method: "POST", body: {} })) !== undefined) toast(`cancelled ${j.id}`); load(); } }, "Cancel") : null)))))
      : h("p", { class: "muted" }, "No jobs. A REST execute with \"async\": true, or an MCP call that became a task, is one."));
  };
  const show = async (id) => {
    const job = await attempt(() => api(`/jobs/${encodeURIComponent(id)}`));
    if (!job) return;
    detail.hidden = false;
    detail.textContent = JSON.stringify(job, null, 1);
  };
  render(gen, h("h1", {}, "Jobs"),
    h("p", { class: "muted" }, "Calls that outlive their request: REST jobs and MCP tasks, the same objects; kept [jobs] retention_secs after they end."),
    h("div", { class: "toolbar" }, h("label", { for: "jobs-owner" }, "Owner"), owner),
    box, detail);
  owner.addEventListener("change", () => attempt(load));
  await load();
  // `#/jobs/ID` (a schedule's last job, say) opens that job's record.
  if (args[0]) await show(args[0]);
  // Progress changes one row's last column: the list is read again when a job starts or ends.
  onEvents(gen, ["job.started", "job.finished", "job.failed", "job.cancelled"], () => attempt(load));
}

function latest(job) {
  if (job.error) return job.error.message || "";
  if (job.result) return (job.result.content || []).map((c) => c.text || "").join(" ").slice(0, 200);
  const last = (job.progress || []).slice(-1)[0];
  return last && last.message ? last.message.slice(0, 200) : "";
}

// -- processes

// -- agents: todo lists and schedules (docs/agents.md)

const TODO_MARKS = { done: "✓", in_progress: "▸", pending: "○" };
const whenFull = (ms) => (ms ? new Date(ms).toLocaleString() : "");

function todoTable(lists) {
  if (!lists.length) return h("p", { class: "muted" }, "No todo lists. An agent keeps one with todo_write.");
  return h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Owner"), h("th", {}, "List"), h("th", {}, "Items"), h("th", {}, "Updated"))),
    h("tbody", {}, lists.map((l) => h("tr", { "data-todo": `${l.owner}/${l.list}` },
      h("td", {}, l.owner), h("td", {}, l.list),
      h("td", {}, l.items.length
        ? h("ul", { class: "todo" }, l.items.map((i) => h("li", { "data-status": i.status },
          h("span", { class: "mark", role: "img", "aria-label": i.status, title: i.status.replace("_", " ") }, TODO_MARKS[i.status] || "?"),
          " ", i.text, i.notes ? h("div", { class: "muted" }, i.notes) : null)))
        : h("span", { class: "muted" }, "empty")),
      h("td", {}, whenFull(l.updated_ms))))));
}

function scheduleTable(list) {
  if (!list.length) return h("p", { class: "muted" }, "No schedules. An agent makes one with schedule_create.");
  return h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Owner"), h("th", {}, "When"), h("th", { class: "wide" }, "Calls"),
      h("th", {}, "Next run"), h("th", { class: "wide" }, "Runs"), h("th", {}, "Last outcome"))),
    h("tbody", {}, list.map((s) => h("tr", { "data-schedule": s.id },
      h("td", {}, s.name, h("div", { class: "muted" }, s.id)), h("td", {}, s.owner),
      h("td", {}, s.spec.cron ? h("code", {}, s.spec.cron) : ["at ", h("code", {}, s.spec.at || "")],
        s.spec.tz ? h("span", { class: "muted" }, ` ${s.spec.tz}`) : null),
      h("td", { class: "wide" }, h("code", {}, s.spec.workflow ? `workflow ${s.spec.workflow}` : s.spec.tool)),
      h("td", {}, s.next_ms ? whenFull(s.next_ms) : h("span", { class: "muted" }, "never again")),
      h("td", { class: "wide" }, String(s.runs)),
      h("td", {}, s.last_outcome || "", s.last_job
        ? h("div", {}, h("a", { href: `#/jobs/${encodeURIComponent(s.last_job)}` }, s.last_job)) : null)))));
}

async function agents(_args, gen) {
  const todosBox = h("div", { id: "todos" });
  const schedulesBox = h("div", { id: "schedules" });
  let seen = "";
  const load = async () => {
    const [todos, schedules] = await Promise.all([api("/todos"), api("/schedules")]);
    const now = JSON.stringify([todos, schedules]);
    if (now === seen) return;
    seen = now;
    todosBox.replaceChildren(todoTable(todos.todos));
    schedulesBox.replaceChildren(scheduleTable(schedules.schedules));
  };
  render(gen, h("h1", {}, "Agents"),
    h("p", { class: "muted" }, "What the agent tools keep: todo lists (todo_write) and schedules (schedule_create); each schedule's runs are jobs of its owner."),
    h("h2", {}, "Todo lists"), todosBox,
    h("h2", {}, "Schedules"), schedulesBox);
  await load();
  // A schedule's run is a job; todo lists announce nothing, so they are read again while shown.
  onEvents(gen, ["job.started", "job.finished", "job.failed", "job.cancelled"], () => attempt(load));
  every(gen, 3000, () => attempt(load));
}

// -- memory

async function memory(_args, gen) {
  const q = h("input", { type: "search", id: "memory-q", placeholder: "Search memories", "aria-label": "Search memories" });
  const box = h("div", {});
  // A search's snippet marks the matched terms as **bold**: shown as <mark>, never as HTML.
  const marked = (snippet) => snippet.split("**").map((part, i) => (i % 2 ? h("mark", {}, part) : part));
  const show = (list) => box.replaceChildren(list.length
    ? h("table", {}, h("tbody", {}, list.map((m) => h("tr", { "data-memory": m.id },
      h("td", {},
        m.title ? h("div", { class: "memory-title" }, m.title) : null,
        h("div", { class: "memory-text" }, m.snippet !== undefined ? marked(m.snippet) : (m.text || "")),
        h("div", { class: "muted" }, [m.namespace, (m.tags || []).join(", ")].filter(Boolean).join(" · "))),
      h("td", { class: "wide muted" }, m.score !== undefined ? `score ${m.score.toFixed(2)}` : (m.owner || "")),
      h("td", { class: "wide muted" }, m.id)))))
    : h("p", { class: "muted" }, q.value.trim() ? "No memory matches." : "No memories."));
  q.addEventListener("change", () => attempt(async () => {
    const data = q.value.trim() ? await api(`/memories/search?${new URLSearchParams({ q: q.value.trim() })}`) : await api("/memories?limit=50");
    show(data.memories || data.results || []);
  }));
  render(gen, h("h1", {}, "Memory"), h("div", { class: "toolbar" }, q), box);
  const data = await api("/memories?limit=50");
  show(data.memories || []);
}

boot();
