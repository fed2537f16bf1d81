// toolshed.webhook: posts a chat message through an incoming-webhook URL (Slack, DingTalk,
// Feishu/Lark, or any JSON endpoint) and reads the service's answer the way that service
// writes it.
//
// The URL holds the webhook's token and `signing_secret` is a key: neither may appear in
// anything this plugin returns, throws or logs. Every text that could carry them goes
// through `scrubber`, and the URL is only ever shown as scheme://host/….
//
// QuickJS has no crypto, no TextEncoder and no btoa, so UTF-8, SHA-256 (FIPS 180-4),
// HMAC-SHA256 (RFC 2104) and base64 (RFC 4648) are implemented at the end of this file.

const PLUGIN_ID = "toolshed.webhook";
const FORMATS = ["slack", "dingtalk", "feishu", "generic"];
const SERVICE = { slack: "Slack", dingtalk: "DingTalk", feishu: "Feishu", generic: "The webhook" };
const DEFAULT_TIMEOUT_MS = 10000;
const MAX_TIMEOUT_MS = 60000;
const SET_URL = 'printf %s "$URL" | toolshed plugins config toolshed.webhook url -';
const SET_SECRET =
  'printf %s "$SECRET" | toolshed plugins config toolshed.webhook signing_secret -';
// A mention is a Slack member id, a DingTalk mobile number or a Feishu open_id: plain
// words, so nothing a caller passes can inject markup into the message.
const MENTION = /^[A-Za-z0-9_.+-]{1,64}$/;
// Message kinds beyond plain text: a link preview, a card with buttons, a list of links.
const KINDS = ["text", "link", "action_card", "feed_card"];
const MAX_BUTTONS = 8;
const MAX_LINKS = 10;

export function activate(context) {
  context.registerActions((t) => [
    {
      name: "send",
      label: t("send.label"),
      description: t("send.description"),
      properties: {
        text: { type: "string", description: t("send.text") },
        title: { type: "string", description: t("send.title") },
        mentions: { type: "array", items: { type: "string" }, description: t("send.mentions") },
        at_all: { type: "boolean", default: false, description: t("send.at_all") },
        kind: { type: "string", enum: KINDS, default: "text", description: t("send.kind") },
        url: { type: "string", description: t("send.url") },
        picture_url: { type: "string", description: t("send.picture_url") },
        buttons: { type: "array", items: { type: "object" }, description: t("send.buttons") },
        vertical: { type: "boolean", default: false, description: t("send.vertical") },
        links: { type: "array", items: { type: "object" }, description: t("send.links") },
      },
      annotations: { readOnly: false, destructive: false, idempotent: false, openWorld: true },
      run: send,
    },
  ]);
}

async function send(inputs, ctx) {
  const config = ctx.config || {};
  const format = config.format === undefined || config.format === null ? "slack" : config.format;
  if (!FORMATS.includes(format)) {
    throw new Error(
      `format \`${String(format).slice(0, 40)}\` is not one of ${FORMATS.join(", ")}; set it with \`toolshed plugins config ${PLUGIN_ID} format slack\``,
    );
  }
  if (typeof config.url !== "string" || config.url.trim() === "") {
    throw new Error(
      `the webhook URL is not set; set it with \`${SET_URL}\`, then grant its host with \`toolshed plugins grant ${PLUGIN_ID} http:HOST\``,
    );
  }
  const secret =
    typeof config.signing_secret === "string" && config.signing_secret !== ""
      ? config.signing_secret
      : null;
  const target = parseWebhookUrl(config.url);
  const scrub = scrubber(target, secret);
  const message = readMessage(inputs);
  const timeoutMs = readTimeout(config.timeout_ms);
  if (!ctx.http) {
    throw new Error(
      `host \`${target.host}\` is not granted to plugin \`${PLUGIN_ID}\`; to allow it, run \`toolshed plugins grant ${PLUGIN_ID} http:${target.host}\``,
    );
  }
  const signed = secret !== null && (format === "dingtalk" || format === "feishu");
  const request = buildRequest(format, target.url, signed ? secret : null, message);
  let response;
  try {
    response = await ctx.http.request({
      method: "POST",
      url: request.url,
      body: request.body,
      timeoutMs,
    });
  } catch (e) {
    const why = scrub(messageOf(e));
    // The host's refusal already names the host and the command that grants it.
    if (why.includes("toolshed plugins grant")) throw new Error(why);
    throw new Error(`could not reach ${target.shown}: ${why}`);
  }
  judge(format, response, signed, scrub);
  ctx.logger.info(`sent a ${format} message to ${target.shown}`);
  return {
    sent: true,
    service: SERVICE[format],
    format,
    to: target.shown,
    status: response.status,
    signed,
  };
}

// ---- Inputs and config ----

function readMessage(inputs) {
  const kind = inputs.kind ?? "text";
  if (!KINDS.includes(kind)) throw new Error(`kind \`${String(kind).slice(0, 20)}\` is not one of ${KINDS.join(", ")}`);
  const text = inputs.text;
  if (kind !== "feed_card" && (typeof text !== "string" || text.trim() === "")) {
    throw new Error("`text` is empty; give the message to send");
  }
  const title = inputs.title;
  if (title !== undefined && title !== null && typeof title !== "string") {
    throw new Error("`title` must be a string");
  }
  if ((kind === "link" || kind === "action_card") && !(typeof title === "string" && title.trim())) {
    throw new Error(`a ${kind} message needs a \`title\``);
  }
  const mentions = inputs.mentions ?? [];
  if (!Array.isArray(mentions)) throw new Error("`mentions` must be a list of ids");
  for (const m of mentions) {
    if (typeof m !== "string" || !MENTION.test(m)) {
      throw new Error(
        `mention \`${String(m).slice(0, 64)}\` is not an id: give Slack member ids (U0123ABCD), DingTalk mobile numbers or Feishu open_ids (ou_…), made of letters, digits and _ . + -`,
      );
    }
  }
  if (kind !== "text" && (mentions.length || inputs.at_all === true)) {
    throw new Error(`mentions and at_all are for text messages; a ${kind} message cannot mention anyone`);
  }
  const url = kind === "link" ? readLink(inputs.url, "url") : null;
  const pictureUrl =
    inputs.picture_url === undefined || inputs.picture_url === null
      ? null
      : readLink(inputs.picture_url, "picture_url");
  const buttons = readList(inputs.buttons, "buttons", kind === "action_card", MAX_BUTTONS).map((b, i) => ({
    title: readTitle(b.title, `buttons[${i}].title`),
    url: readLink(b.url, `buttons[${i}].url`),
  }));
  const links = readList(inputs.links, "links", kind === "feed_card", MAX_LINKS).map((l, i) => ({
    title: readTitle(l.title, `links[${i}].title`),
    url: readLink(l.url, `links[${i}].url`),
    pictureUrl:
      l.picture_url === undefined || l.picture_url === null
        ? null
        : readLink(l.picture_url, `links[${i}].picture_url`),
  }));
  return {
    kind,
    text: typeof text === "string" ? text : "",
    title: title || null,
    mentions,
    atAll: inputs.at_all === true,
    url,
    pictureUrl,
    buttons,
    vertical: inputs.vertical === true,
    links,
  };
}

// An http(s) URL given for a link, a button or a picture.
function readLink(value, field) {
  if (typeof value !== "string" || !/^https?:\/\/[^\s/?#]+/i.test(value.trim())) {
    throw new Error(`\`${field}\` must be an http:// or https:// URL`);
  }
  return value.trim();
}

function readTitle(value, field) {
  if (typeof value !== "string" || value.trim() === "") throw new Error(`\`${field}\` must be a non-empty string`);
  return value;
}

// A list of objects: required (non-empty) for one kind, at most `max`.
function readList(value, field, needed, max) {
  if (value === undefined || value === null) {
    if (needed) throw new Error(`this kind of message needs \`${field}\`: a list of { title, url }`);
    return [];
  }
  if (!Array.isArray(value) || value.some((v) => typeof v !== "object" || v === null)) {
    throw new Error(`\`${field}\` must be a list of { title, url }`);
  }
  if (needed && value.length === 0) throw new Error(`\`${field}\` is empty; give at least one { title, url }`);
  if (value.length > max) throw new Error(`\`${field}\` has ${value.length} entries; at most ${max}`);
  return value;
}

function readTimeout(value) {
  if (typeof value !== "number" || !(value > 0)) return DEFAULT_TIMEOUT_MS;
  return Math.min(value, MAX_TIMEOUT_MS);
}

// The parts of the configured URL this plugin needs. Throws without quoting it.
function parseWebhookUrl(raw) {
  const text = raw.trim();
  const m = /^(https?):\/\/([^/?#]*)([^#]*)/i.exec(text);
  if (!m) {
    throw new Error(
      `the configured webhook URL does not start with http:// or https://; set the service's webhook URL with \`${SET_URL}\``,
    );
  }
  const scheme = m[1].toLowerCase();
  const authority = m[2].toLowerCase();
  if (authority === "" || authority.includes("@")) {
    throw new Error(
      `the configured webhook URL has no usable host (or has a user:password@ part); set the service's webhook URL with \`${SET_URL}\``,
    );
  }
  const host = authority.startsWith("[")
    ? authority.slice(0, authority.indexOf("]") + 1)
    : authority.split(":")[0];
  return {
    url: `${scheme}://${authority}${m[3]}`,
    rest: m[3],
    host,
    shown: `${scheme}://${authority}/…`,
  };
}

// A function that takes every URL and every secret out of a text: URLs become
// scheme://host/…, then the webhook URL, its path, its long path segments and query
// values, and the signing secret are cut out wherever they still appear.
function scrubber(target, secret) {
  const words = [target.url, target.rest];
  const [path, query = ""] = target.rest.split("?");
  for (const segment of path.split("/")) if (segment.length >= 16) words.push(segment);
  for (const pair of query.split("&")) {
    const value = pair.slice(pair.indexOf("=") + 1);
    if (value.length >= 8) words.push(value);
  }
  if (secret !== null) words.push(secret, encodeURIComponent(secret));
  for (const w of words.slice()) {
    try {
      words.push(decodeURIComponent(w));
    } catch (_) {
      // Not percent-encoded text: the word itself is already listed.
    }
  }
  const list = words.filter((w) => w.length >= 4).sort((a, b) => b.length - a.length);
  return (text) => {
    let out = String(text).replace(
      /(https?):\/\/([^/?#\s`'"<>]+)[^\s`'"<>]*/gi,
      (_, scheme, authority) => `${scheme.toLowerCase()}://${authority.toLowerCase()}/…`,
    );
    for (const w of list) out = out.split(w).join("…");
    return out;
  };
}

function messageOf(e) {
  if (e && typeof e.message === "string") return e.message;
  return String(e);
}

// ---- Wire formats ----

// The URL to post to and the JSON body, in `format`'s wire format; `secret` signs it
// (DingTalk in the URL, Feishu in the body).
function buildRequest(format, url, secret, message) {
  if (message.kind !== "text") return signRequest(format, url, secret, richBody(format, message));
  const { text, title, mentions, atAll } = message;
  switch (format) {
    case "slack": {
      const tags = [...(atAll ? ["<!channel>"] : []), ...mentions.map((m) => `<@${m}>`)];
      const lead = tags.length ? `${tags.join(" ")} ` : "";
      return { url, body: { text: `${title ? `*${title}*\n` : ""}${lead}${text}` } };
    }
    case "dingtalk": {
      // DingTalk highlights a mentioned number only when the text contains `@number`.
      const tail = mentions.map((m) => `@${m}`).join(" ");
      const content = tail ? `${text}\n${tail}` : text;
      const at = mentions.length || atAll ? { atMobiles: mentions, isAtAll: atAll } : undefined;
      const body = title
        ? { msgtype: "markdown", markdown: { title, text: `### ${title}\n\n${content}` }, at }
        : { msgtype: "text", text: { content }, at };
      if (secret === null) return { url, body };
      const timestamp = Date.now();
      const sign = encodeURIComponent(dingtalkSign(secret, timestamp));
      const glue = url.includes("?") ? "&" : "?";
      return { url: `${url}${glue}timestamp=${timestamp}&sign=${sign}`, body };
    }
    case "feishu": {
      let body;
      if (title) {
        const paragraphs = text.split("\n").map((line) => [{ tag: "text", text: line }]);
        const ats = [...(atAll ? ["all"] : []), ...mentions].map((id) => ({ tag: "at", user_id: id }));
        paragraphs[0].unshift(...ats);
        body = { msg_type: "post", content: { post: { zh_cn: { title, content: paragraphs } } } };
      } else {
        const ats = [
          ...(atAll ? ['<at user_id="all">所有人</at>'] : []),
          ...mentions.map((id) => `<at user_id="${id}"></at>`),
        ];
        const lead = ats.length ? `${ats.join(" ")} ` : "";
        body = { msg_type: "text", content: { text: `${lead}${text}` } };
      }
      if (secret === null) return { url, body };
      const timestamp = String(Math.floor(Date.now() / 1000));
      return { url, body: { timestamp, sign: feishuSign(secret, timestamp), ...body } };
    }
    default: {
      const body = { title: title ?? undefined, text };
      if (mentions.length) body.mentions = mentions;
      if (atAll) body.at_all = true;
      return { url, body };
    }
  }
}

// Signs a body the way `format` wants (DingTalk in the URL, Feishu in the body).
function signRequest(format, url, secret, body) {
  if (secret === null) return { url, body };
  if (format === "dingtalk") {
    const timestamp = Date.now();
    const sign = encodeURIComponent(dingtalkSign(secret, timestamp));
    const glue = url.includes("?") ? "&" : "?";
    return { url: `${url}${glue}timestamp=${timestamp}&sign=${sign}`, body };
  }
  if (format === "feishu") {
    const timestamp = String(Math.floor(Date.now() / 1000));
    return { url, body: { timestamp, sign: feishuSign(secret, timestamp), ...body } };
  }
  return { url, body };
}

// The body of a link, action_card or feed_card message in `format`'s wire format.
function richBody(format, { kind, text, title, url, pictureUrl, buttons, vertical, links }) {
  if (format === "dingtalk") {
    switch (kind) {
      case "link":
        return { msgtype: "link", link: { title, text, messageUrl: url, picUrl: pictureUrl ?? "" } };
      case "action_card": {
        const card = { title, text, btnOrientation: vertical ? "0" : "1" };
        if (buttons.length === 1) {
          card.singleTitle = buttons[0].title;
          card.singleURL = buttons[0].url;
        } else {
          card.btns = buttons.map((b) => ({ title: b.title, actionURL: b.url }));
        }
        return { msgtype: "actionCard", actionCard: card };
      }
      default:
        return {
          msgtype: "feedCard",
          feedCard: { links: links.map((l) => ({ title: l.title, messageURL: l.url, picURL: l.pictureUrl ?? "" })) },
        };
    }
  }
  if (format === "feishu") {
    if (kind === "action_card") {
      // An interactive card: a header, the text as lark_md, the buttons.
      const elements = [{ tag: "div", text: { tag: "lark_md", content: text } }];
      if (buttons.length) {
        elements.push({
          tag: "action",
          layout: vertical ? "flow" : "bisected",
          actions: buttons.map((b, i) => ({
            tag: "button",
            text: { tag: "plain_text", content: b.title },
            url: b.url,
            type: i === 0 ? "primary" : "default",
          })),
        });
      }
      return {
        msg_type: "interactive",
        card: { header: { title: { tag: "plain_text", content: title } }, elements },
      };
    }
    // A post: the text, then each link on a line of its own.
    const lines = [];
    if (text) for (const line of text.split("\n")) lines.push([{ tag: "text", text: line }]);
    const entries = kind === "link" ? [{ title, url }] : links;
    for (const l of entries) lines.push([{ tag: "a", text: l.title, href: l.url }]);
    return { msg_type: "post", content: { post: { zh_cn: { title: title ?? "", content: lines } } } };
  }
  // Slack and generic webhooks: the same content as text with links.
  const entries = kind === "link" ? [{ title, url }] : kind === "feed_card" ? links : buttons;
  if (format === "slack") {
    const parts = [];
    if (title && kind !== "link") parts.push(`*${title}*`);
    if (text) parts.push(text);
    for (const e of entries) parts.push(`<${e.url}|${e.title}>`);
    return { text: parts.join("\n") };
  }
  const body = { kind, title: title ?? undefined, text: text || undefined };
  if (kind === "link") body.url = url;
  if (kind === "action_card") body.buttons = buttons;
  if (kind === "feed_card") body.links = links.map((l) => ({ title: l.title, url: l.url }));
  return body;
}

// Returns when the service took the message; throws what it answered otherwise.
function judge(format, response, signed, scrub) {
  const status = response.status;
  const raw = typeof response.body === "string" ? response.body : "";
  const said = (text) => scrub(snippet(text)) || "(an empty answer)";
  switch (format) {
    case "slack": {
      const code = raw.trim();
      if (status === 200 && code === "ok") return;
      throw new Error(
        `Slack refused the message: HTTP ${status} ${said(code)}; ${slackHint(status, code)}`,
      );
    }
    case "dingtalk": {
      const json = parseJson(raw);
      if (json && typeof json.errcode === "number") {
        if (json.errcode === 0) return;
        const msg = String(json.errmsg ?? "");
        throw new Error(
          `DingTalk refused the message: errcode ${json.errcode}, ${said(msg)}; ${dingtalkHint(json.errcode, msg, signed)}`,
        );
      }
      throw new Error(
        `DingTalk answered HTTP ${status} without an errcode: ${said(raw)}; check that the URL is a DingTalk robot webhook (https://oapi.dingtalk.com/robot/send?access_token=…) and that format is \`dingtalk\``,
      );
    }
    case "feishu": {
      const json = parseJson(raw);
      const code = json ? (json.code ?? json.StatusCode) : undefined;
      if (typeof code === "number") {
        if (code === 0) return;
        const msg = String(json.msg ?? json.StatusMessage ?? "");
        throw new Error(
          `Feishu refused the message: code ${code}, ${said(msg)}; ${feishuHint(code, msg, signed)}`,
        );
      }
      throw new Error(
        `Feishu answered HTTP ${status} without a code: ${said(raw)}; check that the URL is a Feishu/Lark bot webhook (…/open-apis/bot/v2/hook/…) and that format is \`feishu\``,
      );
    }
    default: {
      if (status >= 200 && status < 300) return;
      throw new Error(`The webhook answered HTTP ${status}: ${said(raw)}; ${genericHint(status)}`);
    }
  }
}

function slackHint(status, code) {
  switch (code) {
    case "invalid_payload":
    case "no_text":
    case "missing_text_or_fallback_or_attachments":
      return "Slack could not read the message; check that text is not empty and that format is `slack` for this URL";
    case "invalid_token":
    case "no_service":
    case "no_service_id":
    case "no_team":
    case "team_disabled":
    case "no_active_hooks":
      return `the webhook URL is wrong, revoked or disabled; create a new incoming webhook in Slack and set it with \`${SET_URL}\``;
    case "channel_not_found":
    case "channel_is_archived":
    case "action_prohibited":
    case "posting_to_general_channel_denied":
    case "user_not_found":
      return "Slack will not post to the webhook's channel (removed, archived or restricted); point the webhook at another channel";
    case "too_many_requests":
      return "Slack allows about one message a second per webhook; wait and send again";
    default:
      return genericHint(status);
  }
}

function dingtalkHint(code, msg, signed) {
  const m = msg.toLowerCase();
  if (code === 310000) {
    if (m.includes("sign")) {
      return signed
        ? `check signing_secret (the robot's 加签 secret, starting with SEC) and that this machine's clock is right; set it with \`${SET_SECRET}\``
        : `the robot requires signed messages (加签); set its secret with \`${SET_SECRET}\``;
    }
    if (m.includes("keyword")) {
      return "the robot only takes messages containing one of its custom keywords (自定义关键词); put one in text or title";
    }
    if (m.includes("whitelist") || /\bip\b/.test(m)) {
      return "this machine's IP address is not in the robot's IP allowlist; add it in the robot's security settings";
    }
    return "the robot's security settings (keywords, signing, IP allowlist) refused it; check them in the group's robot settings";
  }
  if (code === 300001 || code === 400101 || m.includes("token")) {
    return `the URL's access_token is wrong or the robot was removed; set the robot's current URL with \`${SET_URL}\``;
  }
  if (code === 410100 || m.includes("too fast")) {
    return "DingTalk takes at most 20 messages a minute per robot; wait a minute and send again";
  }
  return "look the errcode up in DingTalk's custom robot documentation, fix the cause and send again";
}

function feishuHint(code, msg, signed) {
  if (code === 19021) {
    return signed
      ? `check signing_secret (the bot's 签名校验 secret) and that this machine's clock is right; set it with \`${SET_SECRET}\``
      : `the bot requires signed messages (签名校验); set its secret with \`${SET_SECRET}\``;
  }
  if (code === 19024) {
    return "the bot only takes messages containing one of its custom keywords (自定义关键词); put one in text or title";
  }
  if (code === 19022) {
    return "this machine's IP address is not in the bot's IP allowlist; add it in the bot's security settings";
  }
  if (code === 19001 || /token/i.test(msg)) {
    return `the webhook URL is wrong or the bot was removed; set the bot's current URL with \`${SET_URL}\``;
  }
  if (code === 11232 || /frequency|rate limit/i.test(msg)) {
    return "Feishu takes at most 100 messages a minute and 5 a second per bot; wait and send again";
  }
  if (code === 9499) {
    return "Feishu could not read the message; check that format is `feishu` for this URL";
  }
  return "look the code up in Feishu's custom bot documentation, fix the cause and send again";
}

function genericHint(status) {
  if (status === 401 || status === 403) {
    return `the endpoint refused the request; check the URL's token and set the right URL with \`${SET_URL}\``;
  }
  if (status === 404 || status === 410) {
    return `the URL is wrong or the webhook was removed; set the right one with \`${SET_URL}\``;
  }
  if (status === 429) return "the service is rate limiting this webhook; wait and send again";
  if (status >= 500) return "the service failed; try again later";
  return "check the webhook's documentation and the format setting";
}

function parseJson(text) {
  try {
    const value = JSON.parse(text);
    return value !== null && typeof value === "object" ? value : null;
  } catch (_) {
    return null;
  }
}

function snippet(text) {
  const line = String(text).replace(/\s+/g, " ").trim();
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}

// ---- Signatures ----

// DingTalk "加签": base64(HMAC-SHA256(key = secret, message = timestamp + "\n" + secret)),
// the timestamp in milliseconds.
function dingtalkSign(secret, timestampMs) {
  return base64Encode(hmacSha256(utf8Encode(secret), utf8Encode(`${timestampMs}\n${secret}`)));
}

// Feishu/Lark signature: base64(HMAC-SHA256(key = timestamp + "\n" + secret, message =
// empty)), the timestamp in seconds.
function feishuSign(secret, timestampSeconds) {
  return base64Encode(hmacSha256(utf8Encode(`${timestampSeconds}\n${secret}`), []));
}

// ---- UTF-8, SHA-256, HMAC, base64 ----

// The UTF-8 bytes of a string; a lone surrogate becomes U+FFFD, as TextEncoder does.
function utf8Encode(text) {
  const out = [];
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const low = text.charCodeAt(i + 1);
      if (low >= 0xdc00 && low <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (low - 0xdc00);
        i++;
      }
    }
    if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
    if (c < 0x80) {
      out.push(c);
    } else if (c < 0x800) {
      out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
    } else if (c < 0x10000) {
      out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    } else {
      out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    }
  }
  return out;
}

const SHA256_K = [
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

function rotr(x, n) {
  return (x >>> n) | (x << (32 - n));
}

// SHA-256 of a byte array (an Array or Uint8Array of 0..255); 32 bytes.
function sha256(bytes) {
  const length = bytes.length;
  const padded = Math.ceil((length + 9) / 64) * 64;
  const block = new Uint8Array(padded);
  block.set(bytes);
  block[length] = 0x80;
  // The message length in bits, as a 64-bit big-endian number.
  const bitsHigh = Math.floor(length / 0x20000000);
  const bitsLow = (length * 8) >>> 0;
  for (let i = 0; i < 4; i++) {
    block[padded - 8 + i] = (bitsHigh >>> (24 - 8 * i)) & 0xff;
    block[padded - 4 + i] = (bitsLow >>> (24 - 8 * i)) & 0xff;
  }
  const h = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
  ];
  const w = new Int32Array(64);
  for (let offset = 0; offset < padded; offset += 64) {
    for (let i = 0; i < 16; i++) {
      const j = offset + 4 * i;
      w[i] = (block[j] << 24) | (block[j + 1] << 16) | (block[j + 2] << 8) | block[j + 3];
    }
    for (let i = 16; i < 64; i++) {
      const x = w[i - 15];
      const y = w[i - 2];
      const s0 = rotr(x, 7) ^ rotr(x, 18) ^ (x >>> 3);
      const s1 = rotr(y, 17) ^ rotr(y, 19) ^ (y >>> 10);
      w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0;
    }
    let [a, b, c, d, e, f, g, k] = h;
    for (let i = 0; i < 64; i++) {
      const s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      const ch = (e & f) ^ (~e & g);
      const t1 = (k + s1 + ch + SHA256_K[i] + w[i]) | 0;
      const s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      const maj = (a & b) ^ (a & c) ^ (b & c);
      const t2 = (s0 + maj) | 0;
      k = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    h[0] = (h[0] + a) | 0;
    h[1] = (h[1] + b) | 0;
    h[2] = (h[2] + c) | 0;
    h[3] = (h[3] + d) | 0;
    h[4] = (h[4] + e) | 0;
    h[5] = (h[5] + f) | 0;
    h[6] = (h[6] + g) | 0;
    h[7] = (h[7] + k) | 0;
  }
  const out = new Uint8Array(32);
  for (let i = 0; i < 8; i++) {
    out[4 * i] = h[i] >>> 24;
    out[4 * i + 1] = (h[i] >>> 16) & 0xff;
    out[4 * i + 2] = (h[i] >>> 8) & 0xff;
    out[4 * i + 3] = h[i] & 0xff;
  }
  return out;
}

// HMAC-SHA256 (RFC 2104) of byte arrays; 32 bytes.
function hmacSha256(key, message) {
  const k = new Uint8Array(64);
  k.set(key.length > 64 ? sha256(key) : key);
  const inner = new Uint8Array(64 + message.length);
  const outer = new Uint8Array(64 + 32);
  for (let i = 0; i < 64; i++) {
    inner[i] = k[i] ^ 0x36;
    outer[i] = k[i] ^ 0x5c;
  }
  inner.set(message, 64);
  outer.set(sha256(inner), 64);
  return sha256(outer);
}

const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Standard base64 with padding.
function base64Encode(bytes) {
  let out = "";
  for (let i = 0; i < bytes.length; i += 3) {
    const rest = bytes.length - i;
    const n = (bytes[i] << 16) | ((rest > 1 ? bytes[i + 1] : 0) << 8) | (rest > 2 ? bytes[i + 2] : 0);
    out += BASE64[(n >> 18) & 63] + BASE64[(n >> 12) & 63];
    out += rest > 1 ? BASE64[(n >> 6) & 63] : "=";
    out += rest > 2 ? BASE64[n & 63] : "=";
  }
  return out;
}
