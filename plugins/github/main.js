// toolshed.github: reads issues, pull requests and files through the GitHub REST API
// (github.com, or GitHub Enterprise Server through `api_url`). Read-only: every tool is a
// GET.
//
// Answers are cut down to the fields a model uses (numbers, titles, states, people,
// labels, dates, links) and long texts are truncated with a note saying so. The token, when
// set, travels only in the Authorization header; it is cut out of every message anyway.
//
// QuickJS has no atob and no TextDecoder: base64 and UTF-8 decoding for file contents are
// at the end of this file.

const PLUGIN_ID = "toolshed.github";
const DEFAULT_API = "https://api.github.com";
const API_VERSION = "2022-11-28";
const USER_AGENT = "toolshed-github-plugin";
const DEFAULT_TIMEOUT_MS = 15000;
const MAX_TIMEOUT_MS = 60000;
const MAX_BODY_CHARS = 6000;
const MAX_COMMENT_CHARS = 2000;
const MAX_FILE_CHARS = 100000;
const SET_TOKEN = 'printf %s "$GITHUB_TOKEN" | toolshed plugins config toolshed.github token -';
// GitHub user and organization names (Enterprise managed users add `_shortcode`).
const OWNER = /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/;
const REPO = /^[A-Za-z0-9._-]{1,100}$/;
const READ_ONLY = { readOnly: true, destructive: false, idempotent: true, openWorld: true };

export function activate(context) {
  context.registerActions((t) => {
    const owner = { type: "string", required: true, description: t("input.owner") };
    const repo = { type: "string", required: true, description: t("input.repo") };
    const state = {
      type: "string",
      enum: ["open", "closed", "all"],
      default: "open",
      description: t("input.state"),
    };
    const perPage = { type: "integer", default: 30, description: t("input.per_page") };
    const page = { type: "integer", default: 1, description: t("input.page") };
    const number = { type: "integer", required: true, description: t("input.number") };
    return [
      {
        name: "list_issues",
        label: t("list_issues.label"),
        description: t("list_issues.description"),
        properties: {
          owner,
          repo,
          state,
          labels: { type: "array", items: { type: "string" }, description: t("input.labels") },
          include_pulls: { type: "boolean", default: false, description: t("input.include_pulls") },
          per_page: perPage,
          page,
        },
        annotations: READ_ONLY,
        run: listIssues,
      },
      {
        name: "get_issue",
        label: t("get_issue.label"),
        description: t("get_issue.description"),
        properties: {
          owner,
          repo,
          number,
          include_comments: {
            type: "integer",
            default: 0,
            description: t("input.include_comments"),
          },
        },
        annotations: READ_ONLY,
        run: getIssue,
      },
      {
        name: "list_pulls",
        label: t("list_pulls.label"),
        description: t("list_pulls.description"),
        properties: { owner, repo, state, per_page: perPage, page },
        annotations: READ_ONLY,
        run: listPulls,
      },
      {
        name: "get_pull",
        label: t("get_pull.label"),
        description: t("get_pull.description"),
        properties: { owner, repo, number },
        annotations: READ_ONLY,
        run: getPull,
      },
      {
        name: "get_file",
        label: t("get_file.label"),
        description: t("get_file.description"),
        properties: {
          owner,
          repo,
          path: { type: "string", required: true, description: t("input.path") },
          ref: { type: "string", description: t("input.ref") },
        },
        annotations: READ_ONLY,
        run: getFile,
      },
    ];
  });
}

// ---- Tools ----

async function listIssues(inputs, ctx) {
  const gh = client(ctx);
  const { owner, repo, base } = repository(inputs);
  const { perPage, page } = paging(inputs);
  const state = stateOf(inputs.state);
  const query = { state, per_page: perPage, page };
  const labels = inputs.labels ?? [];
  if (!Array.isArray(labels)) throw new Error("`labels` must be a list of label names");
  for (const label of labels) {
    if (typeof label !== "string" || label.trim() === "" || label.includes(",")) {
      throw new Error(`label \`${String(label).slice(0, 60)}\` must be a non-empty name without commas`);
    }
  }
  if (labels.length) query.labels = labels.join(",");
  const response = await get(gh, `${base}/issues`, query, `repository ${owner}/${repo}`);
  const items = arrayOf(response, "issue list");
  const includePulls = inputs.include_pulls === true;
  const issues = [];
  let pullsLeftOut = 0;
  for (const item of items) {
    if (item.pull_request && !includePulls) {
      pullsLeftOut++;
      continue;
    }
    issues.push(issueSummary(item));
  }
  const out = {
    repository: `${owner}/${repo}`,
    state,
    page,
    per_page: perPage,
    count: issues.length,
    next_page: nextPage(response),
    issues,
  };
  if (!includePulls) {
    out.pulls_left_out = pullsLeftOut;
    if (pullsLeftOut) {
      out.note = `GitHub lists pull requests among issues; the ${pullsLeftOut} on this page were left out (include_pulls: true keeps them, marked pull_request: true; github_list_pulls lists pull requests)`;
    }
  }
  return out;
}

async function getIssue(inputs, ctx) {
  const gh = client(ctx);
  const { owner, repo, base } = repository(inputs);
  const n = issueNumber(inputs.number);
  const wanted = inputs.include_comments ?? 0;
  if (!Number.isInteger(wanted) || wanted < 0 || wanted > 100) {
    throw new Error(`include_comments is ${wanted}; give a whole number from 0 to 100`);
  }
  const what = `issue #${n} in ${owner}/${repo}`;
  const issue = objectOf(await get(gh, `${base}/issues/${n}`, {}, what), what);
  const out = {
    ...issueSummary(issue),
    state_reason: issue.state_reason ?? null,
    assignees: logins(issue.assignees),
    closed_at: issue.closed_at ?? null,
  };
  putText(out, "body", issue.body, MAX_BODY_CHARS);
  if (wanted > 0 && !(issue.comments > 0)) out.first_comments = [];
  if (wanted > 0 && issue.comments > 0) {
    const comments = arrayOf(
      await get(gh, `${base}/issues/${n}/comments`, { per_page: wanted, page: 1 }, `the comments of ${what}`),
      "comment list",
    );
    out.first_comments = comments.map((c) => {
      const comment = { user: c.user?.login ?? null, created_at: c.created_at, html_url: c.html_url };
      putText(comment, "body", c.body, MAX_COMMENT_CHARS);
      return comment;
    });
    if (issue.comments > comments.length) {
      out.comments_note = `showing the first ${comments.length} of ${issue.comments} comments; the rest are at html_url`;
    }
  }
  return out;
}

async function listPulls(inputs, ctx) {
  const gh = client(ctx);
  const { owner, repo, base } = repository(inputs);
  const { perPage, page } = paging(inputs);
  const state = stateOf(inputs.state);
  const response = await get(
    gh,
    `${base}/pulls`,
    { state, per_page: perPage, page },
    `repository ${owner}/${repo}`,
  );
  const pulls = arrayOf(response, "pull request list").map((p) => ({
    number: p.number,
    title: p.title,
    state: p.state,
    draft: p.draft === true,
    merged: Boolean(p.merged_at),
    user: p.user?.login ?? null,
    head: p.head?.ref ?? null,
    base: p.base?.ref ?? null,
    labels: labelNames(p.labels),
    created_at: p.created_at,
    updated_at: p.updated_at,
    html_url: p.html_url,
  }));
  return {
    repository: `${owner}/${repo}`,
    state,
    page,
    per_page: perPage,
    count: pulls.length,
    next_page: nextPage(response),
    pulls,
  };
}

async function getPull(inputs, ctx) {
  const gh = client(ctx);
  const { owner, repo, base } = repository(inputs);
  const n = issueNumber(inputs.number);
  const what = `pull request #${n} in ${owner}/${repo}`;
  const p = objectOf(await get(gh, `${base}/pulls/${n}`, {}, what), what);
  const out = {
    number: p.number,
    title: p.title,
    state: p.state,
    merged: p.merged === true,
    merged_at: p.merged_at ?? null,
    draft: p.draft === true,
    user: p.user?.login ?? null,
    head: { ref: p.head?.ref ?? null, sha: p.head?.sha ?? null, repo: p.head?.repo?.full_name ?? null },
    base: { ref: p.base?.ref ?? null, sha: p.base?.sha ?? null },
    labels: labelNames(p.labels),
    changed_files: p.changed_files,
    additions: p.additions,
    deletions: p.deletions,
    commits: p.commits,
    comments: p.comments,
    review_comments: p.review_comments,
    mergeable: p.mergeable ?? null,
    created_at: p.created_at,
    updated_at: p.updated_at,
    closed_at: p.closed_at ?? null,
    html_url: p.html_url,
  };
  putText(out, "body", p.body, MAX_BODY_CHARS);
  return out;
}

async function getFile(inputs, ctx) {
  const gh = client(ctx);
  const { owner, repo, base } = repository(inputs);
  const path = filePath(inputs.path);
  const query = {};
  if (inputs.ref !== undefined && inputs.ref !== null) {
    if (typeof inputs.ref !== "string" || inputs.ref.trim() === "") {
      throw new Error("`ref` must be a branch, tag or commit SHA; leave it out for the default branch");
    }
    query.ref = inputs.ref;
  }
  const ref = query.ref ?? null;
  const encoded = path.split("/").filter((s) => s !== "").map(encodeURIComponent).join("/");
  const what = `\`${path || "/"}\` in ${owner}/${repo}${ref ? ` at ${ref}` : ""}`;
  const response = await get(gh, `${base}/contents${encoded ? `/${encoded}` : ""}`, query, what);
  if (response.truncated) {
    // Only a file answer grows past the host's 1 MiB cap; its metadata comes before the
    // content, so size and download_url can still be read from the start of the text.
    const size = /"size"\s*:\s*(\d+)/.exec(response.body);
    const download = /"download_url"\s*:\s*"([^"]*)"/.exec(response.body);
    return tooLarge(path, ref, size ? Number(size[1]) : null, download ? download[1] : null);
  }
  const data = parseJson(response.body);
  if (Array.isArray(data)) {
    return {
      type: "dir",
      path: path || "/",
      ref,
      count: data.length,
      entries: data.map((e) => ({ name: e.name, path: e.path, type: e.type, size: e.size })),
    };
  }
  if (data === null || typeof data !== "object") throw notJson("file answer");
  switch (data.type) {
    case "file":
      break;
    case "symlink":
      return { type: "symlink", path: data.path, ref, target: data.target ?? null, html_url: data.html_url };
    case "submodule":
      return {
        type: "submodule",
        path: data.path,
        ref,
        sha: data.sha,
        submodule_git_url: data.submodule_git_url ?? null,
      };
    default:
      return { type: data.type, path: data.path, ref, html_url: data.html_url ?? null };
  }
  const hasContent = data.encoding === "base64" && typeof data.content === "string";
  if (!hasContent || (data.content === "" && data.size > 0)) {
    return tooLarge(data.path, ref, data.size, data.download_url ?? null);
  }
  const bytes = base64Decode(data.content);
  const decoded = utf8Decode(bytes);
  const out = {
    type: "file",
    path: data.path,
    ref,
    size: data.size,
    sha: data.sha,
    html_url: data.html_url,
    download_url: data.download_url ?? null,
  };
  if (!decoded.valid || bytes.includes(0)) {
    out.binary = true;
    out.note = "a binary file (not UTF-8 text); its content is not shown, fetch it from download_url";
    return out;
  }
  out.encoding = "utf-8";
  putText(out, "text", decoded.text, MAX_FILE_CHARS);
  return out;
}

function tooLarge(path, ref, size, downloadUrl) {
  const sized = size === null ? "The file" : `The file is ${size} bytes:`;
  return {
    type: "file",
    path,
    ref,
    size,
    too_large: true,
    note: `${sized} too large for the GitHub contents API to return as JSON (about 1 MB at most); its content is not shown, download it from download_url`,
    download_url: downloadUrl,
  };
}

// ---- Requests ----

function client(ctx) {
  const config = ctx.config || {};
  const token =
    typeof config.token === "string" && config.token.trim() !== "" ? config.token.trim() : null;
  const timeout =
    typeof config.timeout_ms === "number" && config.timeout_ms > 0
      ? Math.min(config.timeout_ms, MAX_TIMEOUT_MS)
      : DEFAULT_TIMEOUT_MS;
  return { ctx, token, api: apiBase(config.api_url), timeoutMs: timeout };
}

function apiBase(value) {
  const raw = typeof value === "string" && value.trim() !== "" ? value.trim() : DEFAULT_API;
  const m = /^(https?):\/\/([^/?#@\s]+)(\/[^?#\s]*)?$/i.exec(raw);
  if (!m) {
    throw new Error(
      `api_url \`${raw.slice(0, 200)}\` is not an http(s) URL without a query; use ${DEFAULT_API}, or https://HOST/api/v3 for GitHub Enterprise Server (\`toolshed plugins config ${PLUGIN_ID} api_url https://HOST/api/v3\`)`,
    );
  }
  const authority = m[2].toLowerCase();
  const host = authority.startsWith("[")
    ? authority.slice(0, authority.indexOf("]") + 1)
    : authority.split(":")[0];
  const path = (m[3] || "").replace(/\/+$/, "");
  return { base: `${m[1].toLowerCase()}://${authority}${path}`, host };
}

// GETs `path` (under the API base) and returns the response when GitHub answered 2xx;
// throws an error written for the model otherwise. Follows one redirect inside the API
// (GitHub answers 301 for a renamed or transferred repository).
async function get(gh, path, query, what) {
  if (!gh.ctx.http) {
    throw new Error(
      `host \`${gh.api.host}\` is not granted to plugin \`${PLUGIN_ID}\`; to allow it, run \`toolshed plugins grant ${PLUGIN_ID} http:${gh.api.host}\``,
    );
  }
  const headers = {
    Accept: "application/vnd.github+json",
    "X-GitHub-Api-Version": API_VERSION,
    "User-Agent": USER_AGENT,
  };
  if (gh.token) headers.Authorization = `Bearer ${gh.token}`;
  let url = gh.api.base + path + queryString(query);
  for (let hop = 0; ; hop++) {
    let response;
    try {
      response = await gh.ctx.http.request({ method: "GET", url, headers, timeoutMs: gh.timeoutMs });
    } catch (e) {
      const why = scrub(gh, e && typeof e.message === "string" ? e.message : String(e));
      if (why.includes("toolshed plugins grant")) throw new Error(why);
      throw new Error(`could not reach GitHub at ${gh.api.base}: ${why}`);
    }
    const location = response.headers?.location;
    const redirect = [301, 302, 307, 308].includes(response.status);
    if (redirect && hop === 0 && typeof location === "string" && location.startsWith(`${gh.api.base}/`)) {
      url = location;
      continue;
    }
    if (response.status >= 200 && response.status < 300) return response;
    throw new Error(scrub(gh, failure(gh, response, what)));
  }
}

function failure(gh, response, what) {
  const status = response.status;
  const h = response.headers || {};
  const body = parseJson(response.body);
  const said = body && typeof body.message === "string" ? body.message : snippet(response.body);
  if ((status === 403 || status === 429) && h["x-ratelimit-remaining"] === "0") {
    const reset = Number(h["x-ratelimit-reset"]);
    const when = Number.isFinite(reset) && reset > 0 ? resetTime(reset) : "within the hour";
    const limit = h["x-ratelimit-limit"] ? `${h["x-ratelimit-limit"]} requests an hour` : "its hourly limit";
    const advice = gh.token
      ? "wait until then; the configured token's limit is used up"
      : `wait until then, or set a token to get 5,000 requests an hour instead of 60: \`${SET_TOKEN}\``;
    return `GitHub rate limit reached (${limit}, none left): it resets at ${when}; ${advice}`;
  }
  if ((status === 403 || status === 429) && (h["retry-after"] || /secondary rate limit/i.test(said))) {
    const after = h["retry-after"] ? `${h["retry-after"]} seconds` : "a minute";
    return `GitHub's secondary rate limit stopped the request (HTTP ${status}: ${said}); wait ${after} and send fewer requests in a row`;
  }
  if (status === 404) {
    const why = gh.token
      ? "the configured token cannot see it (check its access to that repository)"
      : `no token is set; set one that can see it with \`${SET_TOKEN}\``;
    return `GitHub: ${what} was not found (404), or it is private and ${why}`;
  }
  if (status === 401) {
    return `GitHub rejected the token (401 ${said}): it is wrong, expired or revoked; set a valid one with \`${SET_TOKEN}\``;
  }
  if (status === 403) {
    const why = gh.token
      ? "the configured token lacks the permission (a fine-grained token needs read access to the repository's issues, pull requests or contents)"
      : `set a token that may read it with \`${SET_TOKEN}\``;
    return `GitHub refused access to ${what} (403 ${said}); ${why}`;
  }
  if (status === 422) return `GitHub did not accept the request for ${what} (422 ${said}); check the inputs`;
  if (status >= 500) return `GitHub failed on ${what} (HTTP ${status} ${said}); try again later`;
  return `GitHub answered HTTP ${status} for ${what}: ${said}`;
}

function resetTime(reset) {
  const at = new Date(reset * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
  const minutes = Math.ceil((reset * 1000 - Date.now()) / 60000);
  if (minutes <= 0) return `${at} (now)`;
  return minutes <= 120 ? `${at} (in ${minutes} minute${minutes === 1 ? "" : "s"})` : at;
}

function scrub(gh, text) {
  const out = String(text);
  return gh.token && gh.token.length >= 4 ? out.split(gh.token).join("…") : out;
}

function queryString(query) {
  const pairs = Object.keys(query).map(
    (k) => `${encodeURIComponent(k)}=${encodeURIComponent(String(query[k]))}`,
  );
  return pairs.length ? `?${pairs.join("&")}` : "";
}

// The `page` of the `rel="next"` link in GitHub's Link header, or null on the last page.
function nextPage(response) {
  const link = response.headers?.link;
  if (typeof link !== "string") return null;
  for (const part of link.split(",")) {
    const m = /<([^>]*)>\s*;\s*rel="next"/.exec(part);
    if (!m) continue;
    const page = /[?&]page=(\d+)/.exec(m[1]);
    return page ? Number(page[1]) : null;
  }
  return null;
}

function arrayOf(response, what) {
  const data = parseJson(response.body);
  if (!Array.isArray(data)) throw notJson(what);
  return data;
}

function objectOf(response, what) {
  const data = parseJson(response.body);
  if (data === null || typeof data !== "object" || Array.isArray(data)) throw notJson(what);
  return data;
}

function notJson(what) {
  return new Error(
    `GitHub's answer (${what}) was not the JSON expected; check that api_url points at the REST API (https://api.github.com, or https://HOST/api/v3 for GitHub Enterprise Server)`,
  );
}

function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch (_) {
    return null;
  }
}

function snippet(text) {
  const line = String(text ?? "").replace(/\s+/g, " ").trim();
  if (line === "") return "(an empty answer)";
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}

// ---- Inputs ----

function repository(inputs) {
  const { owner, repo } = inputs;
  if (typeof owner !== "string" || !OWNER.test(owner)) {
    throw new Error(
      `owner \`${String(owner).slice(0, 100)}\` is not a GitHub user or organization name: letters, digits, - and _ (e.g. \`octocat\`; give the repository separately in \`repo\`)`,
    );
  }
  if (typeof repo !== "string" || !REPO.test(repo) || repo === "." || repo === "..") {
    throw new Error(
      `repo \`${String(repo).slice(0, 100)}\` is not a repository name: letters, digits, ., - and _ (e.g. \`hello-world\`)`,
    );
  }
  return {
    owner,
    repo,
    base: `/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}`,
  };
}

function paging(inputs) {
  const perPage = inputs.per_page ?? 30;
  const page = inputs.page ?? 1;
  if (!Number.isInteger(perPage) || perPage < 1 || perPage > 100) {
    throw new Error(`per_page is ${perPage}; give a whole number from 1 to 100`);
  }
  if (!Number.isInteger(page) || page < 1) {
    throw new Error(`page is ${page}; pages count from 1`);
  }
  return { perPage, page };
}

function stateOf(state) {
  const s = state ?? "open";
  if (!["open", "closed", "all"].includes(s)) {
    throw new Error(`state \`${String(s).slice(0, 40)}\` is not one of open, closed, all`);
  }
  return s;
}

function issueNumber(n) {
  if (!Number.isInteger(n) || n < 1) {
    throw new Error(`number is ${n}; give the issue or pull request number, e.g. 42`);
  }
  return n;
}

// A repository path, without leading or trailing slashes; "" is the repository's root.
function filePath(path) {
  if (typeof path !== "string") throw new Error("`path` must be a string; use \"\" for the repository root");
  const parts = path.split("/").filter((s) => s !== "");
  if (parts.some((s) => s === "." || s === "..")) {
    throw new Error(`path \`${path.slice(0, 200)}\` contains \`.\` or \`..\`; give the file's path from the repository root`);
  }
  return parts.join("/");
}

// ---- Shapes ----

function issueSummary(i) {
  const out = {
    number: i.number,
    title: i.title,
    state: i.state,
    user: i.user?.login ?? null,
    labels: labelNames(i.labels),
    comments: i.comments,
    created_at: i.created_at,
    updated_at: i.updated_at,
    html_url: i.html_url,
  };
  if (i.pull_request) out.pull_request = true;
  return out;
}

function labelNames(labels) {
  if (!Array.isArray(labels)) return [];
  return labels.map((l) => (typeof l === "string" ? l : l?.name)).filter((n) => typeof n === "string");
}

function logins(users) {
  if (!Array.isArray(users)) return [];
  return users.map((u) => u?.login).filter((l) => typeof l === "string");
}

// Sets out[key] to `text` cut at `max` characters; a cut adds `<key>_truncated` saying so.
function putText(out, key, text, max) {
  const value = typeof text === "string" ? text : "";
  if (value.length <= max) {
    out[key] = value;
    return;
  }
  out[key] = value.slice(0, max);
  out[`${key}_truncated`] = `cut at ${max} of ${value.length} characters; the rest is at html_url`;
}

// ---- base64 and UTF-8 ----

const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const BASE64_INDEX = (() => {
  const index = new Int16Array(128).fill(-1);
  for (let i = 0; i < BASE64.length; i++) index[BASE64.charCodeAt(i)] = i;
  return index;
})();

// Decodes base64 as GitHub sends it (line breaks every 60 characters, `=` padding).
function base64Decode(text) {
  const clean = text.replace(/\s+/g, "").replace(/=+$/, "");
  const out = new Uint8Array(Math.floor((clean.length * 3) / 4));
  let buffer = 0;
  let bits = 0;
  let j = 0;
  for (let i = 0; i < clean.length; i++) {
    const code = clean.charCodeAt(i);
    const v = code < 128 ? BASE64_INDEX[code] : -1;
    if (v < 0) throw new Error("GitHub sent file content that is not valid base64");
    buffer = ((buffer << 6) | v) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[j++] = (buffer >> bits) & 0xff;
    }
  }
  return out.subarray(0, j);
}

// Decodes UTF-8; `valid` is false when a byte sequence is malformed (each bad byte becomes
// U+FFFD), which marks the file as binary.
function utf8Decode(bytes) {
  let valid = true;
  let text = "";
  const units = [];
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i];
    let cp;
    let need;
    if (b < 0x80) {
      cp = b;
      need = 0;
    } else if (b >= 0xc2 && b <= 0xdf) {
      cp = b & 0x1f;
      need = 1;
    } else if (b >= 0xe0 && b <= 0xef) {
      cp = b & 0x0f;
      need = 2;
    } else if (b >= 0xf0 && b <= 0xf4) {
      cp = b & 0x07;
      need = 3;
    } else {
      cp = -1;
      need = 0;
    }
    let ok = cp >= 0 && i + need < bytes.length;
    for (let k = 1; ok && k <= need; k++) {
      const c = bytes[i + k];
      if ((c & 0xc0) !== 0x80) ok = false;
      else cp = (cp << 6) | (c & 0x3f);
    }
    if (ok && need === 2) ok = cp >= 0x800 && (cp < 0xd800 || cp > 0xdfff);
    if (ok && need === 3) ok = cp >= 0x10000 && cp <= 0x10ffff;
    if (!ok) {
      valid = false;
      units.push(0xfffd);
      i++;
    } else {
      if (cp >= 0x10000) {
        cp -= 0x10000;
        units.push(0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff));
      } else {
        units.push(cp);
      }
      i += need + 1;
    }
    if (units.length >= 8192) {
      text += String.fromCharCode.apply(null, units);
      units.length = 0;
    }
  }
  return { text: text + String.fromCharCode.apply(null, units), valid };
}
