//! Local stand-ins for the services the curated plugins talk to: Slack incoming webhooks,
//! DingTalk and Feishu custom bots, a generic JSON webhook and the GitHub REST API.
//!
//! Each runs on 127.0.0.1 behind [`Service`], which records every request, and answers the
//! way the real service does: the same status codes, bodies and headers, success and error
//! alike. They also check what they get the way the real ones do: the token in the URL,
//! the JSON shape, and DingTalk and Feishu signatures recomputed here with the `hmac` and
//! `sha2` crates (so the plugins' own JavaScript SHA-256 is checked against them on every
//! signed call).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

/// One request as the service received it.
#[derive(Debug, Clone)]
pub(super) struct Recorded {
    pub method: Method,
    /// The path as sent, percent-encoding kept.
    pub path: String,
    /// The query, decoded.
    pub query: HashMap<String, String>,
    pub headers: HeaderMap,
    pub body: String,
}

impl Recorded {
    /// A header's value, or "" when absent.
    pub(super) fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }

    /// The body as JSON, or `Value::Null` when it is not JSON.
    pub(super) fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

/// A status, response headers and a body.
pub(super) struct Answer {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: String,
}

impl Answer {
    fn new(status: u16, content_type: &str, body: impl Into<String>) -> Self {
        Self {
            status,
            headers: vec![("content-type", content_type.to_string())],
            body: body.into(),
        }
    }

    fn text(status: u16, body: &str) -> Self {
        Self::new(status, "text/html", body)
    }

    fn json(status: u16, body: Value) -> Self {
        Self::new(status, "application/json; charset=utf-8", body.to_string())
    }

    fn header(mut self, name: &'static str, value: impl ToString) -> Self {
        self.headers.push((name, value.to_string()));
        self
    }
}

type Responder = Arc<dyn Fn(&Recorded) -> Answer + Send + Sync>;

#[derive(Clone)]
struct Shared {
    answer: Responder,
    log: Arc<Mutex<Vec<Recorded>>>,
}

/// A service listening on 127.0.0.1 until the test's runtime ends.
pub(super) struct Service {
    pub port: u16,
    log: Arc<Mutex<Vec<Recorded>>>,
}

impl Service {
    /// Serves `answer` on a free port.
    pub(super) async fn start(
        answer: impl Fn(&Recorded) -> Answer + Send + Sync + 'static,
    ) -> Self {
        let log = Arc::new(Mutex::new(Vec::new()));
        let shared = Shared {
            answer: Arc::new(answer),
            log: log.clone(),
        };
        let app = Router::new().fallback(record).with_state(shared);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { port, log }
    }

    /// `http://127.0.0.1:<port>`.
    pub(super) fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// What a grant for this service looks like.
    pub(super) fn grant(&self) -> Vec<String> {
        vec![format!("127.0.0.1:{}", self.port)]
    }

    /// Every request received so far, in order.
    pub(super) fn requests(&self) -> Vec<Recorded> {
        self.log.lock().unwrap().clone()
    }

    /// The one request received since the last call; panics unless there was exactly one.
    pub(super) fn take_one(&self) -> Recorded {
        let mut log = self.log.lock().unwrap();
        assert_eq!(log.len(), 1, "expected one request, got {log:#?}");
        log.remove(0)
    }
}

async fn record(
    State(shared): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let query = Query::<HashMap<String, String>>::try_from_uri(&uri)
        .map(|q| q.0)
        .unwrap_or_default();
    let request = Recorded {
        method,
        path: uri.path().to_string(),
        query,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    let answer = (shared.answer)(&request);
    shared.log.lock().unwrap().push(request);
    let mut response = (
        StatusCode::from_u16(answer.status).unwrap(),
        answer.body.clone(),
    )
        .into_response();
    for (name, value) in answer.headers {
        response.headers_mut().insert(
            HeaderName::from_static(name),
            HeaderValue::from_str(&value).unwrap(),
        );
    }
    response
}

fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// base64(HMAC-SHA256(key, message)).
pub(super) fn hmac_base64(key: &[u8], message: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap();
    mac.update(message);
    BASE64.encode(mac.finalize().into_bytes())
}

// ---- Chat webhooks ----

/// A Slack incoming webhook at `/services/T0001/B0001/<token>`: `200 ok`, or a 4xx with
/// Slack's error code as plain text.
pub(super) fn slack(token: &'static str) -> impl Fn(&Recorded) -> Answer + Send + Sync {
    move |r| {
        if r.path != format!("/services/T0001/B0001/{token}") {
            return Answer::text(404, "no_service");
        }
        if r.method != Method::POST {
            return Answer::text(405, "invalid_method");
        }
        let Some(body) = r.json().as_object().cloned() else {
            return Answer::text(400, "invalid_payload");
        };
        match body.get("text").and_then(Value::as_str) {
            Some(text) if !text.trim().is_empty() => Answer::text(200, "ok"),
            _ => Answer::text(400, "no_text"),
        }
    }
}

/// A DingTalk custom robot at `/robot/send?access_token=<token>`, checking the "加签"
/// signature when `secret` is set. DingTalk answers HTTP 200 with an `errcode` either way.
pub(super) fn dingtalk(
    token: &'static str,
    secret: Option<&'static str>,
) -> impl Fn(&Recorded) -> Answer + Send + Sync {
    move |r| {
        let answer = |errcode: i64, errmsg: &str| {
            Answer::new(
                200,
                "application/json;charset=UTF-8",
                json!({ "errcode": errcode, "errmsg": errmsg }).to_string(),
            )
        };
        if r.path != "/robot/send" || r.method != Method::POST {
            return Answer::text(404, "<html><body>Not Found</body></html>");
        }
        if r.query.get("access_token").map(String::as_str) != Some(token) {
            return answer(300001, "token is not exist");
        }
        if let Some(secret) = secret {
            let sign_not_match =
                "sign not match, more: [https://ding-doc.dingtalk.com/doc#/serverapi2/qf2nxq]";
            let (Some(timestamp), Some(sign)) = (r.query.get("timestamp"), r.query.get("sign"))
            else {
                return answer(310000, sign_not_match);
            };
            let Ok(ms) = timestamp.parse::<i64>() else {
                return answer(310000, "invalid timestamp");
            };
            if (now_millis() - ms).abs() > 3_600_000 {
                return answer(310000, "invalid timestamp");
            }
            let expected = hmac_base64(
                secret.as_bytes(),
                format!("{timestamp}\n{secret}").as_bytes(),
            );
            if *sign != expected {
                return answer(310000, sign_not_match);
            }
        }
        if !r.header("content-type").starts_with("application/json") {
            return answer(43004, "无效的HTTP HEADER Content-Type");
        }
        let body = r.json();
        let well_formed = match body["msgtype"].as_str() {
            Some("text") => body["text"]["content"]
                .as_str()
                .is_some_and(|t| !t.is_empty()),
            Some("markdown") => {
                body["markdown"]["title"].is_string() && body["markdown"]["text"].is_string()
            }
            // As DingTalk's custom robot documentation describes each message type.
            Some("link") => ["title", "text", "messageUrl"]
                .iter()
                .all(|k| body["link"][k].as_str().is_some_and(|v| !v.is_empty())),
            Some("actionCard") => {
                let card = &body["actionCard"];
                let single = card["singleTitle"].is_string() && card["singleURL"].is_string();
                let several = card["btns"].as_array().is_some_and(|b| {
                    !b.is_empty()
                        && b.iter()
                            .all(|b| b["title"].is_string() && b["actionURL"].is_string())
                });
                card["title"].is_string() && card["text"].is_string() && (single || several)
            }
            Some("feedCard") => body["feedCard"]["links"].as_array().is_some_and(|links| {
                !links.is_empty()
                    && links.iter().all(|l| {
                        l["title"].is_string()
                            && l["messageURL"].is_string()
                            && l["picURL"].is_string()
                    })
            }),
            _ => false,
        };
        if !well_formed {
            return answer(40035, "缺少参数 json");
        }
        answer(0, "ok")
    }
}

/// What a Feishu bot answers on success.
#[derive(Debug, Clone, Copy)]
pub(super) enum FeishuReply {
    /// `{"StatusCode":0,"StatusMessage":"success","code":0,"data":{},"msg":"success"}`.
    Current,
    /// The older `{"StatusCode":0,"StatusMessage":"success"}`.
    Legacy,
}

/// A Feishu/Lark custom bot at `/open-apis/bot/v2/hook/<token>`, checking the signature
/// when `secret` is set.
pub(super) fn feishu(
    token: &'static str,
    secret: Option<&'static str>,
    reply: FeishuReply,
) -> impl Fn(&Recorded) -> Answer + Send + Sync {
    move |r| {
        let refuse = |code: i64, msg: &str| {
            Answer::json(200, json!({ "code": code, "data": {}, "msg": msg }))
        };
        if r.path != format!("/open-apis/bot/v2/hook/{token}") {
            return refuse(
                19001,
                "param invalid: incoming webhook access token invalid",
            );
        }
        let body = r.json();
        if !body.is_object() {
            return Answer::json(
                400,
                json!({ "code": 9499, "msg": "Bad Request", "data": {} }),
            );
        }
        if let Some(secret) = secret {
            let sign_fail = "sign match fail or timestamp is not within one hour from current time";
            let (Some(timestamp), Some(sign)) = (body["timestamp"].as_str(), body["sign"].as_str())
            else {
                return refuse(19021, sign_fail);
            };
            let fresh = timestamp
                .parse::<i64>()
                .is_ok_and(|s| (now_millis() / 1000 - s).abs() <= 3600);
            let expected = hmac_base64(format!("{timestamp}\n{secret}").as_bytes(), b"");
            if !fresh || sign != expected {
                return refuse(19021, sign_fail);
            }
        }
        let well_formed = match body["msg_type"].as_str() {
            Some("text") => body["content"]["text"]
                .as_str()
                .is_some_and(|t| !t.is_empty()),
            Some("post") => body["content"]["post"].is_object(),
            // A message card: a header and elements.
            Some("interactive") => {
                body["card"]["elements"].is_array()
                    && body["card"]["header"]["title"]["content"].is_string()
            }
            _ => false,
        };
        if !well_formed {
            return refuse(9499, "Bad Request");
        }
        match reply {
            FeishuReply::Current => Answer::json(
                200,
                json!({"StatusCode": 0, "StatusMessage": "success", "code": 0, "data": {}, "msg": "success"}),
            ),
            FeishuReply::Legacy => {
                Answer::json(200, json!({"StatusCode": 0, "StatusMessage": "success"}))
            }
        }
    }
}

/// A generic JSON webhook at `/hooks/<token>`: `204` for a JSON object, `401` for another
/// token.
pub(super) fn generic(token: &'static str) -> impl Fn(&Recorded) -> Answer + Send + Sync {
    move |r| {
        if r.path != format!("/hooks/{token}") {
            return Answer::json(401, json!({ "error": "unauthorized" }));
        }
        if !r.json().is_object() {
            return Answer::json(400, json!({ "error": "expected a JSON object" }));
        }
        Answer::new(204, "text/plain", "")
    }
}

// ---- GitHub ----

/// The token the fake GitHub accepts.
pub(super) const GITHUB_TOKEN: &str = "ghp_curatedFakeToken0123456789ABCDEFabcd";
/// When the exhausted rate limit resets: 2030-01-01T00:00:00Z.
pub(super) const RATE_RESET: u64 = 1_893_456_000;

fn user(login: &str) -> Value {
    json!({
        "login": login, "id": login.len(), "node_id": "MDQ6VXNlcjE=",
        "avatar_url": format!("https://avatars.githubusercontent.com/u/{}?v=4", login.len()),
        "url": format!("https://api.github.com/users/{login}"),
        "html_url": format!("https://github.com/{login}"),
        "type": "User", "site_admin": false
    })
}

fn label(name: &str) -> Value {
    json!({ "id": 208045946, "node_id": "MDU6TGFiZWwyMDgwNDU5NDY=", "name": name,
            "color": "f29513", "default": false, "description": null,
            "url": format!("https://api.github.com/repos/octo/hello/labels/{name}") })
}

/// An issue as the issues endpoints return it; `pull` makes it a pull request's issue.
pub(super) fn issue(number: u64, title: &str, labels: &[&str], comments: u64, pull: bool) -> Value {
    let mut issue = json!({
        "url": format!("https://api.github.com/repos/octo/hello/issues/{number}"),
        "repository_url": "https://api.github.com/repos/octo/hello",
        "comments_url": format!("https://api.github.com/repos/octo/hello/issues/{number}/comments"),
        "html_url": format!("https://github.com/octo/hello/{}/{number}", if pull { "pull" } else { "issues" }),
        "id": 1_000 + number, "node_id": "I_kwDOAbCdEf5", "number": number, "title": title,
        "user": user("mona"),
        "labels": labels.iter().map(|l| label(l)).collect::<Vec<_>>(),
        "state": "open", "locked": false, "assignee": null, "assignees": [], "milestone": null,
        "comments": comments,
        "created_at": "2024-05-01T10:00:00Z", "updated_at": "2024-05-02T11:30:00Z",
        "closed_at": null, "author_association": "CONTRIBUTOR", "active_lock_reason": null,
        "body": format!("Body of {number}."),
        "reactions": { "url": "https://api.github.com/repos/octo/hello/issues/1/reactions",
                       "total_count": 0, "+1": 0, "-1": 0 },
        "timeline_url": format!("https://api.github.com/repos/octo/hello/issues/{number}/timeline"),
        "performed_via_github_app": null, "state_reason": null
    });
    if pull {
        issue["pull_request"] = json!({
            "url": format!("https://api.github.com/repos/octo/hello/pulls/{number}"),
            "html_url": format!("https://github.com/octo/hello/pull/{number}"),
            "diff_url": format!("https://github.com/octo/hello/pull/{number}.diff"),
            "patch_url": format!("https://github.com/octo/hello/pull/{number}.patch"),
            "merged_at": null
        });
    }
    issue
}

/// The long body of issue 1: past the plugin's 6000-character cut.
pub(super) fn long_body() -> String {
    format!("Steps to reproduce:\n{}", "é".repeat(7000))
}

fn comment(id: u64, login: &str, body: &str) -> Value {
    json!({
        "url": format!("https://api.github.com/repos/octo/hello/issues/comments/{id}"),
        "html_url": format!("https://github.com/octo/hello/issues/1#issuecomment-{id}"),
        "issue_url": "https://api.github.com/repos/octo/hello/issues/1",
        "id": id, "node_id": "IC_kwDOAbCdEf5", "user": user(login),
        "created_at": format!("2024-05-0{}T09:00:00Z", id % 9 + 1), "updated_at": "2024-05-09T09:00:00Z",
        "author_association": "MEMBER", "body": body, "reactions": { "total_count": 0 }
    })
}

fn branch(owner: &str, name: &str, sha: &str) -> Value {
    json!({ "label": format!("{owner}:{name}"), "ref": name, "sha": sha, "user": user(owner),
            "repo": { "id": 1296269, "name": "hello", "full_name": format!("{owner}/hello"), "private": false } })
}

/// A pull request as `/pulls/{n}` returns it; the list endpoint leaves out the counts.
pub(super) fn pull(number: u64, title: &str, full: bool) -> Value {
    let merged = number == 2;
    let mut pull = json!({
        "url": format!("https://api.github.com/repos/octo/hello/pulls/{number}"),
        "id": 2_000 + number, "node_id": "PR_kwDOAbCdEf5",
        "html_url": format!("https://github.com/octo/hello/pull/{number}"),
        "diff_url": format!("https://github.com/octo/hello/pull/{number}.diff"),
        "number": number, "state": if merged { "closed" } else { "open" }, "locked": false,
        "title": title, "user": user("hubot"), "body": "Fixes #1.",
        "labels": [label("fix")],
        "created_at": "2024-05-02T08:00:00Z", "updated_at": "2024-05-03T12:00:00Z",
        "closed_at": if merged { json!("2024-05-03T12:00:00Z") } else { Value::Null },
        "merged_at": if merged { json!("2024-05-03T12:00:00Z") } else { Value::Null },
        "merge_commit_sha": "e5bd3914e2e596debea16f433f57875b5b90bcd6",
        "assignee": null, "assignees": [], "requested_reviewers": [], "draft": !merged,
        "head": branch("hubot", "fix-parser", "6dcb09b5b57875f334f61aebed695e2e4193db5e"),
        "base": branch("octo", "main", "9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b"),
        "author_association": "CONTRIBUTOR", "auto_merge": null
    });
    if full {
        for (key, value) in [
            ("merged", json!(merged)),
            ("mergeable", Value::Null),
            ("comments", json!(1)),
            ("review_comments", json!(2)),
            ("commits", json!(3)),
            ("additions", json!(40)),
            ("deletions", json!(7)),
            ("changed_files", json!(5)),
        ] {
            pull[key] = value;
        }
    }
    pull
}

/// The text of `docs/héllo w#1.md`: multi-byte UTF-8, long enough to wrap GitHub's base64.
pub(super) const FILE_TEXT: &str =
    "# Héllo wörld\n\n世界 🚀: a file with text in several scripts, over one base64 line.\n";
/// The bytes of `logo.png`: not UTF-8.
pub(super) const PNG_BYTES: &[u8] = &[
    0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d,
];

/// base64 as the contents API writes it: a line break after every 60 characters.
fn github_base64(bytes: &[u8]) -> String {
    let flat = BASE64.encode(bytes);
    let mut out = String::new();
    for (i, c) in flat.chars().enumerate() {
        if i > 0 && i % 60 == 0 {
            out.push('\n');
        }
        out.push(c);
    }
    out.push('\n');
    out
}

fn content(path: &str, kind: &str, size: usize, extra: Value) -> Value {
    let name = path.rsplit('/').next().unwrap_or(path);
    let mut entry = json!({
        "name": name, "path": path, "sha": "3d21ec53a331a6f037a91c368710b99387d012c1",
        "size": size,
        "url": format!("https://api.github.com/repos/octo/hello/contents/{path}?ref=main"),
        "html_url": format!("https://github.com/octo/hello/blob/main/{path}"),
        "git_url": "https://api.github.com/repos/octo/hello/git/blobs/3d21ec53a331a6f037a91c368710b99387d012c1",
        "download_url": if kind == "file" { json!(format!("https://raw.githubusercontent.com/octo/hello/main/{path}")) } else { Value::Null },
        "type": kind,
        "_links": { "self": "https://api.github.com/repos/octo/hello/contents/x", "git": "x", "html": "x" }
    });
    if let (Some(entry), Some(extra)) = (entry.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            entry.insert(k.clone(), v.clone());
        }
    }
    entry
}

fn file(path: &str, bytes: &[u8]) -> Value {
    content(
        path,
        "file",
        bytes.len(),
        json!({ "content": github_base64(bytes), "encoding": "base64" }),
    )
}

fn not_found(docs: &str) -> Value {
    json!({ "message": "Not Found", "documentation_url": format!("https://docs.github.com/rest/{docs}"), "status": "404" })
}

/// The GitHub REST API for the repository `octo/hello` (and `octo/private`, which it
/// pretends not to know, and `octo/rate-limited` and `octo/rate-limited-soon`, whose
/// requests are over the limit).
pub(super) fn github(r: &Recorded) -> Answer {
    if r.header("user-agent").is_empty() {
        return Answer::text(
            403,
            "Request forbidden by administrative rules. Please make sure your request has a User-Agent header",
        );
    }
    let authenticated = match r.header("authorization") {
        "" => false,
        value if value == format!("Bearer {GITHUB_TOKEN}") => true,
        _ => {
            return Answer::json(
                401,
                json!({ "message": "Bad credentials", "documentation_url": "https://docs.github.com/rest", "status": "401" }),
            );
        }
    };
    let limit = if authenticated { 5000 } else { 60 };
    let ok = |body: Value| {
        Answer::json(200, body)
            .header("x-github-api-version-selected", "2022-11-28")
            .header("x-ratelimit-limit", limit)
            .header("x-ratelimit-remaining", limit - 1)
            .header("x-ratelimit-reset", RATE_RESET)
            .header("x-ratelimit-used", 1)
            .header("x-ratelimit-resource", "core")
    };
    let exhausted = |status: u16, reset: u64| {
        Answer::json(
            status,
            json!({
                "message": "API rate limit exceeded for 127.0.0.1. (But here's the good news: Authenticated requests get a higher rate limit. Check out the documentation for more details.)",
                "documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"
            }),
        )
        .header("x-ratelimit-limit", limit)
        .header("x-ratelimit-remaining", 0)
        .header("x-ratelimit-reset", reset)
        .header("x-ratelimit-used", limit)
        .header("x-ratelimit-resource", "core")
    };
    if r.method != Method::GET {
        return Answer::json(404, not_found("overview"));
    }
    if r.path.starts_with("/repos/octo/rate-limited-soon/") {
        return exhausted(429, (now_millis() / 1000) as u64 + 1800);
    }
    if r.path.starts_with("/repos/octo/rate-limited/") {
        return exhausted(403, RATE_RESET);
    }
    match r.path.as_str() {
        "/repos/octo/hello/issues" => ok(json!([
            issue(3, "Crash on empty input", &["bug", "good first issue"], 0, false),
            issue(2, "Fix the parser", &["fix"], 1, true),
            issue(1, "Parser fails on UTF-8", &["bug"], 3, false),
        ]))
        .header(
            "link",
            "<https://api.github.com/repositories/1296269/issues?state=open&per_page=3&page=2>; rel=\"next\", <https://api.github.com/repositories/1296269/issues?state=open&per_page=3&page=4>; rel=\"last\"",
        ),
        "/repos/octo/hello/issues/1" => {
            let mut one = issue(1, "Parser fails on UTF-8", &["bug"], 3, false);
            one["body"] = json!(long_body());
            one["assignees"] = json!([user("octocat")]);
            ok(one)
        }
        "/repos/octo/hello/issues/3" => ok(issue(
            3,
            "Crash on empty input",
            &["bug", "good first issue"],
            0,
            false,
        )),
        "/repos/octo/hello/issues/1/comments" => {
            let all = [
                comment(11, "octocat", "I can reproduce this."),
                comment(12, "mona", "Same here, on 1.2.0."),
                comment(13, "hubot", "Fixed in #2."),
            ];
            let per_page = r
                .query
                .get("per_page")
                .and_then(|p| p.parse().ok())
                .unwrap_or(30usize);
            ok(json!(all.iter().take(per_page).collect::<Vec<_>>()))
        }
        "/repos/octo/hello/pulls" => ok(json!([
            pull(4, "Add a README", false),
            pull(2, "Fix the parser", false)
        ])),
        "/repos/octo/hello/pulls/2" => ok(pull(2, "Fix the parser", true)),
        "/repos/octo/hello/contents/docs/h%C3%A9llo%20w%231.md" => {
            ok(file("docs/héllo w#1.md", FILE_TEXT.as_bytes()))
        }
        "/repos/octo/hello/contents/docs" => ok(json!([
            content("docs/guide.md", "file", 120, json!({})),
            content("docs/images", "dir", 0, json!({})),
        ])),
        "/repos/octo/hello/contents/logo.png" => ok(file("logo.png", PNG_BYTES)),
        "/repos/octo/hello/contents/big.bin" => ok(content(
            "big.bin",
            "file",
            5_242_880,
            json!({ "content": "", "encoding": "none" }),
        )),
        "/repos/octo/hello/contents/huge.txt" => {
            // Under the API's 1 MB file limit, but its base64 answer is over the 1 MiB the
            // plugin host reads.
            ok(file("huge.txt", &vec![b'a'; 900_000]))
        }
        path if path.starts_with("/repos/octo/hello/contents/") => {
            Answer::json(404, not_found("repos/contents#get-repository-content"))
        }
        _ => Answer::json(404, not_found("repos/repos#get-a-repository")),
    }
}

// ---- Home Assistant ----

/// The long-lived access token the Home Assistant fake accepts.
pub(super) const HASS_TOKEN: &str = "hassLongLivedToken.eyJhbGciOiJIUzI1NiJ9.c2VjcmV0";

/// A state object as Home Assistant writes it.
fn hass_state(entity_id: &str, state: &str, attributes: Value) -> Value {
    json!({
        "entity_id": entity_id, "state": state, "attributes": attributes,
        "last_changed": "2026-12-01T08:00:00.000000+00:00",
        "last_updated": "2026-12-01T08:00:00.000000+00:00",
        "context": {"id": "01HZX", "parent_id": null, "user_id": null}
    })
}

/// Home Assistant's REST API as its documentation describes it: `GET /api/states`,
/// `GET /api/states/<entity_id>` (404 `{"message": "Entity not found."}`),
/// `GET /api/services`, `POST /api/services/<domain>/<service>` (the states that changed),
/// `POST /api/template` (rendered as text), and `401: Unauthorized` without the bearer
/// token. Three entities: a kitchen light, a kitchen temperature sensor, a hall switch.
pub(super) fn homeassistant(r: &Recorded) -> Answer {
    if r.header("authorization") != format!("Bearer {HASS_TOKEN}") {
        return Answer::text(401, "401: Unauthorized");
    }
    let states = [
        hass_state(
            "light.kitchen",
            "off",
            json!({"friendly_name": "Kitchen light", "supported_color_modes": ["brightness"]}),
        ),
        hass_state(
            "sensor.kitchen_temperature",
            "21.5",
            json!({"friendly_name": "Kitchen temperature", "unit_of_measurement": "°C"}),
        ),
        hass_state("switch.hall", "on", json!({"friendly_name": "Hall switch"})),
    ];
    let path = r.path.as_str();
    match (r.method.as_str(), path) {
        ("GET", "/api/states") => Answer::json(200, Value::Array(states.to_vec())),
        ("GET", p) if p.starts_with("/api/states/") => {
            let id = &p["/api/states/".len()..];
            match states.iter().find(|s| s["entity_id"] == id) {
                Some(s) => Answer::json(200, s.clone()),
                None => Answer::json(404, json!({"message": "Entity not found."})),
            }
        }
        ("GET", "/api/services") => Answer::json(
            200,
            json!([
                {"domain": "light", "services": {"turn_on": {"name": "Turn on"}, "turn_off": {"name": "Turn off"}, "toggle": {}}},
                {"domain": "switch", "services": {"turn_on": {}, "turn_off": {}, "toggle": {}}},
                {"domain": "homeassistant", "services": {"restart": {}}}
            ]),
        ),
        ("POST", p) if p.starts_with("/api/services/") => {
            let body = r.json();
            let id = body["entity_id"].as_str().unwrap_or_default();
            let new_state = if p.ends_with("/turn_off") {
                "off"
            } else {
                "on"
            };
            let attributes = match body.get("brightness_pct") {
                Some(b) => {
                    json!({"friendly_name": "Kitchen light", "brightness": (b.as_f64().unwrap_or(0.0) * 2.55).round()})
                }
                None => json!({}),
            };
            Answer::json(200, json!([hass_state(id, new_state, attributes)]))
        }
        ("POST", "/api/template") => {
            let template = r.json()["template"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            if template.contains("area_entities(\"Kitchen\")") {
                Answer::text(200, r#"["light.kitchen", "sensor.kitchen_temperature"]"#)
            } else if template.contains("area_entities(") {
                Answer::text(200, "[]")
            } else if template.contains("areas()") {
                Answer::text(200, r#"["Kitchen", "Hallway"]"#)
            } else {
                Answer::json(400, json!({"message": "Error rendering template"}))
            }
        }
        _ => Answer::json(404, json!({"message": "Not Found"})),
    }
}
