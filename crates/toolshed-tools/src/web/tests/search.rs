//! `web_search` and `firecrawl_scrape` against loopback servers answering in each
//! provider's real response format.

use serde_json::{Value, json};
use toolshed_core::{ErrorKind, ToolError, ToolOutput};

use super::support::{LoopbackClient, Reply, Seen, Server, call, call_with};
use crate::web::WebEnv;

/// Runs `web_search` with `args` against a server answering `answer`, with `env` pointing at
/// it (`{base}` in values replaced by the server's URL). Returns the output and the one
/// request the server saw.
async fn search(
    env: &[(&str, &str)],
    args: Value,
    answer: Value,
) -> (Result<ToolOutput, ToolError>, Seen) {
    let body = answer.to_string();
    let server = Server::start(move |_| Reply::new(200, "application/json", body.clone())).await;
    let base = server.url("");
    let env = WebEnv::from_pairs(env.iter().map(|(k, v)| (*k, v.replace("{base}", &base))));
    // No allowlist: only the provider host the tool opens for the call is reachable.
    let client = LoopbackClient::strict();
    let out = call(&client, env, "web_search", args).await;
    let seen = server.seen();
    assert_eq!(seen.len(), 1, "one request: {seen:?}");
    (out, seen[0].clone())
}

/// The results of a successful search, after checking the structured output against the
/// tool's output schema.
fn results(out: &ToolOutput) -> Vec<Value> {
    assert!(!out.is_error, "{}", out.text_joined());
    let plugin = crate::web::plugin(&toolshed_ops::Services::new(toolshed_ops::Ops::memory()));
    let tool = plugin
        .tools()
        .into_iter()
        .find(|t| t.spec().name == "web_search")
        .unwrap();
    let schema = tool.spec().output_schema.clone().unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(
        validator.is_valid(out.structured.as_ref().unwrap()),
        "{:?}",
        out.structured
    );
    out.structured.as_ref().unwrap()["results"]
        .as_array()
        .unwrap()
        .clone()
}

#[tokio::test]
async fn searxng() {
    let answer = json!({
        "query": "rust lifetimes",
        "number_of_results": 0,
        "results": [
            {"url": "https://doc.example.org/lifetimes", "title": "Lifetimes - The Book",
             "content": "Validating references with lifetimes &amp; more", "engine": "duckduckgo",
             "parsed_url": ["https", "doc.example.org", "/lifetimes", "", "", ""],
             "engines": ["duckduckgo"], "positions": [1], "score": 1.0, "category": "general",
             "publishedDate": null},
            {"url": "https://blog.example.com/x", "title": "Blog", "content": "A post",
             "publishedDate": "2025-12-01T00:00:00", "engine": "bing"},
            {"url": "https://third.example.com/", "title": "Third", "content": "Cut by count"}
        ],
        "answers": [], "corrections": [], "infoboxes": [], "suggestions": [], "unresponsive_engines": []
    });
    let (out, seen) = search(
        &[("SEARXNG_URL", "{base}/searx/")],
        json!({"query": "rust lifetimes", "count": 2}),
        answer,
    )
    .await;
    assert_eq!(seen.method, "GET");
    assert_eq!(seen.path(), "/searx/search");
    assert!(seen.target.contains("q=rust+lifetimes"), "{}", seen.target);
    assert!(seen.target.contains("format=json"), "{}", seen.target);
    let out = out.unwrap();
    let r = results(&out);
    assert_eq!(
        r,
        vec![
            json!({"title": "Lifetimes - The Book", "url": "https://doc.example.org/lifetimes",
                   "snippet": "Validating references with lifetimes & more"}),
            json!({"title": "Blog", "url": "https://blog.example.com/x", "snippet": "A post",
                   "date": "2025-12-01T00:00:00"}),
        ]
    );
    assert_eq!(out.structured.as_ref().unwrap()["provider"], "searxng");
    let text = out.text_joined();
    assert!(
        text.contains(
            "1. Lifetimes - The Book\n   https://doc.example.org/lifetimes\n   Validating"
        ),
        "{text}"
    );
    // Only the configured host is reachable for the call.
    // (`search` uses a client with no allowlist, so the request reached the loopback server
    // only because the tool opened exactly that host for it.)
}

#[tokio::test]
async fn brave() {
    let answer = json!({
        "query": {"original": "toolshed", "more_results_available": true},
        "type": "search",
        "web": {
            "type": "search",
            "results": [
                {"title": "Toolshed <strong>docs</strong>", "url": "https://toolshed.example/docs",
                 "is_source_local": false, "is_source_both": false,
                 "description": "The <strong>toolshed</strong> host for AI agents.",
                 "page_age": "2026-02-01T10:00:00", "age": "February 1, 2026",
                 "profile": {"name": "Toolshed"}, "language": "en", "family_friendly": true},
                {"title": "Other", "url": "https://other.example/", "description": "Other page"}
            ],
            "family_friendly": true
        },
        "mixed": {"type": "mixed", "main": []}
    });
    let (out, seen) = search(
        &[
            ("BRAVE_API_KEY", "brave-secret"),
            ("BRAVE_BASE_URL", "{base}"),
        ],
        json!({"query": "toolshed", "count": 7}),
        answer,
    )
    .await;
    assert_eq!(seen.method, "GET");
    assert_eq!(seen.path(), "/res/v1/web/search");
    assert!(
        seen.target.contains("q=toolshed") && seen.target.contains("count=7"),
        "{}",
        seen.target
    );
    assert_eq!(seen.header("x-subscription-token"), Some("brave-secret"));
    assert_eq!(seen.header("accept"), Some("application/json"));
    let r = results(&out.unwrap());
    assert_eq!(
        r[0],
        json!({"title": "Toolshed docs", "url": "https://toolshed.example/docs",
               "snippet": "The toolshed host for AI agents.", "date": "2026-02-01T10:00:00"})
    );
    assert_eq!(r.len(), 2);
}

#[tokio::test]
async fn tavily() {
    let answer = json!({
        "query": "who makes toolshed",
        "follow_up_questions": null,
        "answer": null,
        "images": [],
        "results": [
            {"title": "About", "url": "https://toolshed.example/about",
             "content": "Toolshed is made by a small team.", "score": 0.91,
             "raw_content": null, "published_date": "2026-03-03"}
        ],
        "response_time": 1.2
    });
    let (out, seen) = search(
        &[
            ("TAVILY_API_KEY", "tvly-secret"),
            ("TAVILY_BASE_URL", "{base}"),
        ],
        json!({"query": "who makes toolshed", "provider": "tavily"}),
        answer,
    )
    .await;
    assert_eq!(seen.method, "POST");
    assert_eq!(seen.path(), "/search");
    assert_eq!(seen.header("authorization"), Some("Bearer tvly-secret"));
    assert_eq!(seen.header("content-type"), Some("application/json"));
    assert_eq!(
        seen.json(),
        json!({"query": "who makes toolshed", "max_results": 5})
    );
    assert_eq!(
        results(&out.unwrap()),
        vec![
            json!({"title": "About", "url": "https://toolshed.example/about",
                    "snippet": "Toolshed is made by a small team.", "date": "2026-03-03"})
        ]
    );
}

#[tokio::test]
async fn exa() {
    let answer = json!({
        "requestId": "b5947044c4b78efa9552a7c89b306d95",
        "autopromptString": "toolshed",
        "resolvedSearchType": "neural",
        "results": [
            {"title": "Toolshed paper", "url": "https://arxiv.example/abs/1",
             "publishedDate": "2025-11-20T00:00:00.000Z", "author": "A. Example",
             "id": "https://arxiv.example/abs/1", "text": "We present toolshed,\n a host."},
            {"title": null, "url": "https://untitled.example/", "id": "x"}
        ],
        "costDollars": {"total": 0.005}
    });
    let (out, seen) = search(
        &[("EXA_API_KEY", "exa-secret"), ("EXA_BASE_URL", "{base}")],
        json!({"query": "toolshed", "count": 3, "provider": "exa"}),
        answer,
    )
    .await;
    assert_eq!(seen.method, "POST");
    assert_eq!(seen.path(), "/search");
    assert_eq!(seen.header("x-api-key"), Some("exa-secret"));
    let body = seen.json();
    assert_eq!(body["query"], "toolshed");
    assert_eq!(body["numResults"], 3);
    assert_eq!(
        results(&out.unwrap()),
        vec![
            json!({"title": "Toolshed paper", "url": "https://arxiv.example/abs/1",
                   "snippet": "We present toolshed, a host.", "date": "2025-11-20T00:00:00.000Z"}),
            json!({"title": "https://untitled.example/", "url": "https://untitled.example/", "snippet": ""}),
        ]
    );
}

#[tokio::test]
async fn firecrawl_search() {
    let answer = json!({
        "success": true,
        "data": [
            {"title": "Firecrawl result", "url": "https://fc.example/page",
             "description": "A page found by Firecrawl.", "position": 1}
        ],
        "warning": null
    });
    let (out, seen) = search(
        &[
            ("FIRECRAWL_API_KEY", "fc-secret"),
            ("FIRECRAWL_BASE_URL", "{base}"),
        ],
        json!({"query": "firecrawl", "count": 4}),
        answer,
    )
    .await;
    assert_eq!(seen.method, "POST");
    assert_eq!(seen.path(), "/v1/search");
    assert_eq!(seen.header("authorization"), Some("Bearer fc-secret"));
    assert_eq!(seen.json(), json!({"query": "firecrawl", "limit": 4}));
    assert_eq!(
        results(&out.unwrap()),
        vec![
            json!({"title": "Firecrawl result", "url": "https://fc.example/page",
                    "snippet": "A page found by Firecrawl."})
        ]
    );
}

#[tokio::test]
async fn firecrawl_scrape() {
    let answer = json!({
        "success": true,
        "data": {
            "markdown": "# Scraped\n\nRendered content.",
            "metadata": {"title": "Scraped page", "sourceURL": "https://fc.example/page",
                         "statusCode": 200, "language": "en"}
        }
    });
    let body = answer.to_string();
    let server = Server::start(move |_| Reply::new(200, "application/json", body.clone())).await;
    let env = WebEnv::from_pairs([
        ("FIRECRAWL_API_KEY", "fc-secret".to_string()),
        ("FIRECRAWL_BASE_URL", server.url("")),
    ]);
    let client = LoopbackClient::new();
    let out = call(
        &client,
        env,
        "firecrawl_scrape",
        json!({"url": "https://fc.example/page"}),
    )
    .await
    .unwrap();
    let seen = &server.seen()[0];
    assert_eq!((seen.method.as_str(), seen.path()), ("POST", "/v1/scrape"));
    assert_eq!(seen.header("authorization"), Some("Bearer fc-secret"));
    assert_eq!(
        seen.json(),
        json!({"url": "https://fc.example/page", "formats": ["markdown"]})
    );
    let text = out.text_joined();
    assert!(
        text.starts_with(
            "URL: https://fc.example/page\nStatus: 200\nTitle: Scraped page\n\n# Scraped"
        ),
        "{text}"
    );

    let e = call(
        &client,
        WebEnv::default(),
        "firecrawl_scrape",
        json!({"url": "https://x.example/"}),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&e, ToolError::Unconfigured { variables, .. } if variables == &["FIRECRAWL_API_KEY"]),
        "{e:?}"
    );
}

#[tokio::test]
async fn the_first_configured_provider_is_used() {
    // Brave and Exa configured: Brave comes first in the fixed order.
    let brave = json!({"web": {"results": [{"title": "B", "url": "https://b.example/", "description": "b"}]}});
    let (out, seen) = search(
        &[
            ("EXA_API_KEY", "exa-secret"),
            ("EXA_BASE_URL", "{base}"),
            ("BRAVE_API_KEY", "brave-secret"),
            ("BRAVE_BASE_URL", "{base}"),
        ],
        json!({"query": "q"}),
        brave,
    )
    .await;
    assert_eq!(seen.path(), "/res/v1/web/search");
    assert_eq!(out.unwrap().structured.unwrap()["provider"], "brave");
}

#[tokio::test]
async fn with_no_provider_configured_the_answer_names_the_variables() {
    let client = LoopbackClient::new();
    // Empty values count as unset.
    let env = WebEnv::from_pairs([("BRAVE_API_KEY", "  ")]);
    let e = call(&client, env, "web_search", json!({"query": "anything"}))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unconfigured);
    let ToolError::Unconfigured { message, variables } = &e else {
        unreachable!()
    };
    let all = [
        "SEARXNG_URL",
        "BRAVE_API_KEY",
        "TAVILY_API_KEY",
        "EXA_API_KEY",
        "FIRECRAWL_API_KEY",
        "PERPLEXITY_API_KEY",
        "DEEPSEEK_API_KEY",
    ];
    assert_eq!(variables, &all);
    for var in all {
        assert!(message.contains(var), "{message}");
    }

    // A provider asked for by name but not configured names its own variable.
    let env = WebEnv::from_pairs([("BRAVE_API_KEY", "k")]);
    let e = call(
        &client,
        env,
        "web_search",
        json!({"query": "x", "provider": "tavily"}),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&e, ToolError::Unconfigured { variables, .. } if variables == &["TAVILY_API_KEY"]),
        "{e:?}"
    );
}

#[tokio::test]
async fn a_refused_key_names_the_variable_and_never_the_key() {
    let server =
        Server::start(|_| Reply::new(401, "application/json", r#"{"error": "invalid token"}"#))
            .await;
    let env = WebEnv::from_pairs([
        ("TAVILY_API_KEY", "tvly-very-secret".to_string()),
        ("TAVILY_BASE_URL", server.url("")),
    ]);
    let e = call(
        &LoopbackClient::new(),
        env,
        "web_search",
        json!({"query": "x"}),
    )
    .await
    .unwrap_err();
    let message = e.to_string();
    assert_eq!(e.kind(), ErrorKind::Failed);
    assert!(
        message.contains("HTTP 401") && message.contains("TAVILY_API_KEY"),
        "{message}"
    );
    assert!(!message.contains("tvly-very-secret"), "{message}");
}

#[test]
fn the_provider_argument_offers_every_provider_in_the_order_tried() {
    let schema = crate::web::spec::web_search().input_schema;
    let mut ids: Vec<&str> = crate::web::providers::PROVIDERS
        .iter()
        .map(|(id, _)| *id)
        .collect();
    // The keyless fallback comes last.
    ids.push("duckduckgo");
    assert_eq!(schema["properties"]["provider"]["enum"], json!(ids));
}

/// A results page as DuckDuckGo's HTML endpoint writes it (made here, not downloaded).
const DDG_PAGE: &str = r#"<!DOCTYPE html><html><head><title>tides at DuckDuckGo</title></head><body>
<div id="links" class="results">
 <div class="result results_links results_links_deep result--ad"><div class="result__body">
  <h2 class="result__title"><a class="result__a" href="https://duckduckgo.com/y.js?ad_domain=shop.example">Tide clocks on sale</a></h2>
  <a class="result__snippet" href="https://duckduckgo.com/y.js?ad_domain=shop.example">Buy now</a></div></div>
 <div class="result results_links results_links_deep web-result "><div class="links_main links_deep result__body">
  <h2 class="result__title"><a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Ftides.example%2Fguide&amp;rut=4f1">Tide tables, <b>explained</b></a></h2>
  <div class="result__extras"><span class="result__url">tides.example/guide</span></div>
  <a class="result__snippet" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Ftides.example%2Fguide">High water comes roughly <b>twice</b> a day.</a>
 </div></div>
 <div class="result results_links results_links_deep web-result "><div class="links_main links_deep result__body">
  <h2 class="result__title"><a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fharbour.example%2Fcharts%3Fsea%3Dnorth&amp;rut=9ab">Harbour charts</a></h2>
  <a class="result__snippet" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fharbour.example%2Fcharts">Read them before you sail.</a>
 </div></div>
</div></body></html>"#;

#[tokio::test]
async fn with_no_keyed_provider_duckduckgo_answers_best_effort() {
    let server = Server::start(|_| Reply::new(200, "text/html; charset=utf-8", DDG_PAGE)).await;
    let env = WebEnv::from_pairs([("DUCKDUCKGO_BASE_URL", server.url(""))]);
    let on = crate::web::Settings {
        keyless_fallback: true,
    };
    let client = LoopbackClient::strict();
    let out = call_with(
        &client,
        env,
        on,
        "web_search",
        json!({"query": "tide tables", "count": 5}),
    )
    .await
    .unwrap();
    let found = results(&out);
    assert_eq!(
        found,
        vec![
            json!({"title": "Tide tables, explained", "url": "https://tides.example/guide",
                   "snippet": "High water comes roughly twice a day."}),
            json!({"title": "Harbour charts", "url": "https://harbour.example/charts?sea=north",
                   "snippet": "Read them before you sail."}),
        ]
    );
    assert!(
        out.text_joined().contains("keyless and best effort"),
        "{}",
        out.text_joined()
    );
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, "GET");
    assert_eq!(seen[0].target, "/html/?q=tide+tables");
    assert!(seen[0].header("user-agent").unwrap().contains("toolshed"));
}

#[tokio::test]
async fn a_duckduckgo_bot_check_says_to_configure_a_keyed_provider() {
    let server = Server::start(|_| {
        Reply::new(
            202,
            "text/html",
            r#"<html><body><div class="anomaly-modal__title">Unfortunately, bots use DuckDuckGo too.</div></body></html>"#,
        )
    })
    .await;
    let env = WebEnv::from_pairs([("DUCKDUCKGO_BASE_URL", server.url(""))]);
    let on = crate::web::Settings {
        keyless_fallback: true,
    };
    let e = call_with(
        &LoopbackClient::strict(),
        env,
        on,
        "web_search",
        json!({"query": "x"}),
    )
    .await
    .unwrap_err();
    assert!(
        e.to_string().contains("bot check") && e.to_string().contains("SEARXNG_URL"),
        "{e}"
    );
}
