//! `toolshed.webhook`: its JavaScript SHA-256, HMAC and base64 against known vectors and
//! the Rust crates, then each service's wire format, signatures and refusals, the missing
//! URL, the missing grant, and that no token or secret escapes.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::services::{self, FeishuReply, Service};
use super::*;

fn webhook_config(format: &str, url: String, secret: Option<&str>) -> Value {
    let mut config = json!({ "format": format, "url": url });
    if let Some(secret) = secret {
        config["signing_secret"] = json!(secret);
    }
    config
}

// ---- Webhook: the JavaScript crypto ----

#[tokio::test]
async fn webhook_crypto_matches_known_vectors_and_the_rust_crates() {
    // The plugin's own code, with a second action that reaches its helpers.
    let source = std::fs::read_to_string(plugin_dir("webhook").join("main.js")).unwrap();
    assert!(source.contains("export function activate(context)"));
    let source = source.replace(
        "export function activate(context)",
        "function webhookActivate(context)",
    );
    let probe = r#"
const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
const pattern = (n) => Array.from({ length: n }, (_, i) => (i * 7 + 3) & 0xff);
export function activate(context) {
  context.registerActions([{
    name: "vectors",
    description: "SHA-256, HMAC-SHA256, UTF-8 and base64 results",
    run() {
      return {
        sha256: Array.from({ length: 131 }, (_, n) => hex(sha256(pattern(n)))),
        hmac_long: hex(hmacSha256(pattern(100), pattern(300))),
        rfc4231: [
          hex(hmacSha256(Array(20).fill(0x0b), utf8Encode("Hi There"))),
          hex(hmacSha256(utf8Encode("Jefe"), utf8Encode("what do ya want for nothing?"))),
          hex(hmacSha256(Array(131).fill(0xaa),
            utf8Encode("Test Using Larger Than Block-Size Key - Hash Key First"))),
        ],
        utf8: hex(utf8Encode("aé世🚀\ud800")),
        base64: Array.from({ length: 8 }, (_, n) => base64Encode(pattern(n))),
        dingtalk: dingtalkSign("SECtest密钥", 1700000000123),
        feishu: feishuSign("feishu-secret", "1700000000"),
      };
    },
  }]);
}
"#;
    let p = support::TestPlugin::new("acme.vectors", &format!("{source}\n{probe}"))
        .start()
        .await;
    let out = p.call("vectors_vectors", json!({})).await.unwrap();
    let got = out.structured.unwrap();

    let pattern = |n: usize| {
        (0..n)
            .map(|i| ((i * 7 + 3) & 0xff) as u8)
            .collect::<Vec<u8>>()
    };
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    // Lengths 0..=130 cross every padding boundary (55/56, 63/64, 119/120 bytes).
    for n in 0..=130 {
        assert_eq!(
            got["sha256"][n],
            hex(&Sha256::digest(pattern(n))),
            "SHA-256 of {n} bytes"
        );
    }
    assert_eq!(
        got["sha256"][0],
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    use hmac::{Hmac, KeyInit, Mac};
    let mut mac = Hmac::<Sha256>::new_from_slice(&pattern(100)).unwrap();
    mac.update(&pattern(300));
    assert_eq!(got["hmac_long"], hex(&mac.finalize().into_bytes()));
    // RFC 4231 test cases 1, 2 and 6.
    assert_eq!(
        got["rfc4231"],
        json!([
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
        ])
    );
    // A lone surrogate becomes U+FFFD, as TextEncoder does.
    assert_eq!(got["utf8"], "61c3a9e4b896f09f9a80efbfbd");
    for n in 0..8 {
        assert_eq!(
            got["base64"][n],
            BASE64.encode(pattern(n)),
            "base64 of {n} bytes"
        );
    }
    assert_eq!(
        got["dingtalk"],
        services::hmac_base64(
            "SECtest密钥".as_bytes(),
            "1700000000123\nSECtest密钥".as_bytes()
        )
    );
    assert_eq!(
        got["feishu"],
        services::hmac_base64(b"1700000000\nfeishu-secret", b"")
    );
}

// ---- Webhook: Slack ----

#[tokio::test]
async fn webhook_posts_to_slack_in_its_format() {
    let slack = Service::start(services::slack(SLACK_TOKEN)).await;
    let url = format!("{}/services/T0001/B0001/{SLACK_TOKEN}", slack.origin());
    let p = Curated::start("webhook", webhook_config("slack", url, None), slack.grant()).await;

    let out = p
        .ok("webhook_send", json!({ "text": "Deploy finished." }))
        .await;
    assert_eq!(
        out,
        json!({
            "sent": true, "service": "Slack", "format": "slack",
            "to": format!("{}/…", slack.origin()), "status": 200, "signed": false
        })
    );
    let sent = slack.take_one();
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.header("content-type"), "application/json");
    assert_eq!(sent.json(), json!({ "text": "Deploy finished." }));

    p.ok(
        "webhook_send",
        json!({ "title": "Deploy", "text": "v1.2 is live.", "mentions": ["U0123ABCD"], "at_all": true }),
    )
    .await;
    assert_eq!(
        slack.take_one().json(),
        json!({ "text": "*Deploy*\n<!channel> <@U0123ABCD> v1.2 is live." })
    );
    // The success is logged with the URL cut to its host.
    assert!(
        logs().contains(&format!("sent a slack message to {}/…", slack.origin())),
        "{}",
        logs()
    );
}

#[tokio::test]
async fn webhook_reports_what_slack_refused_without_the_token() {
    let slack = Service::start(services::slack(SLACK_TOKEN)).await;
    let url = format!("{}/services/T0001/B0001/{WRONG_TOKEN}", slack.origin());
    let p = Curated::start("webhook", webhook_config("slack", url, None), slack.grant()).await;
    let error = p.fail("webhook_send", json!({ "text": "hello" })).await;
    assert!(
        error.contains("Slack refused the message: HTTP 404 no_service"),
        "{error}"
    );
    assert!(
        error.contains("toolshed plugins config toolshed.webhook url -"),
        "{error}"
    );
    assert_eq!(slack.requests().len(), 1);

    // A blank message never leaves: the plugin says what to give.
    let error = p.fail("webhook_send", json!({ "text": "  " })).await;
    assert!(error.contains("`text` is empty"), "{error}");
    let error = p
        .fail(
            "webhook_send",
            json!({ "text": "x", "mentions": ["<script>"] }),
        )
        .await;
    assert!(error.contains("is not an id"), "{error}");
    assert_eq!(slack.requests().len(), 1);
}

// ---- Webhook: DingTalk ----

#[tokio::test]
async fn webhook_signs_dingtalk_messages() {
    let ding = Service::start(services::dingtalk(DING_TOKEN, Some(DING_SECRET))).await;
    let url = format!("{}/robot/send?access_token={DING_TOKEN}", ding.origin());
    let p = Curated::start(
        "webhook",
        webhook_config("dingtalk", url, Some(DING_SECRET)),
        ding.grant(),
    )
    .await;

    let out = p
        .ok(
            "webhook_send",
            json!({ "text": "构建成功", "mentions": ["13800000000"] }),
        )
        .await;
    assert_eq!(out["service"], "DingTalk");
    assert_eq!(out["signed"], true);
    assert_eq!(out["to"], format!("{}/…", ding.origin()));
    let sent = ding.take_one();
    // The server recomputed the signature with the Rust crates and accepted it.
    assert!(sent.query.contains_key("sign") && sent.query.contains_key("timestamp"));
    assert_eq!(
        sent.json(),
        json!({
            "msgtype": "text",
            "text": { "content": "构建成功\n@13800000000" },
            "at": { "atMobiles": ["13800000000"], "isAtAll": false }
        })
    );

    p.ok(
        "webhook_send",
        json!({ "title": "Release", "text": "**v2** is out" }),
    )
    .await;
    assert_eq!(
        ding.take_one().json(),
        json!({
            "msgtype": "markdown",
            "markdown": { "title": "Release", "text": "### Release\n\n**v2** is out" }
        })
    );
}

#[tokio::test]
async fn webhook_reports_dingtalk_errcodes_without_secrets() {
    let ding = Service::start(services::dingtalk(DING_TOKEN, Some(DING_SECRET))).await;
    let url = format!("{}/robot/send?access_token={DING_TOKEN}", ding.origin());

    // The wrong secret: DingTalk answers HTTP 200 with errcode 310000.
    let p = Curated::start(
        "webhook",
        webhook_config("dingtalk", url.clone(), Some(WRONG_SECRET)),
        ding.grant(),
    )
    .await;
    let error = p.fail("webhook_send", json!({ "text": "hi" })).await;
    assert!(
        error.contains("DingTalk refused the message: errcode 310000, sign not match"),
        "{error}"
    );
    assert!(error.contains("check signing_secret"), "{error}");

    // No secret for a robot that wants one: say to set it.
    let p = Curated::start(
        "webhook",
        webhook_config("dingtalk", url, None),
        ding.grant(),
    )
    .await;
    let error = p.fail("webhook_send", json!({ "text": "hi" })).await;
    assert!(error.contains("errcode 310000"), "{error}");
    assert!(
        error.contains("requires signed messages")
            && error.contains("toolshed plugins config toolshed.webhook signing_secret -"),
        "{error}"
    );

    // A wrong access_token.
    let url = format!("{}/robot/send?access_token={WRONG_TOKEN}", ding.origin());
    let p = Curated::start(
        "webhook",
        webhook_config("dingtalk", url, Some(DING_SECRET)),
        ding.grant(),
    )
    .await;
    let error = p.fail("webhook_send", json!({ "text": "hi" })).await;
    assert!(
        error.contains("errcode 300001, token is not exist") && error.contains("url -"),
        "{error}"
    );
    assert_eq!(ding.requests().len(), 3);
}

// ---- Webhook: Feishu ----

#[tokio::test]
async fn webhook_signs_feishu_messages() {
    let feishu = Service::start(services::feishu(
        FEISHU_TOKEN,
        Some(FEISHU_SECRET),
        FeishuReply::Current,
    ))
    .await;
    let url = format!("{}/open-apis/bot/v2/hook/{FEISHU_TOKEN}", feishu.origin());
    let p = Curated::start(
        "webhook",
        webhook_config("feishu", url, Some(FEISHU_SECRET)),
        feishu.grant(),
    )
    .await;

    let out = p
        .ok(
            "webhook_send",
            json!({ "text": "部署完成", "at_all": true }),
        )
        .await;
    assert_eq!(out["service"], "Feishu");
    assert_eq!(out["signed"], true);
    let body = feishu.take_one().json();
    let timestamp = body["timestamp"].as_str().unwrap().to_string();
    assert_eq!(
        body,
        json!({
            "timestamp": timestamp,
            "sign": services::hmac_base64(format!("{timestamp}\n{FEISHU_SECRET}").as_bytes(), b""),
            "msg_type": "text",
            "content": { "text": "<at user_id=\"all\">所有人</at> 部署完成" }
        })
    );

    p.ok(
        "webhook_send",
        json!({ "title": "日报", "text": "line one\nline two", "mentions": ["ou_abc123"] }),
    )
    .await;
    let body = feishu.take_one().json();
    assert_eq!(
        body["content"],
        json!({ "post": { "zh_cn": { "title": "日报", "content": [
            [{ "tag": "at", "user_id": "ou_abc123" }, { "tag": "text", "text": "line one" }],
            [{ "tag": "text", "text": "line two" }]
        ] } } })
    );
    assert_eq!(body["msg_type"], "post");

    // The older answer form counts as success too.
    let legacy = Service::start(services::feishu(FEISHU_TOKEN, None, FeishuReply::Legacy)).await;
    let url = format!("{}/open-apis/bot/v2/hook/{FEISHU_TOKEN}", legacy.origin());
    let p = Curated::start(
        "webhook",
        webhook_config("feishu", url, None),
        legacy.grant(),
    )
    .await;
    let out = p.ok("webhook_send", json!({ "text": "hi" })).await;
    assert_eq!(out["signed"], false);
    assert_eq!(
        legacy.take_one().json(),
        json!({ "msg_type": "text", "content": { "text": "hi" } })
    );
}

#[tokio::test]
async fn webhook_reports_feishu_codes_without_secrets() {
    let feishu = Service::start(services::feishu(
        FEISHU_TOKEN,
        Some(FEISHU_SECRET),
        FeishuReply::Current,
    ))
    .await;
    let url = format!("{}/open-apis/bot/v2/hook/{FEISHU_TOKEN}", feishu.origin());
    let p = Curated::start(
        "webhook",
        webhook_config("feishu", url, Some(WRONG_SECRET)),
        feishu.grant(),
    )
    .await;
    let error = p.fail("webhook_send", json!({ "text": "hi" })).await;
    assert!(
        error.contains("Feishu refused the message: code 19021, sign match fail"),
        "{error}"
    );
    assert!(error.contains("check signing_secret"), "{error}");

    let url = format!("{}/open-apis/bot/v2/hook/{WRONG_TOKEN}", feishu.origin());
    let p = Curated::start(
        "webhook",
        webhook_config("feishu", url, Some(FEISHU_SECRET)),
        feishu.grant(),
    )
    .await;
    let error = p.fail("webhook_send", json!({ "text": "hi" })).await;
    assert!(
        error.contains("code 19001, param invalid: incoming webhook access token invalid"),
        "{error}"
    );
    assert!(error.contains("url -"), "{error}");
}

// ---- Webhook: generic, configuration and grants ----

#[tokio::test]
async fn webhook_generic_takes_any_2xx_and_reports_the_rest() {
    let hook = Service::start(services::generic(GENERIC_TOKEN)).await;
    let url = format!("{}/hooks/{GENERIC_TOKEN}", hook.origin());
    let p = Curated::start(
        "webhook",
        webhook_config("generic", url, None),
        hook.grant(),
    )
    .await;
    let out = p
        .ok("webhook_send", json!({ "title": "Build", "text": "green" }))
        .await;
    assert_eq!(out["status"], 204);
    assert_eq!(out["service"], "The webhook");
    assert_eq!(
        hook.take_one().json(),
        json!({ "title": "Build", "text": "green" })
    );
    p.ok("webhook_send", json!({ "text": "no title" })).await;
    assert_eq!(hook.take_one().json(), json!({ "text": "no title" }));

    let url = format!("{}/hooks/{WRONG_TOKEN}", hook.origin());
    let p = Curated::start(
        "webhook",
        webhook_config("generic", url, None),
        hook.grant(),
    )
    .await;
    let error = p.fail("webhook_send", json!({ "text": "x" })).await;
    assert!(
        error.contains("The webhook answered HTTP 401: {\"error\":\"unauthorized\"}"),
        "{error}"
    );
}

#[tokio::test]
async fn webhook_without_a_url_says_how_to_set_it() {
    let p = Curated::start("webhook", json!({}), vec!["127.0.0.1".into()]).await;
    let error = p.fail("webhook_send", json!({ "text": "hi" })).await;
    assert!(
        error.contains("the webhook URL is not set")
            && error.contains("toolshed plugins config toolshed.webhook url -"),
        "{error}"
    );
    let p = Curated::start(
        "webhook",
        json!({ "url": format!("ftp://example.test/{SLACK_TOKEN}") }),
        vec![],
    )
    .await;
    let error = p.fail("webhook_send", json!({ "text": "hi" })).await;
    assert!(
        error.contains("does not start with http:// or https://"),
        "{error}"
    );
}

#[tokio::test]
async fn webhook_names_the_grant_command_for_an_ungranted_host() {
    let slack = Service::start(services::slack(SLACK_TOKEN)).await;
    let url = format!("{}/services/T0001/B0001/{SLACK_TOKEN}", slack.origin());
    let grant = "toolshed plugins grant toolshed.webhook http:127.0.0.1";

    // Nothing granted at all: the plugin has no `ctx.http` and says what to run.
    let p = Curated::start(
        "webhook",
        webhook_config("slack", url.clone(), None),
        vec![],
    )
    .await;
    let error = p.fail("webhook_send", json!({ "text": "hi" })).await;
    assert!(error.contains(grant), "{error}");

    // Another host granted: the host's refusal comes through.
    let p = Curated::start(
        "webhook",
        webhook_config("slack", url, None),
        vec!["hooks.slack.com".into()],
    )
    .await;
    let error = p.fail("webhook_send", json!({ "text": "hi" })).await;
    assert!(
        error.contains("host `127.0.0.1` is not granted") && error.contains(grant),
        "{error}"
    );
    assert!(slack.requests().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn webhook_keeps_the_url_out_of_connection_errors() {
    // A port nobody listens on: the client's error must not quote the URL's path.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let url = format!("http://127.0.0.1:{port}/services/T0001/B0001/{SLACK_TOKEN}");
    let p = Curated::start(
        "webhook",
        webhook_config("slack", url, None),
        vec![format!("127.0.0.1:{port}")],
    )
    .await;
    let error = p.fail("webhook_send", json!({ "text": "hi" })).await;
    assert!(
        error.contains(&format!("could not reach http://127.0.0.1:{port}/…")),
        "{error}"
    );

    // A port out of range: the host's refusal quotes the whole URL, token and all; the
    // plugin passes the reason on with the URL cut to its host.
    let url = format!("http://127.0.0.1:99999/services/T0001/B0001/{SLACK_TOKEN}");
    let p = Curated::start(
        "webhook",
        webhook_config("slack", url, None),
        vec!["127.0.0.1".into()],
    )
    .await;
    let error = p.fail("webhook_send", json!({ "text": "hi" })).await;
    assert!(
        error.contains("`http://127.0.0.1:99999/…` is not a usable URL"),
        "{error}"
    );
}

// ---- Webhook: DingTalk and Feishu rich messages ----

#[tokio::test]
async fn webhook_sends_dingtalk_link_action_card_and_feed_card_signed() {
    let ding = Service::start(services::dingtalk(DING_TOKEN, Some(DING_SECRET))).await;
    let url = format!("{}/robot/send?access_token={DING_TOKEN}", ding.origin());
    let p = Curated::start(
        "webhook",
        webhook_config("dingtalk", url, Some(DING_SECRET)),
        ding.grant(),
    )
    .await;

    p.ok(
        "webhook_send",
        json!({ "kind": "link", "title": "Release notes", "text": "What changed in v2",
                "url": "https://example.com/v2", "picture_url": "https://example.com/v2.png" }),
    )
    .await;
    let sent = ding.take_one();
    // The fake recomputed each signature with the Rust crates and accepted it.
    assert!(sent.query.contains_key("sign") && sent.query.contains_key("timestamp"));
    assert_eq!(
        sent.json(),
        json!({ "msgtype": "link", "link": { "title": "Release notes", "text": "What changed in v2",
                "messageUrl": "https://example.com/v2", "picUrl": "https://example.com/v2.png" } })
    );

    p.ok(
        "webhook_send",
        json!({ "kind": "action_card", "title": "Deploy v2?", "text": "### Deploy\n**v2** is ready",
                "buttons": [{ "title": "Approve", "url": "https://ci.example.com/approve" },
                            { "title": "Reject", "url": "https://ci.example.com/reject" }] }),
    )
    .await;
    assert_eq!(
        ding.take_one().json(),
        json!({ "msgtype": "actionCard", "actionCard": {
            "title": "Deploy v2?", "text": "### Deploy\n**v2** is ready", "btnOrientation": "1",
            "btns": [{ "title": "Approve", "actionURL": "https://ci.example.com/approve" },
                     { "title": "Reject", "actionURL": "https://ci.example.com/reject" }] } })
    );

    p.ok(
        "webhook_send",
        json!({ "kind": "action_card", "title": "Read", "text": "The report", "vertical": true,
                "buttons": [{ "title": "Open", "url": "https://example.com/r" }] }),
    )
    .await;
    assert_eq!(
        ding.take_one().json()["actionCard"],
        json!({ "title": "Read", "text": "The report", "btnOrientation": "0",
                "singleTitle": "Open", "singleURL": "https://example.com/r" })
    );

    p.ok(
        "webhook_send",
        json!({ "kind": "feed_card", "links": [
            { "title": "One", "url": "https://example.com/1", "picture_url": "https://example.com/1.png" },
            { "title": "Two", "url": "https://example.com/2" }] }),
    )
    .await;
    assert_eq!(
        ding.take_one().json(),
        json!({ "msgtype": "feedCard", "feedCard": { "links": [
            { "title": "One", "messageURL": "https://example.com/1", "picURL": "https://example.com/1.png" },
            { "title": "Two", "messageURL": "https://example.com/2", "picURL": "" }] } })
    );

    // Wrong shapes are refused before anything is sent.
    let e = p
        .fail(
            "webhook_send",
            json!({ "kind": "link", "title": "x", "text": "y", "url": "ftp://x" }),
        )
        .await;
    assert!(
        e.contains("`url` must be an http:// or https:// URL"),
        "{e}"
    );
    let e = p
        .fail("webhook_send", json!({ "kind": "feed_card", "links": [] }))
        .await;
    assert!(e.contains("`links` is empty"), "{e}");
    let e = p
        .fail(
            "webhook_send",
            json!({ "kind": "link", "title": "x", "text": "y", "url": "https://x.example", "mentions": ["138"] }),
        )
        .await;
    assert!(
        e.contains("mentions and at_all are for text messages"),
        "{e}"
    );
    assert!(ding.requests().is_empty());
}

#[tokio::test]
async fn webhook_sends_feishu_interactive_cards_and_link_posts_signed() {
    let feishu = Service::start(services::feishu(
        FEISHU_TOKEN,
        Some(FEISHU_SECRET),
        FeishuReply::Current,
    ))
    .await;
    let url = format!("{}/open-apis/bot/v2/hook/{FEISHU_TOKEN}", feishu.origin());
    let p = Curated::start(
        "webhook",
        webhook_config("feishu", url, Some(FEISHU_SECRET)),
        feishu.grant(),
    )
    .await;

    p.ok(
        "webhook_send",
        json!({ "kind": "action_card", "title": "构建失败", "text": "**main** 构建失败",
                "buttons": [{ "title": "查看日志", "url": "https://ci.example.com/1" }] }),
    )
    .await;
    let body = feishu.take_one().json();
    let timestamp = body["timestamp"].as_str().unwrap().to_string();
    assert_eq!(
        body,
        json!({
            "timestamp": timestamp,
            "sign": services::hmac_base64(format!("{timestamp}\n{FEISHU_SECRET}").as_bytes(), b""),
            "msg_type": "interactive",
            "card": {
                "header": { "title": { "tag": "plain_text", "content": "构建失败" } },
                "elements": [
                    { "tag": "div", "text": { "tag": "lark_md", "content": "**main** 构建失败" } },
                    { "tag": "action", "layout": "bisected", "actions": [
                        { "tag": "button", "text": { "tag": "plain_text", "content": "查看日志" },
                          "url": "https://ci.example.com/1", "type": "primary" }] }
                ]
            }
        })
    );

    p.ok(
        "webhook_send",
        json!({ "kind": "link", "title": "周报", "text": "本周进展", "url": "https://example.com/w" }),
    )
    .await;
    assert_eq!(
        feishu.take_one().json()["content"],
        json!({ "post": { "zh_cn": { "title": "周报", "content": [
            [{ "tag": "text", "text": "本周进展" }],
            [{ "tag": "a", "text": "周报", "href": "https://example.com/w" }]] } } })
    );
}
