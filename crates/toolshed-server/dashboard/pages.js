// The dashboard's pages that draw and watch (loaded before app.js, whose helpers — h, api,
// execute, attempt, badge, when, render, every, onEvents, route — they call when shown):
// the overview's charts, what runs for every owner, and the mounted MCP servers.
"use strict";

// ---- charts: inline SVG from /stats, coloured by the page's own variables (dark mode
// included), as wide as their box (phones too). Every chart says in words what it shows.

const SVG_NS = "http://www.w3.org/2000/svg";

function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) el.setAttribute(k, String(v));
  for (const c of children.flat()) if (c !== null && c !== undefined) el.append(typeof c === "string" ? document.createTextNode(c) : c);
  return el;
}

const clock = (ms) => new Date(ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
const millis = (ms) => (ms >= 1000 ? `${(ms / 1000).toFixed(ms >= 10_000 ? 0 : 1)} s` : `${ms} ms`);
const mib = (bytes) => `${(bytes / 1048576).toFixed(1)} MiB`;

function figure(id, title, summary, ...content) {
  return h("figure", { class: "chart card", id, "aria-label": `${title}: ${summary}` },
    h("figcaption", {}, title, h("span", { class: "muted" }, ` · ${summary}`)), ...content);
}

// Stacked columns, one per bucket: ok, tool_error, error.
function callsChart(audit) {
  const W = 360, H = 110, top = 14, bottom = 16;
  const buckets = audit.calls;
  const total = (b) => b.ok + b.tool_error + b.error;
  const max = Math.max(1, ...buckets.map(total));
  const all = buckets.reduce((n, b) => n + total(b), 0);
  const failed = buckets.reduce((n, b) => n + b.tool_error + b.error, 0);
  const step = W / Math.max(1, buckets.length);
  const y = (v) => (H - bottom) - (v / max) * (H - bottom - top);
  const bars = buckets.flatMap((b, i) => {
    let base = 0;
    return [["ok", b.ok], ["tool_error", b.tool_error], ["error", b.error]].filter(([, v]) => v > 0).map(([kind, v]) => {
      const rect = svg("rect", { class: `o-${kind}`, x: (i * step + 0.5).toFixed(1), width: Math.max(1, step - 1).toFixed(1),
        y: y(base + v).toFixed(1), height: (y(base) - y(base + v)).toFixed(1) },
        svg("title", {}, `${clock(b.start_ms)}: ${v} ${kind.replace("_", " ")}`));
      base += v;
      return rect;
    });
  });
  const per = audit.bucket_ms >= 60_000 ? `${Math.round(audit.bucket_ms / 60_000)} min` : `${audit.bucket_ms / 1000} s`;
  return figure("chart-calls", "Calls", `${all} in the hour, ${failed} failed; a column per ${per}`,
    svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-hidden": "true" },
      svg("line", { class: "axis", x1: 0, x2: W, y1: H - bottom, y2: H - bottom }),
      svg("text", { class: "tick", x: W, y: top - 4, "text-anchor": "end" }, `${max} / column`),
      ...bars,
      buckets.length ? svg("text", { class: "tick", x: 0, y: H - 4 }, clock(buckets[0].start_ms)) : null,
      buckets.length ? svg("text", { class: "tick", x: W, y: H - 4, "text-anchor": "end" }, "now") : null),
    legend([["o-ok", "ok"], ["o-tool_error", "tool error"], ["o-error", "error"]]));
}

function legend(items) {
  return h("div", { class: "legend" }, items.map(([cls, label]) => h("span", {}, h("i", { class: `key ${cls}` }), label)));
}

// Lines over the hour: one per series of [t_ms, value] points.
function lineChart(series, { format = String, height = 90, from, to }) {
  const W = 360, H = height, top = 14, bottom = 16;
  const max = Math.max(1, ...series.flatMap((s) => s.points.map((p) => p[1])));
  const x = (t) => ((t - from) / Math.max(1, to - from)) * W;
  const y = (v) => (H - bottom) - (v / max) * (H - bottom - top);
  return svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-hidden": "true" },
    svg("line", { class: "axis", x1: 0, x2: W, y1: H - bottom, y2: H - bottom }),
    svg("text", { class: "tick", x: W, y: top - 4, "text-anchor": "end" }, format(max)),
    svg("text", { class: "tick", x: 0, y: H - 4 }, clock(from)),
    svg("text", { class: "tick", x: W, y: H - 4, "text-anchor": "end" }, "now"),
    ...series.map((s) => s.points.length === 1
      ? svg("circle", { class: s.cls, cx: x(s.points[0][0]).toFixed(1), cy: y(s.points[0][1]).toFixed(1), r: 3 },
        svg("title", {}, `${s.label}: ${format(s.points[0][1])}`))
      : svg("polyline", { class: s.cls, fill: "none", points: s.points.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(" ") },
        svg("title", {}, `${s.label}: up to ${format(Math.max(...s.points.map((p) => p[1])))}`))));
}

// The page's policy allows no style attributes: widths are set through the CSSOM.
function widthOf(el, percent) {
  el.style.width = `${percent.toFixed(1)}%`;
  return el;
}

// Horizontal bars with their labels and values.
function barList(id, title, summary, rows, empty) {
  const max = Math.max(1, ...rows.map((r) => r.value));
  return figure(id, title, summary, rows.length
    ? h("ol", { class: "bars" }, rows.map((r) => h("li", { "data-name": r.name },
      h("span", { class: "name" }, r.name),
      h("span", { class: "bar" }, widthOf(h("span", { class: `fill ${r.cls || ""}` }), Math.max(1, (100 * r.value) / max))),
      h("span", { class: "value" }, r.text))))
    : h("p", { class: "muted" }, empty));
}

function drawCharts(stats) {
  const audit = stats.audit;
  const from = audit.since_ms, to = Date.now();
  const latency = audit.latency.map((s) => figure(`chart-latency-${s.tool}`, `Latency of ${s.tool}`,
    `p50 ${millis(Math.max(0, ...s.points.map((p) => p[1].p50)))} at most, p99 up to ${millis(Math.max(0, ...s.points.map((p) => p[1].p99)))}`,
    lineChart([
      { label: "p50", cls: "l-p50", points: s.points.map(([t, p]) => [t, p.p50]) },
      { label: "p95", cls: "l-p95", points: s.points.map(([t, p]) => [t, p.p95]) },
      { label: "p99", cls: "l-p99", points: s.points.map(([t, p]) => [t, p.p99]) },
    ], { format: millis, from, to }),
    legend([["l-p50", "p50"], ["l-p95", "p95"], ["l-p99", "p99"]])));
  // The samples, and the values now as the last point.
  const samples = [...stats.samples.filter((x) => x.t_ms < stats.now.t_ms), stats.now];
  const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;
  const gauge = (key) => samples.map((s) => [s.t_ms, s[key]]);
  return [
    callsChart(audit),
    ...latency,
    barList("chart-slowest", "Slowest tools", "95th percentile over the hour (tools called 3 times or more)",
      audit.slowest.map((t) => ({ name: t.tool, value: t.latency.p95, text: `p95 ${millis(t.latency.p95)} · p50 ${millis(t.latency.p50)} · ${t.calls} calls` })),
      "No tool was called three times this hour."),
    barList("chart-failing", "Most failing tools", "calls that did not end ok",
      audit.failing.map((t) => ({ name: t.tool, value: t.failures, cls: "o-error", text: `${t.failures} of ${t.calls} (${Math.round((100 * t.failures) / t.calls)}%)` })),
      "No call failed this hour."),
    barList("chart-owners", "Who is busy", "calls per owner (sub-owners with their owner)",
      audit.owners.map(([owner, n]) => ({ name: owner, value: n, text: `${n} ${n === 1 ? "call" : "calls"}` })),
      "No calls this hour."),
    figure("chart-approvals", "Approvals waiting", `${stats.now.approvals} now`,
      lineChart([{ label: "waiting", cls: "l-warn", points: gauge("approvals") }], { from, to, height: 70 })),
    figure("chart-processes", "Processes and sessions", `${plural(stats.now.processes, "process", "processes")}, ${plural(stats.now.sessions, "command session", "command sessions")} now`,
      lineChart([
        { label: "processes", cls: "l-p50", points: gauge("processes") },
        { label: "sessions", cls: "l-p95", points: gauge("sessions") },
      ], { from, to, height: 70 }),
      legend([["l-p50", "processes"], ["l-p95", "command sessions"]])),
    figure("chart-memory", "Memory", `${mib(stats.now.rss_bytes)} resident now`,
      lineChart([{ label: "resident", cls: "l-p50", points: gauge("rss_bytes") }], { format: mib, from, to, height: 70 })),
    audit.truncated ? h("p", { class: "muted" }, "More calls than the charts read this hour: the oldest columns count fewer.") : null,
  ];
}

// What the plugins keep running, every owner's for the admin (an agent token sees its
// own): read from /running, which is not a tool call, so watching it writes no audit rows.
const RUNNING_KINDS = [
  ["process", "Background processes", "No background processes. An agent starts one with process_exec.",
    (r) => ["process_stop", { id: r.id }]],
  ["command_session", "Command sessions", "No command sessions (exec_command calls that outlived their call).",
    (r) => ["command_run_terminate", { session_id: Number(r.id) }]],
  ["browser_session", "Browser sessions", "No browser sessions.",
    (r) => ["browser_close", { session: r.id }]],
];

async function processes(_args, gen) {
  const owner = h("input", { type: "search", id: "running-owner", placeholder: "Owner (all)", "aria-label": "Only this owner's" });
  const boxes = Object.fromEntries(RUNNING_KINDS.map(([kind]) => [kind, h("div", { "data-kind": kind })]));
  const output = h("pre", { id: "process-output", hidden: true });
  let watching = null;
  let seen = "";
  const table = (kind, empty, stopper, list) => list.length
    ? h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Id"), h("th", {}, "Owner"), h("th", {}, "State"), h("th", { class: "wide" }, "What"), h("th", {}, "Started"), h("th", {}, ""))),
      h("tbody", {}, list.map((r) => h("tr", { "data-running": r.id, "data-owner": r.owner },
        h("td", {}, r.id, r.fields && r.fields.name ? h("div", { class: "muted" }, r.fields.name) : null),
        h("td", {}, r.owner),
        h("td", {}, badge(r.running ? "running" : "exited")),
        h("td", { class: "wide" }, h("code", {}, r.summary)),
        h("td", {}, when(r.started_ms)),
        h("td", {}, h("div", { class: "actions" },
          kind === "browser_session" ? null : h("button", { type: "button", onclick: () => { watching = r; tail(); } }, "Output"),
          r.running ? h("button", { type: "button", class: "danger", "data-action": "stop",
            onclick: async (e) => {
              e.target.disabled = true;
              const [tool, args] = stopper(r);
              if (await attempt(() => execute(tool, args, r.owner))) toast(`stopped ${r.id} of ${r.owner}`);
              load();
            } }, "Stop") : null))))))
    : h("p", { class: "muted" }, empty);
  const load = async () => {
    const wanted = owner.value.trim();
    const data = await api(`/running${wanted ? `?${new URLSearchParams({ owner: wanted })}` : ""}`);
    const now = JSON.stringify(data);
    if (now === seen) return;
    seen = now;
    for (const [kind, , empty, stopper] of RUNNING_KINDS) {
      boxes[kind].replaceChildren(table(kind, empty, stopper, data.running.filter((r) => r.kind === kind)));
    }
  };
  const tail = async () => {
    if (!watching) return;
    const got = await attempt(() => api(`/running/${encodeURIComponent(watching.plugin)}/${encodeURIComponent(watching.id)}/output`));
    if (got) {
      output.hidden = false;
      output.textContent = got.output || "(no output yet)";
    }
  };
  owner.addEventListener("change", () => { seen = ""; attempt(load); });
  render(gen, h("h1", {}, "Processes"),
    h("div", { class: "toolbar" }, h("label", { for: "running-owner" }, "Owner"), owner),
    ...RUNNING_KINDS.flatMap(([kind, title]) => [h("h2", {}, title), boxes[kind]]),
    output);
  await load();
  every(gen, 2000, () => attempt(async () => { await load(); await tail(); }));
  onEvents(gen, ["process."], () => attempt(load));
}

// -- servers: the MCP servers toolshed mounts (docs/gateway.md)

async function servers(args, gen) {
  const list = (await api("/mcp-servers")).servers;
  const selected = args[0];
  let detail = null;
  if (selected) {
    const d = await api(`/mcp-servers/${encodeURIComponent(selected)}`);
    const withheld = d.pins.withheld || [];
    detail = h("section", { class: "card", id: "server-detail" },
      h("h2", {}, d.name, " ", badge(d.state)),
      d.reason ? h("p", { class: "reason" }, d.reason) : null,
      h("p", {}, h("code", {}, d.target)),
      h("h3", {}, "Tools"),
      d.tools.length ? h("ul", {}, d.tools.map((t) => h("li", {}, h("code", {}, t)))) : h("p", { class: "muted" }, "No tools listed yet."),
      h("h3", {}, "Pins"),
      h("p", { class: "muted" }, `${Object.keys(d.pins.tools).length} tool definitions accepted`),
      withheld.length ? [h("p", { class: "reason" }, `Withheld (their definitions changed): ${withheld.join(", ")}`),
        h("button", { type: "button", "data-action": "accept", onclick: async (e) => {
          e.target.disabled = true;
          if (await attempt(() => api(`/mcp-servers/${encodeURIComponent(selected)}/accept`, { method: "POST", body: {} })) !== undefined) toast(`accepted ${selected}'s tools`);
          route();
        } }, "Accept the changed tools")] : null,
      h("h3", {}, "Standard error (last lines)"),
      h("pre", { id: "server-stderr" }, d.stderr_tail || "(nothing written)"));
  }
  const rows = list.map((srv) => h("tr", { "data-server": srv.id },
    h("td", {}, h("a", { href: `#/servers/${encodeURIComponent(srv.id)}` }, srv.name), h("div", { class: "muted" }, srv.id)),
    h("td", {}, badge(srv.state), srv.reason ? h("div", { class: "reason" }, srv.reason) : null),
    h("td", { class: "wide" }, h("code", {}, srv.target)),
    h("td", { class: "wide" }, String(srv.tools.length)),
    h("td", {}, h("div", { class: "actions" },
      h("button", { type: "button", "data-action": "restart", onclick: async (e) => {
        e.target.disabled = true;
        if (await attempt(() => api(`/plugins/${encodeURIComponent(srv.id)}/reload`, { method: "POST" })) !== undefined) toast(`restarted ${srv.id}`);
        route();
      } }, "Restart")))));
  render(gen, h("h1", {}, "Servers"),
    h("p", { class: "muted" }, "The MCP servers toolshed mounts (toolshed mcp add): their state, tools, pinned definitions and what they wrote to stderr."),
    detail,
    list.length
      ? h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Server"), h("th", {}, "State"), h("th", { class: "wide" }, "Runs"), h("th", { class: "wide" }, "Tools"), h("th", {}, ""))), h("tbody", {}, rows))
      : h("p", { class: "muted" }, "No mounted servers. `toolshed mcp add NAME -- COMMAND` mounts one."));
  onEvents(gen, ["plugin.state_changed"], () => route());
}

