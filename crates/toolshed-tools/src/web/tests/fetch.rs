//! `web_fetch` end to end: article extraction, formats, pagination, redirects, errors.

use serde_json::json;
use toolshed_core::{ErrorKind, ToolError, ToolOutput};

use super::support::{LoopbackClient, Reply, Server, fetch};

const ARTICLE: &str = include_str!("article.html");

async fn article_server() -> Server {
    Server::start(|seen| match seen.path() {
        "/post" => Reply::new(200, "text/html; charset=utf-8", ARTICLE),
        _ => Reply::new(404, "text/html", "<h1>Not here</h1>"),
    })
    .await
}

fn text(out: &ToolOutput) -> String {
    assert!(!out.is_error, "{}", out.text_joined());
    out.text_joined()
}

#[tokio::test]
async fn an_article_page_becomes_clean_markdown_of_the_article() {
    let server = article_server().await;
    let client = LoopbackClient::new();
    let out = fetch(&client, json!({"url": server.url("/post")}))
        .await
        .unwrap();
    let md = text(&out);

    // The header.
    assert!(
        md.starts_with(&format!("URL: {}\n", server.url("/post"))),
        "{md}"
    );
    assert!(md.contains("Status: 200 OK\n"), "{md}");
    assert!(
        md.contains("Content-Type: text/html; charset=utf-8\n"),
        "{md}"
    );
    assert!(
        md.contains("Title: Understanding Rust Lifetimes – The Example Blog\n"),
        "{md}"
    );

    // The article, as Markdown.
    for expected in [
        "# Understanding Rust Lifetimes",
        "## The borrow checker",
        "### Elision rules",
        "Lifetimes are how the Rust compiler makes sure that *references* never outlive the data they point to.",
        "**three rules**",
        "1. Each elided input lifetime becomes a distinct parameter.",
        "3. If one input is `&self`, its lifetime goes to the outputs.",
        "```rust\nfn longest<'a>(x: &'a str, y: &'a str) -> &'a str {\n    if x.len() > y.len() { x } else { y }\n}\n```",
        "> A lifetime annotation does not change how long a value lives.",
        "| Rule | Applies to |\n| --- | --- |\n| First | Inputs |",
        "once the rules click, most annotations write themselves.",
    ] {
        assert!(md.contains(expected), "missing {expected:?} in:\n{md}");
    }
    // Links are absolute.
    assert!(
        md.contains(&format!(
            "[borrowing guide]({})",
            server.url("/docs/borrowing.html")
        )),
        "{md}"
    );
    assert!(
        md.contains("[chapter 10 of the book](https://doc.example.org/book/ch10-03.html)"),
        "{md}"
    );

    // And little else: navigation, ads, cookie banner, comments, sidebar, footer, scripts.
    for absent in [
        "Archive",
        "About us",
        "ADVERTISEMENT",
        "SuperWidget",
        "cookies",
        "Accept all",
        "Great post",
        "variance",
        "Popular posts",
        "Subscribe",
        "All rights reserved",
        "Privacy policy",
        "Share on Social",
        "Related posts",
        "dataLayer",
        "not a tag",
        "font-family",
    ] {
        assert!(!md.contains(absent), "{absent:?} leaked into:\n{md}");
    }
    // The tool asked for the public-only policy.
}

#[tokio::test]
async fn text_html_and_raw_formats() {
    let server = article_server().await;
    let client = LoopbackClient::new();
    let url = server.url("/post");

    let plain = text(
        &fetch(&client, json!({"url": url, "format": "text"}))
            .await
            .unwrap(),
    );
    assert!(
        plain.contains("Understanding Rust Lifetimes\n\nBy Ada Example"),
        "{plain}"
    );
    assert!(
        plain.contains("makes sure that references never outlive"),
        "{plain}"
    );
    assert!(plain.contains("1. Each elided input"), "{plain}");
    assert!(
        !plain.contains("**") && !plain.contains("](") && !plain.contains("```"),
        "{plain}"
    );
    assert!(!plain.contains("Popular posts"), "{plain}");

    let html = text(
        &fetch(&client, json!({"url": url, "format": "html"}))
            .await
            .unwrap(),
    );
    assert!(html.contains("<h2>The borrow checker</h2>"), "{html}");
    assert!(
        html.contains(&format!(
            "<a href=\"{}\">borrowing guide</a>",
            server.url("/docs/borrowing.html")
        )),
        "{html}"
    );
    assert!(html.contains("<code class=\"language-rust\">"), "{html}");
    assert!(
        !html.contains("<script") && !html.contains("SuperWidget"),
        "{html}"
    );
    assert!(
        !html.contains("class=\"post\""),
        "attributes are reduced: {html}"
    );

    let raw = text(
        &fetch(
            &client,
            json!({"url": url, "format": "raw", "max_length": 30000}),
        )
        .await
        .unwrap(),
    );
    assert!(
        raw.contains("<!DOCTYPE html>") && raw.contains("Popular posts"),
        "{raw}"
    );
    assert!(
        raw.contains("Title: Understanding Rust Lifetimes – The Example Blog\n"),
        "{raw}"
    );
}

#[tokio::test]
async fn long_content_is_paginated_on_character_boundaries() {
    // 30,000 characters of which many are two bytes wide.
    let body: String = (0..10_000)
        .map(|i| ["a", "é", "中"][i % 3])
        .collect::<String>()
        + &"z".repeat(20_000);
    let server =
        Server::start(move |_| Reply::new(200, "text/plain; charset=utf-8", body.clone())).await;
    let client = LoopbackClient::new();
    let url = server.url("/long.txt");

    let first = text(&fetch(&client, json!({"url": url})).await.unwrap());
    assert!(
        first.contains("Showing: characters 0-20000 of 30000\n"),
        "{}",
        &first[..300]
    );
    assert!(first.ends_with("\n\ncontent truncated — call again with start_index=20000"));
    let content = first.split_once("\n\n").unwrap().1;
    assert!(content.starts_with("aé中aé中"));

    let second = text(
        &fetch(&client, json!({"url": url, "start_index": 20000}))
            .await
            .unwrap(),
    );
    assert!(
        second.contains("Showing: characters 20000-30000 of 30000\n"),
        "{}",
        &second[..300]
    );
    assert!(!second.contains("content truncated"));
    assert!(second.ends_with(&"z".repeat(10_000)));

    let small = text(
        &fetch(
            &client,
            json!({"url": url, "start_index": 2, "max_length": 4}),
        )
        .await
        .unwrap(),
    );
    assert!(
        small.ends_with("\n\n中aé中\n\ncontent truncated — call again with start_index=6"),
        "{small}"
    );

    let past = fetch(&client, json!({"url": url, "start_index": 30000}))
        .await
        .unwrap_err();
    assert_eq!(past.kind(), ErrorKind::InvalidArguments);
    assert!(past.to_string().contains("30000 characters long"), "{past}");
}

#[tokio::test]
async fn json_and_plain_text_pass_through_as_they_are() {
    let json_body = r#"{"name": "toolshed", "tags": ["<b>not html</b>"], "n": 1}"#;
    let server = Server::start(move |seen| match seen.path() {
        "/api" => Reply::new(200, "application/json", json_body),
        _ => Reply::new(200, "text/plain", "line one\n  <p>line two</p>\n"),
    })
    .await;
    let client = LoopbackClient::new();
    let out = text(
        &fetch(&client, json!({"url": server.url("/api")}))
            .await
            .unwrap(),
    );
    assert!(out.contains("Content-Type: application/json\n"), "{out}");
    assert!(!out.contains("Title:"), "{out}");
    assert!(out.ends_with(&format!("\n\n{json_body}")), "{out}");

    let out = text(
        &fetch(&client, json!({"url": server.url("/notes.txt")}))
            .await
            .unwrap(),
    );
    assert!(
        out.ends_with("\n\nline one\n  <p>line two</p>\n"),
        "{out:?}"
    );
}

#[tokio::test]
async fn redirects_are_followed_and_each_hop_goes_through_the_client() {
    let server = Server::start(|seen| match seen.path() {
        "/old" => Reply::redirect(301, "/middle"),
        "/middle" => Reply::redirect(302, "/final?x=1"),
        "/final" => Reply::new(200, "text/html", "<html><head><title>Final</title></head><body><p>Arrived at the final page.</p></body></html>"),
        "/loop" => Reply::redirect(302, "/loop"),
        _ => Reply::new(404, "text/plain", "no"),
    })
    .await;
    let client = LoopbackClient::new();
    let out = text(
        &fetch(&client, json!({"url": server.url("/old")}))
            .await
            .unwrap(),
    );
    assert!(
        out.starts_with(&format!("URL: {}\n", server.url("/final?x=1"))),
        "{out}"
    );
    assert!(
        out.contains(&format!("Redirected from: {}\n", server.url("/old"))),
        "{out}"
    );
    assert!(
        out.contains("Title: Final\n") && out.contains("Arrived at the final page."),
        "{out}"
    );
    // Three requests, each sent through the client (which checks every hop).
    assert_eq!(server.seen().len(), 3);
    let paths: Vec<String> = server.seen().iter().map(|s| s.target.clone()).collect();
    assert_eq!(paths, ["/old", "/middle", "/final?x=1"]);

    let e = fetch(&client, json!({"url": server.url("/loop")}))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Failed);
    assert!(e.to_string().contains("after 5 redirects"), "{e}");
    assert_eq!(
        server.seen().len(),
        3 + 6,
        "the first request and 5 redirects"
    );
}

#[tokio::test]
async fn http_errors_are_error_results_naming_the_status() {
    let server = article_server().await;
    let client = LoopbackClient::new();
    let out = fetch(&client, json!({"url": server.url("/missing")}))
        .await
        .unwrap();
    assert!(out.is_error);
    let text = out.text_joined();
    assert!(text.starts_with("HTTP 404 Not Found from "), "{text}");
    assert!(text.contains("Not here"), "the error page is shown: {text}");
}

#[tokio::test]
async fn binary_content_is_described_not_returned() {
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    png.resize(4096, 7);
    let server = Server::start(move |seen| match seen.path() {
        "/logo.png" => Reply::new(200, "image/png", png.clone()),
        _ => Reply::new(200, "application/octet-stream", vec![0u8, 1, 2, 3]),
    })
    .await;
    let client = LoopbackClient::new();
    let out = text(
        &fetch(&client, json!({"url": server.url("/logo.png")}))
            .await
            .unwrap(),
    );
    assert!(
        out.contains("Binary content (image/png), 4096 bytes"),
        "{out}"
    );
    assert!(!out.contains("PNG"), "{out}");
    let out = text(
        &fetch(
            &client,
            json!({"url": server.url("/blob"), "format": "raw"}),
        )
        .await
        .unwrap(),
    );
    assert!(
        out.contains("Binary content (application/octet-stream), 4 bytes"),
        "{out}"
    );
}

#[test]
fn the_schema_offers_every_argument_in_order() {
    let schema = crate::web::spec::web_fetch().input_schema;
    let names: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
    assert_eq!(
        names,
        ["url", "format", "start_index", "max_length"],
        "{schema}"
    );
    assert_eq!(
        schema["properties"]["format"],
        json!({
            "type": "string",
            "enum": ["markdown", "text", "html", "raw"],
            "description": "raw: the body as received",
            "default": "markdown"
        })
    );
    assert_eq!(schema["required"], json!(["url"]));
}

#[tokio::test]
async fn non_http_urls_are_refused_before_any_request() {
    let client = LoopbackClient::new();
    for url in ["file:///etc/passwd", "ftp://example.com/x", "not a url"] {
        let e = fetch(&client, json!({"url": url})).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArguments, "{url}: {e}");
    }
}

#[tokio::test]
async fn a_redirect_to_a_refused_host_is_refused_at_that_hop() {
    let server =
        Server::start(|_| Reply::redirect(302, "http://169.254.169.254/latest/meta-data/")).await;
    let client = LoopbackClient::new();
    let e = fetch(&client, json!({"url": server.url("/go")}))
        .await
        .unwrap_err();
    let ToolError::Denied { message, .. } = &e else {
        panic!("{e:?}")
    };
    assert!(
        // Both URLs up to their hosts only: paths and queries may carry tokens.
        message.contains(&format!(
            "`{}/…` redirected to `http://169.254.169.254/…`, which is refused",
            server.url("")
        )),
        "{message}"
    );
    assert_eq!(server.seen().len(), 1, "the refused hop was never dialled");
}

#[tokio::test]
async fn web_fetch_sends_under_the_public_policy() {
    // A client with no allowlist: the public policy refuses the loopback server before
    // connecting, so the server never sees a request.
    let server = article_server().await;
    let client = LoopbackClient::strict();
    let e = fetch(&client, json!({"url": server.url("/post")}))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Denied, "{e}");
    assert!(server.seen().is_empty());
}

#[tokio::test]
async fn latin_1_pages_are_decoded() {
    let server = Server::start(|seen| match seen.path() {
        "/header" => Reply::new(
            200,
            "text/html; charset=ISO-8859-1",
            b"<title>Caf\xe9</title><p>Cr\xe8me br\xfbl\xe9e \x96 \x80 5</p>".to_vec(),
        ),
        _ => Reply::new(
            200,
            "text/html",
            b"<meta charset=\"windows-1252\"><p>\x93quoted\x94 na\xefve</p>".to_vec(),
        ),
    })
    .await;
    let client = LoopbackClient::new();
    let out = text(
        &fetch(&client, json!({"url": server.url("/header")}))
            .await
            .unwrap(),
    );
    assert!(
        out.contains("Title: Café\n") && out.ends_with("Crème brûlée – € 5"),
        "{out}"
    );
    let out = text(
        &fetch(&client, json!({"url": server.url("/meta")}))
            .await
            .unwrap(),
    );
    assert!(out.ends_with("“quoted” naïve"), "{out}");
}
