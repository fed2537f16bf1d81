//! `toolshed.github`: lists, issues, pull requests and files read from a local stand-in
//! for the REST API; its error answers (404, 401, rate limits); the headers sent, the token
//! only when configured; names checked before any URL is built.

use serde_json::{Value, json};

use super::services::{self, GITHUB_TOKEN, Recorded, Service};
use super::*;

// ---- GitHub ----

async fn github_plugin(api: &Service, token: Option<&str>) -> Curated {
    let mut config = json!({ "api_url": api.origin() });
    if let Some(token) = token {
        config["token"] = json!(token);
    }
    Curated::start("github", config, api.grant()).await
}

fn assert_github_headers(r: &Recorded, token: Option<&str>) {
    assert_eq!(r.method, "GET");
    assert_eq!(r.header("accept"), "application/vnd.github+json");
    assert_eq!(r.header("x-github-api-version"), "2022-11-28");
    assert!(!r.header("user-agent").is_empty());
    match token {
        Some(token) => assert_eq!(r.header("authorization"), format!("Bearer {token}")),
        None => assert!(r.headers.get("authorization").is_none(), "{r:?}"),
    }
}

#[tokio::test]
async fn github_lists_issues_leaving_out_pull_requests_unless_asked() {
    let api = Service::start(services::github).await;
    let p = github_plugin(&api, None).await;
    let out = p
        .ok(
            "github_list_issues",
            json!({ "owner": "octo", "repo": "hello", "labels": ["bug", "good first issue"], "per_page": 3 }),
        )
        .await;
    let sent = api.take_one();
    assert_github_headers(&sent, None);
    assert_eq!(sent.path, "/repos/octo/hello/issues");
    assert_eq!(sent.query["state"], "open");
    assert_eq!(sent.query["per_page"], "3");
    assert_eq!(sent.query["page"], "1");
    assert_eq!(sent.query["labels"], "bug,good first issue");

    assert_eq!(out["repository"], "octo/hello");
    assert_eq!(out["count"], 2);
    assert_eq!(out["next_page"], 2);
    assert_eq!(out["pulls_left_out"], 1);
    assert!(out["note"].as_str().unwrap().contains("github_list_pulls"));
    assert_eq!(
        out["issues"][0],
        json!({
            "number": 3, "title": "Crash on empty input", "state": "open", "user": "mona",
            "labels": ["bug", "good first issue"], "comments": 0,
            "created_at": "2024-05-01T10:00:00Z", "updated_at": "2024-05-02T11:30:00Z",
            "html_url": "https://github.com/octo/hello/issues/3"
        })
    );
    assert_eq!(out["issues"][1]["number"], 1);

    let out = p
        .ok(
            "github_list_issues",
            json!({ "owner": "octo", "repo": "hello", "state": "all", "include_pulls": true }),
        )
        .await;
    let sent = api.take_one();
    assert_eq!(sent.query["state"], "all");
    assert_eq!(sent.query["per_page"], "30");
    assert!(!sent.query.contains_key("labels"));
    let numbers: Vec<&Value> = out["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["number"])
        .collect();
    assert_eq!(numbers, [&json!(3), &json!(2), &json!(1)]);
    assert_eq!(out["issues"][1]["pull_request"], true);
    assert!(out.get("pulls_left_out").is_none());

    let error = p
        .fail(
            "github_list_issues",
            json!({ "owner": "octo", "repo": "hello", "per_page": 500 }),
        )
        .await;
    assert!(error.contains("per_page is 500"), "{error}");
}

#[tokio::test]
async fn github_reads_an_issue_with_its_first_comments() {
    let api = Service::start(services::github).await;
    let p = github_plugin(&api, Some(GITHUB_TOKEN)).await;
    let out = p
        .ok(
            "github_get_issue",
            json!({ "owner": "octo", "repo": "hello", "number": 1, "include_comments": 2 }),
        )
        .await;
    let requests = api.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_github_headers(r, Some(GITHUB_TOKEN));
    }
    assert_eq!(requests[0].path, "/repos/octo/hello/issues/1");
    assert_eq!(requests[1].path, "/repos/octo/hello/issues/1/comments");
    assert_eq!(requests[1].query["per_page"], "2");

    let body: String = services::long_body().chars().take(6000).collect();
    let full = services::long_body().chars().count();
    assert_eq!(out["body"], body);
    assert_eq!(
        out["body_truncated"],
        format!("cut at 6000 of {full} characters; the rest is at html_url")
    );
    assert_eq!(out["assignees"], json!(["octocat"]));
    assert_eq!(out["comments"], 3);
    assert_eq!(
        out["first_comments"],
        json!([
            { "user": "octocat", "created_at": "2024-05-03T09:00:00Z",
              "html_url": "https://github.com/octo/hello/issues/1#issuecomment-11",
              "body": "I can reproduce this." },
            { "user": "mona", "created_at": "2024-05-04T09:00:00Z",
              "html_url": "https://github.com/octo/hello/issues/1#issuecomment-12",
              "body": "Same here, on 1.2.0." }
        ])
    );
    assert_eq!(
        out["comments_note"],
        "showing the first 2 of 3 comments; the rest are at html_url"
    );

    // No comments to fetch: one request, an empty list; none asked for: no list at all.
    let out = p
        .ok(
            "github_get_issue",
            json!({ "owner": "octo", "repo": "hello", "number": 3, "include_comments": 5 }),
        )
        .await;
    assert_eq!(api.requests().len(), 3);
    assert_eq!(out["first_comments"], json!([]));
    assert_eq!(out["body"], "Body of 3.");
    assert!(out.get("body_truncated").is_none());
    let out = p
        .ok(
            "github_get_issue",
            json!({ "owner": "octo", "repo": "hello", "number": 1 }),
        )
        .await;
    assert_eq!(api.requests().len(), 4);
    assert!(out.get("first_comments").is_none());
    assert_eq!(out["state_reason"], Value::Null);
}

#[tokio::test]
async fn github_lists_and_reads_pull_requests() {
    let api = Service::start(services::github).await;
    let p = github_plugin(&api, None).await;
    let out = p
        .ok(
            "github_list_pulls",
            json!({ "owner": "octo", "repo": "hello", "state": "all", "page": 1 }),
        )
        .await;
    let sent = api.take_one();
    assert_eq!(sent.path, "/repos/octo/hello/pulls");
    assert_eq!(sent.query["state"], "all");
    assert_eq!(out["count"], 2);
    assert_eq!(out["next_page"], Value::Null);
    assert_eq!(
        out["pulls"][0],
        json!({
            "number": 4, "title": "Add a README", "state": "open", "draft": true, "merged": false,
            "user": "hubot", "head": "fix-parser", "base": "main", "labels": ["fix"],
            "created_at": "2024-05-02T08:00:00Z", "updated_at": "2024-05-03T12:00:00Z",
            "html_url": "https://github.com/octo/hello/pull/4"
        })
    );
    assert_eq!(out["pulls"][1]["merged"], true);

    let out = p
        .ok(
            "github_get_pull",
            json!({ "owner": "octo", "repo": "hello", "number": 2 }),
        )
        .await;
    assert_eq!(api.take_one().path, "/repos/octo/hello/pulls/2");
    assert_eq!(
        out,
        json!({
            "number": 2, "title": "Fix the parser", "state": "closed", "merged": true,
            "merged_at": "2024-05-03T12:00:00Z", "draft": false, "user": "hubot",
            "head": { "ref": "fix-parser", "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e",
                      "repo": "hubot/hello" },
            "base": { "ref": "main", "sha": "9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b" },
            "labels": ["fix"], "changed_files": 5, "additions": 40, "deletions": 7,
            "commits": 3, "comments": 1, "review_comments": 2, "mergeable": null,
            "created_at": "2024-05-02T08:00:00Z", "updated_at": "2024-05-03T12:00:00Z",
            "closed_at": "2024-05-03T12:00:00Z",
            "html_url": "https://github.com/octo/hello/pull/2", "body": "Fixes #1."
        })
    );
}

#[tokio::test]
async fn github_reads_files_and_lists_directories() {
    let api = Service::start(services::github).await;
    let p = github_plugin(&api, None).await;

    // A text file: base64 with GitHub's line breaks, decoded as UTF-8; the path is
    // percent-encoded segment by segment.
    let out = p
        .ok(
            "github_get_file",
            json!({ "owner": "octo", "repo": "hello", "path": "/docs/héllo w#1.md", "ref": "main" }),
        )
        .await;
    let sent = api.take_one();
    assert_eq!(
        sent.path,
        "/repos/octo/hello/contents/docs/h%C3%A9llo%20w%231.md"
    );
    assert_eq!(sent.query["ref"], "main");
    assert_eq!(out["type"], "file");
    assert_eq!(out["text"], services::FILE_TEXT);
    assert_eq!(out["encoding"], "utf-8");
    assert_eq!(out["size"], services::FILE_TEXT.len());
    assert_eq!(out["ref"], "main");

    let out = p
        .ok(
            "github_get_file",
            json!({ "owner": "octo", "repo": "hello", "path": "docs" }),
        )
        .await;
    assert!(!api.take_one().query.contains_key("ref"));
    assert_eq!(
        out,
        json!({
            "type": "dir", "path": "docs", "ref": null, "count": 2,
            "entries": [
                { "name": "guide.md", "path": "docs/guide.md", "type": "file", "size": 120 },
                { "name": "images", "path": "docs/images", "type": "dir", "size": 0 }
            ]
        })
    );

    // Over the API's file limit: GitHub sends no content; the answer says so.
    let out = p
        .ok(
            "github_get_file",
            json!({ "owner": "octo", "repo": "hello", "path": "big.bin" }),
        )
        .await;
    assert_eq!(out["too_large"], true);
    assert_eq!(out["size"], 5_242_880);
    assert_eq!(
        out["download_url"],
        "https://raw.githubusercontent.com/octo/hello/main/big.bin"
    );
    assert!(out["note"].as_str().unwrap().contains("download_url"));

    // An answer past what the host reads (1 MiB) is reported the same way.
    let out = p
        .ok(
            "github_get_file",
            json!({ "owner": "octo", "repo": "hello", "path": "huge.txt" }),
        )
        .await;
    assert_eq!(out["too_large"], true);
    assert_eq!(out["size"], 900_000);
    assert_eq!(
        out["download_url"],
        "https://raw.githubusercontent.com/octo/hello/main/huge.txt"
    );

    // Binary content is not dumped as text.
    let out = p
        .ok(
            "github_get_file",
            json!({ "owner": "octo", "repo": "hello", "path": "logo.png" }),
        )
        .await;
    assert_eq!(out["binary"], true);
    assert!(out.get("text").is_none());
    assert_eq!(out["size"], services::PNG_BYTES.len());
    assert_eq!(api.requests().len(), 3);

    // `..` never reaches a URL, where it would climb to another endpoint.
    let error = p
        .fail(
            "github_get_file",
            json!({ "owner": "octo", "repo": "hello", "path": "docs/../../../users/x" }),
        )
        .await;
    assert!(error.contains("contains `.` or `..`"), "{error}");
    assert_eq!(api.requests().len(), 3);
}

#[tokio::test]
async fn github_explains_not_found_bad_tokens_and_rate_limits() {
    let api = Service::start(services::github).await;
    let anonymous = github_plugin(&api, None).await;
    let error = anonymous
        .fail(
            "github_get_issue",
            json!({ "owner": "octo", "repo": "private", "number": 1 }),
        )
        .await;
    assert!(
        error.contains("issue #1 in octo/private was not found (404), or it is private")
            && error.contains("no token is set")
            && error.contains("toolshed plugins config toolshed.github token -"),
        "{error}"
    );
    let with_token = github_plugin(&api, Some(GITHUB_TOKEN)).await;
    let error = with_token
        .fail(
            "github_get_pull",
            json!({ "owner": "octo", "repo": "private", "number": 1 }),
        )
        .await;
    assert!(
        error.contains("the configured token cannot see it"),
        "{error}"
    );

    let revoked = github_plugin(&api, Some("ghp_someoneElsesRevokedToken000000000")).await;
    let error = revoked
        .fail(
            "github_list_pulls",
            json!({ "owner": "octo", "repo": "hello" }),
        )
        .await;
    assert!(
        error.contains("GitHub rejected the token (401 Bad credentials)")
            && error.contains("token -"),
        "{error}"
    );

    let error = anonymous
        .fail(
            "github_list_issues",
            json!({ "owner": "octo", "repo": "rate-limited" }),
        )
        .await;
    assert!(
        error.contains("GitHub rate limit reached (60 requests an hour, none left)")
            && error.contains("resets at 2030-01-01T00:00:00Z")
            && error.contains("set a token")
            && error.contains("toolshed plugins config toolshed.github token -"),
        "{error}"
    );

    let error = with_token
        .fail(
            "github_list_issues",
            json!({ "owner": "octo", "repo": "rate-limited-soon" }),
        )
        .await;
    assert!(
        error.contains("5000 requests an hour")
            && error.contains("(in 30 minutes)")
            && error.contains("the configured token's limit is used up"),
        "{error}"
    );
}

#[tokio::test]
async fn github_sends_the_token_only_when_configured() {
    let api = Service::start(services::github).await;
    let args = json!({ "owner": "octo", "repo": "hello", "number": 2 });
    github_plugin(&api, None)
        .await
        .ok("github_get_pull", args.clone())
        .await;
    assert_github_headers(&api.take_one(), None);
    github_plugin(&api, Some(GITHUB_TOKEN))
        .await
        .ok("github_get_pull", args.clone())
        .await;
    assert_github_headers(&api.take_one(), Some(GITHUB_TOKEN));
    // A blank token counts as none.
    github_plugin(&api, Some("  "))
        .await
        .ok("github_get_pull", args)
        .await;
    assert_github_headers(&api.take_one(), None);
}

#[tokio::test]
async fn github_checks_names_before_building_urls_and_names_the_grant() {
    let api = Service::start(services::github).await;
    let p = github_plugin(&api, None).await;
    for (owner, repo, expected) in [
        ("octo/hello", "x", "owner `octo/hello` is not a GitHub user"),
        ("..", "x", "owner `..`"),
        ("octo", "..", "repo `..` is not a repository name"),
        ("octo", "a?b", "repo `a?b`"),
    ] {
        let error = p
            .fail("github_list_pulls", json!({ "owner": owner, "repo": repo }))
            .await;
        assert!(error.contains(expected), "{error}");
    }
    assert!(api.requests().is_empty());

    let ungranted = Curated::start("github", json!({ "api_url": api.origin() }), vec![]).await;
    let error = ungranted
        .fail(
            "github_list_pulls",
            json!({ "owner": "octo", "repo": "hello" }),
        )
        .await;
    assert!(
        error.contains("toolshed plugins grant toolshed.github http:127.0.0.1"),
        "{error}"
    );
    // By default the plugin talks to api.github.com, which `grant toolshed.github` grants.
    let default = Curated::start("github", json!({}), vec![]).await;
    let error = default
        .fail(
            "github_list_pulls",
            json!({ "owner": "octo", "repo": "hello" }),
        )
        .await;
    assert!(
        error.contains("toolshed plugins grant toolshed.github http:api.github.com"),
        "{error}"
    );
    assert!(api.requests().is_empty());
}
