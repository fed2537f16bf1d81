//! The globals a plugin author expects: console, timers, URL, TextEncoder, atob, Buffer,
//! crypto — each on the capability model (fetch is in capabilities.rs, with the grants).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use serde_json::{Value, json};
use support::{TestPlugin, captured_logs};

const RUN: &str = r#"
export function activate(context) {
  context.registerActions([{
    name: "run", description: "Runs a snippet.",
    properties: { code: { type: "string", required: true } },
    async run(inputs, ctx) {
      const f = new Function("ctx", `return (async () => { ${inputs.code} })()`);
      try { return await f(ctx); } catch (e) { return { error: String(e && e.message || e) }; }
    },
  }]);
}
"#;

async fn run(snippet: &str) -> Value {
    let p = TestPlugin::new("acme.globals", RUN).start().await;
    let out = p
        .call("globals_run", json!({ "code": snippet }))
        .await
        .unwrap();
    let text = out.text_joined();
    out.structured.unwrap_or(Value::String(text))
}

#[tokio::test]
async fn console_writes_the_plugins_log() {
    let logs = captured_logs();
    run("console.log('console-marker-8812', {a: 1}); console.warn('warned-8812'); return 1;").await;
    let text = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("console-marker-8812"))
        .expect("logged");
    assert!(
        line.contains("INFO") && line.contains("acme.globals"),
        "{line}"
    );
    assert!(line.contains("console-marker-8812 {\"a\":1}"), "{line}");
    assert!(
        text.lines()
            .any(|l| l.contains("warned-8812") && l.contains("WARN"))
    );
}

#[tokio::test]
async fn timers_run_within_the_call_and_cleared_ones_never_fire() {
    let out = run(
        r#"const seen = [];
           const cleared = setTimeout(() => seen.push("cleared"), 10);
           clearTimeout(cleared);
           setTimeout((x) => seen.push(x), 30, "late");
           setTimeout(() => seen.push("early"), 5);
           let ticks = 0;
           await new Promise((done) => {
             const id = setInterval(() => { ticks++; if (ticks === 3) { clearInterval(id); done(); } }, 5);
           });
           await new Promise((done) => setTimeout(done, 50));
           return { seen, ticks };"#,
    )
    .await;
    assert_eq!(out, json!({ "seen": ["early", "late"], "ticks": 3 }));
}

#[tokio::test]
async fn a_timer_outside_a_call_is_refused_and_a_pending_one_ends_with_its_call() {
    let main = r#"
let fired = 0;
export function activate(context) {
  let refused = "";
  try { setTimeout(() => {}, 1); } catch (e) { refused = e.message; }
  context.registerActions([
    { name: "refused", description: "d", run: () => refused },
    { name: "arm", description: "d", run: () => { setTimeout(() => { fired++; }, 20); return "armed"; } },
    { name: "fired", description: "d", run: async () => { await new Promise((r) => setTimeout(r, 60)); return String(fired); } },
  ]);
}
"#;
    let p = TestPlugin::new("acme.timers", main).start().await;
    let refused = p.text("timers_refused", json!({})).await;
    assert!(
        refused.contains("timers run only while a call runs"),
        "{refused}"
    );
    assert_eq!(p.text("timers_arm", json!({})).await, "armed");
    // The timer of the call that ended never fires, even while a later call waits.
    assert_eq!(p.text("timers_fired", json!({})).await, "0");
}

#[tokio::test]
async fn urls_and_search_params_follow_the_whatwg_rules() {
    let out = run(
        r#"const u = new URL("../b/c?x=1&y=two%20words#frag", "https://user:pw@Example.COM:8443/a/z");
           const p = new URLSearchParams({ q: "a b&c", n: 1 });
           p.append("q", "é");
           u.searchParams.set("x", "2");
           u.searchParams.append("z", "3");
           const bad = URL.canParse("not a url");
           let thrown = "";
           try { new URL("nope"); } catch (e) { thrown = e.constructor.name; }
           return { href: u.href, host: u.host, hostname: u.hostname, port: u.port, origin: u.origin,
                    pathname: u.pathname, search: u.search, hash: u.hash, y: u.searchParams.get("y"),
                    params: p.toString(), all: p.getAll("q"), bad, thrown,
                    parsed: [...new URLSearchParams("?a=1&b=%20+x&a=2")] };"#,
    )
    .await;
    assert_eq!(
        out,
        json!({
            "href": "https://user:pw@example.com:8443/b/c?x=2&y=two+words&z=3#frag",
            "host": "example.com:8443", "hostname": "example.com", "port": "8443",
            "origin": "https://example.com:8443", "pathname": "/b/c",
            "search": "?x=2&y=two+words&z=3", "hash": "#frag", "y": "two words",
            "params": "q=a+b%26c&n=1&q=%C3%A9", "all": ["a b&c", "é"], "bad": false,
            "thrown": "TypeError", "parsed": [["a", "1"], ["b", "  x"], ["a", "2"]]
        })
    );
}

#[tokio::test]
async fn text_bytes_base64_and_hex() {
    let out = run(
        r#"const text = "héllo wörld ✓ 😀";
           const bytes = new TextEncoder().encode(text);
           const back = new TextDecoder().decode(bytes);
           const b = Buffer.from(text);
           return { len: bytes.length, back, b64: b.toString("base64"), hex: Buffer.from("hi").toString("hex"),
                    fromB64: Buffer.from(b.toString("base64"), "base64").toString(),
                    fromHex: Buffer.from("6869", "hex").toString("utf8"),
                    btoa: btoa("hello"), atob: atob("aGVsbG8="),
                    concat: Buffer.concat([Buffer.from("ab"), Buffer.from("cd")]).toString(),
                    bad: new TextDecoder().decode(new Uint8Array([0x68, 0xff, 0x69])),
                    isBuffer: Buffer.isBuffer(b), byteLength: Buffer.byteLength("✓") };"#,
    )
    .await;
    assert_eq!(
        out,
        json!({
            "len": 22, "back": "héllo wörld ✓ 😀", "b64": "aMOpbGxvIHfDtnJsZCDinJMg8J+YgA==",
            "hex": "6869", "fromB64": "héllo wörld ✓ 😀", "fromHex": "hi",
            "btoa": "aGVsbG8=", "atob": "hello", "concat": "abcd", "bad": "h\u{fffd}i",
            "isBuffer": true, "byteLength": 3
        })
    );
}

#[tokio::test]
async fn crypto_gives_random_uuids_and_values() {
    let out = run(
        r#"const a = crypto.randomUUID(), b = crypto.randomUUID();
           const values = crypto.getRandomValues(new Uint32Array(8));
           let big = "";
           try { crypto.getRandomValues(new Uint8Array(70000)); } catch (e) { big = e.constructor.name; }
           return { a, differ: a !== b, nonzero: values.some((v) => v !== 0), big };"#,
    )
    .await;
    let uuid = out["a"].as_str().unwrap();
    let shape = regex_like_uuid_v4(uuid);
    assert!(shape, "{uuid}");
    assert_eq!(out["differ"], true);
    assert_eq!(out["nonzero"], true);
    assert_eq!(out["big"], "RangeError");
}

fn regex_like_uuid_v4(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12])
        && parts.iter().all(|p| {
            p.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        })
        && parts[2].starts_with('4')
        && matches!(parts[3].as_bytes()[0], b'8' | b'9' | b'a' | b'b')
}

#[tokio::test]
async fn context_names_the_plugin_and_logger_warning_is_warn() {
    let logs = captured_logs();
    let main = r#"
export function activate(context) {
  context.logger.warning("warning-alias-4410");
  const me = { id: context.plugin.id, version: context.plugin.version, dir: context.plugin.dir.length > 0 };
  context.registerActions([{ name: "me", description: "d", run: () => me }]);
}
"#;
    let p = TestPlugin::new("acme.self", main).start().await;
    let out = p.call("self_me", json!({})).await.unwrap();
    assert_eq!(
        out.structured,
        Some(json!({ "id": "acme.self", "version": "0.1.0", "dir": true }))
    );
    let text = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    assert!(
        text.lines()
            .any(|l| l.contains("warning-alias-4410") && l.contains("WARN")),
        "{text}"
    );
}

#[tokio::test]
async fn crypto_hashes_and_signs_as_node_and_webcrypto_do() {
    // Failed before: the crypto global had only randomUUID and getRandomValues.
    let out = run(
        r#"const h = crypto.createHash("sha256").update("ab").update(new TextEncoder().encode("c")).digest("hex");
           const mac = crypto.createHmac("sha256", "key").update("The quick brown fox jumps over the lazy dog").digest("base64");
           const md5 = crypto.createHash("md5").update("").digest("hex");
           const key = await crypto.subtle.importKey("raw", new TextEncoder().encode("key"), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
           const signed = Buffer.from(new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode("The quick brown fox jumps over the lazy dog")))).toString("base64");
           const sum = Buffer.from(new Uint8Array(await crypto.subtle.digest("SHA-1", new TextEncoder().encode("abc")))).toString("hex");
           let unknown;
           try { crypto.createHash("sha3-999"); } catch (e) { unknown = e.message; }
           return { h, mac, md5, signed, sum, unknown, random: crypto.randomBytes(8).length };"#,
    )
    .await;
    assert!(out.get("error").is_none(), "{out}");
    assert_eq!(
        out["h"],
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(out["mac"], "97yD9DBThCSxMpjmqm+xQ+9NWaFJRhdZl0edvC0aPNg=");
    assert_eq!(out["signed"], out["mac"]);
    assert_eq!(out["md5"], "d41d8cd98f00b204e9800998ecf8427e");
    assert_eq!(out["sum"], "a9993e364706816aba3e25717850c26c9cd0d89d");
    assert!(
        out["unknown"].as_str().unwrap().contains("not supported"),
        "{out}"
    );
    assert_eq!(out["random"], 8);
}

#[tokio::test]
async fn the_desktop_services_of_ctx_api_say_they_are_not_offered() {
    // Failed before: `ctx.api.readFile` was undefined, so templates failed with
    // "not a function" rather than a reason.
    let out = run(r#"let said;
           try { await ctx.api.readFile("notes.txt"); } catch (e) { said = e.message; }
           return { said, has: typeof ctx.api.fetchBuffer, thenable: typeof ctx.api.then };"#)
    .await;
    assert_eq!(
        out["said"],
        "ctx.api.readFile is a service of Agent Spaces' desktop app, which toolshed (a headless host) does not offer"
    );
    assert_eq!(out["has"], "function");
    assert_eq!(
        out["thenable"], "undefined",
        "awaiting ctx.api must not hang"
    );
}
