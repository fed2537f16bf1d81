// toolshed.homeassistant: reads and controls Home Assistant entities through its REST API
// (https://developers.home-assistant.io/docs/api/rest/): GET /api/states,
// GET /api/states/<entity_id>, GET /api/services, POST /api/services/<domain>/<service>,
// and POST /api/template for the entities of an area.
//
// The tools are listed in plugin.toml; each is the exported function of its name. The
// access token is a secret: it goes in the Authorization header and nowhere else.

const PLUGIN_ID = "toolshed.homeassistant";
const DEFAULT_TIMEOUT_MS = 10000;
const MAX_TIMEOUT_MS = 60000;
const MAX_LISTED = 200;
const ENTITY_ID = /^[a-z0-9_]+\.[a-z0-9_]+$/;
const SLUG = /^[a-z0-9_]+$/;
const SET_TOKEN = `printf %s "$TOKEN" | toolshed plugins config ${PLUGIN_ID} token -`;

exports.iot_query = async function (inputs, ctx) {
  const ha = connect(ctx);
  const chosen = ["entity_id", "domain", "area"].filter((k) => inputs[k] !== undefined);
  if (chosen.length > 1) {
    throw new Error(`give one of entity_id, domain or area, not ${chosen.join(" and ")}`);
  }
  if (inputs.entity_id !== undefined) {
    const id = readEntityId(inputs.entity_id);
    const state = await ha.get(`/api/states/${id}`, { notFound: () => unknownEntity(ha, id) });
    return listed([state]);
  }
  let states = await ha.get("/api/states");
  if (!Array.isArray(states)) throw new Error("Home Assistant's /api/states did not answer a list");
  if (inputs.domain !== undefined) {
    const domain = String(inputs.domain).trim().toLowerCase();
    if (!SLUG.test(domain)) throw new Error(`\`${domain.slice(0, 64)}\` is not a domain (light, switch, sensor…)`);
    const found = states.filter((s) => s.entity_id.startsWith(`${domain}.`));
    if (!found.length) {
      const domains = [...new Set(states.map((s) => s.entity_id.split(".")[0]))].sort();
      throw new Error(`no entity of domain \`${domain}\`; the domains here are ${domains.join(", ") || "none"}`);
    }
    states = found;
  } else if (inputs.area !== undefined) {
    const area = String(inputs.area).trim();
    if (!area) throw new Error("`area` is empty; name an area as Home Assistant does (Kitchen)");
    // Areas are not in /api/states: the template API knows them.
    const ids = await ha.template(`{{ area_entities(${JSON.stringify(area)}) | tojson }}`);
    let list;
    try {
      list = JSON.parse(ids);
    } catch (_) {
      list = [];
    }
    if (!Array.isArray(list) || !list.length) {
      const areas = await ha.template("{{ areas() | map('area_name') | list | tojson }}");
      throw new Error(`no entity in area \`${area}\`${closeTo(area, parseList(areas))}`);
    }
    states = states.filter((s) => list.includes(s.entity_id));
  }
  return listed(states);
};

exports.iot_control = async function (inputs, ctx) {
  const ha = connect(ctx);
  const id = readEntityId(inputs.entity_id);
  const entityDomain = id.split(".")[0];
  const service = String(inputs.service ?? "").trim().toLowerCase();
  const [domain, name] = service.includes(".") ? service.split(".", 2) : [entityDomain, service];
  if (!SLUG.test(domain) || !SLUG.test(name || "")) {
    throw new Error(`\`${service.slice(0, 64)}\` is not a service: write domain.service (light.turn_on) or the service alone (turn_on)`);
  }
  const data = inputs.data ?? {};
  if (typeof data !== "object" || Array.isArray(data) || data === null) {
    throw new Error("`data` must be an object of the service's fields, e.g. {\"brightness_pct\": 40}");
  }
  if ("entity_id" in data) throw new Error("put the entity in `entity_id`, not in `data`");
  // Both must exist, so a typo is answered with the close names instead of a silent no-op.
  await ha.get(`/api/states/${id}`, { notFound: () => unknownEntity(ha, id) });
  const services = await ha.get("/api/services");
  const ofDomain = Array.isArray(services) ? services.find((s) => s.domain === domain) : undefined;
  if (!ofDomain) {
    const domains = Array.isArray(services) ? services.map((s) => s.domain) : [];
    throw new Error(`Home Assistant has no service domain \`${domain}\`${closeTo(domain, domains)}`);
  }
  const names = Object.keys(ofDomain.services || {});
  if (!names.includes(name)) {
    throw new Error(`\`${domain}\` has no service \`${name}\`${closeTo(name, names, (n) => `${domain}.${n}`)}`);
  }
  const changed = await ha.post(`/api/services/${domain}/${name}`, { entity_id: id, ...data });
  ctx.logger.info(`called ${domain}.${name} on ${id}`);
  return {
    entity_id: id,
    service: `${domain}.${name}`,
    changed: (Array.isArray(changed) ? changed : []).map((s) => ({ entity_id: s.entity_id, state: s.state })),
  };
};

// ---- Talking to Home Assistant ----

function connect(ctx) {
  const config = ctx.config || {};
  const base = typeof config.base_url === "string" ? config.base_url.trim().replace(/\/+$/, "") : "";
  const m = /^(https?):\/\/([^/?#@\s]+)/i.exec(base);
  if (!m) {
    throw new Error(
      `base_url is not set (or is not an http:// or https:// URL); set it with \`toolshed plugins config ${PLUGIN_ID} base_url http://homeassistant.local:8123\``,
    );
  }
  const host = m[2].toLowerCase().startsWith("[") ? m[2].slice(0, m[2].indexOf("]") + 1) : m[2].split(":")[0];
  if (typeof config.token !== "string" || config.token === "") {
    throw new Error(`the access token is not set; set it with \`${SET_TOKEN}\``);
  }
  if (!ctx.http) {
    throw new Error(
      `host \`${host}\` is not granted to plugin \`${PLUGIN_ID}\`; to allow it, run \`toolshed plugins grant ${PLUGIN_ID} http:${host}\``,
    );
  }
  const timeoutMs =
    typeof config.timeout_ms === "number" && config.timeout_ms > 0
      ? Math.min(config.timeout_ms, MAX_TIMEOUT_MS)
      : DEFAULT_TIMEOUT_MS;
  const token = config.token;
  const call = async (method, path, body, options = {}) => {
    let response;
    try {
      response = await ctx.http.request({
        method,
        url: `${base}${path}`,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        ...(body === undefined ? {} : { body }),
        timeoutMs,
      });
    } catch (e) {
      const why = String(e && e.message ? e.message : e).split(token).join("…");
      if (why.includes("toolshed plugins grant")) throw new Error(why);
      throw new Error(`could not reach Home Assistant at ${base}: ${why}`);
    }
    const status = response.status;
    if (status === 404 && options.notFound) return options.notFound();
    if (status === 401 || status === 403) {
      throw new Error(`Home Assistant refused the access token (HTTP ${status}); make a new long-lived token and set it with \`${SET_TOKEN}\``);
    }
    if (status < 200 || status >= 300) {
      const said = String(response.body || "").slice(0, 300).split(token).join("…");
      throw new Error(`Home Assistant answered HTTP ${status} for ${method} ${path}: ${said || "(an empty answer)"}`);
    }
    if (options.text) return String(response.body || "");
    try {
      return JSON.parse(response.body);
    } catch (_) {
      throw new Error(`Home Assistant answered ${method} ${path} with something that is not JSON; check base_url`);
    }
  };
  return {
    get: (path, options) => call("GET", path, undefined, options),
    post: (path, body) => call("POST", path, body),
    template: (template) => call("POST", "/api/template", { template }, { text: true }),
    states: () => call("GET", "/api/states"),
  };
}

async function unknownEntity(ha, id) {
  const states = await ha.states();
  const ids = Array.isArray(states) ? states.map((s) => s.entity_id) : [];
  throw new Error(`Home Assistant has no entity \`${id}\`${closeTo(id, ids)}`);
}

function readEntityId(value) {
  const id = String(value ?? "").trim().toLowerCase();
  if (!ENTITY_ID.test(id)) {
    throw new Error(`\`${id.slice(0, 64)}\` is not an entity id: write domain.object_id, e.g. light.kitchen`);
  }
  return id;
}

function listed(states) {
  const entities = states.slice(0, MAX_LISTED).map((s) => ({
    entity_id: s.entity_id,
    name: (s.attributes && s.attributes.friendly_name) || s.entity_id,
    state: s.state,
    attributes: s.attributes || {},
    last_changed: s.last_changed,
  }));
  return { entities, count: states.length, truncated: states.length > MAX_LISTED };
}

function parseList(text) {
  try {
    const list = JSON.parse(text);
    return Array.isArray(list) ? list.map(String) : [];
  } catch (_) {
    return [];
  }
}

// ", the closest are a, b" for the names nearest to `wanted` (edit distance), or "".
function closeTo(wanted, names, show = (n) => n) {
  const scored = names
    .map((n) => [distance(wanted.toLowerCase(), String(n).toLowerCase()), n])
    .filter(([d, n]) => d <= Math.max(3, Math.floor(String(n).length / 2)))
    .sort((a, b) => a[0] - b[0])
    .slice(0, 3)
    .map(([, n]) => `\`${show(n)}\``);
  return scored.length ? `; the closest are ${scored.join(", ")}` : "";
}

function distance(a, b) {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length];
}
