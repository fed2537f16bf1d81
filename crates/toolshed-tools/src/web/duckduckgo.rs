//! The keyless fallback of `web_search`: DuckDuckGo's HTML results page, parsed.
//!
//! Best effort by nature: the page is made for browsers, its markup can change, and
//! DuckDuckGo answers a client that asks too often with a bot check. So requests are
//! spaced ([`MIN_SPACING`] apart in this process), a bot check or an unreadable page is an
//! error that says to configure a keyed provider, and results say they came from here.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;
use toolshed_core::ToolError;
use url::Url;

use super::html::dom::{Document, NodeId};
use super::providers::{
    MAX_SNIPPET_CHARS, ProviderRequest, SearchProvider, SearchResult, endpoint, shorten,
};

/// The provider's id.
pub(super) const ID: &str = "duckduckgo";

/// The variable that overrides its base URL (tests, a proxy).
pub(super) const BASE_VAR: &str = "DUCKDUCKGO_BASE_URL";

const DEFAULT_BASE: &str = "https://html.duckduckgo.com";

/// The least time between two requests from this process.
pub(super) const MIN_SPACING: Duration = Duration::from_millis(1500);

/// When the last request went out (or is booked to).
static NEXT_SLOT: Mutex<Option<Instant>> = Mutex::new(None);

/// How long to wait before the next request may go, booking its slot.
pub(super) fn wait_for_slot() -> Duration {
    let mut next = NEXT_SLOT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let now = Instant::now();
    let at = next.filter(|t| *t > now).unwrap_or(now);
    *next = Some(at + MIN_SPACING);
    at - now
}

/// DuckDuckGo's HTML endpoint.
pub(super) struct Duckduckgo {
    pub(super) base: String,
}

impl Duckduckgo {
    /// At `base` (the default unless [`BASE_VAR`] is set).
    pub(super) fn new(base: Option<&str>) -> Self {
        Self {
            base: base
                .unwrap_or(DEFAULT_BASE)
                .trim_end_matches('/')
                .to_string(),
        }
    }
}

impl SearchProvider for Duckduckgo {
    fn id(&self) -> &'static str {
        ID
    }

    fn credential_var(&self) -> &'static str {
        BASE_VAR
    }

    fn request(&self, query: &str, _count: usize) -> Result<ProviderRequest, ToolError> {
        let mut url = endpoint(&self.base, "/html/", "DuckDuckGo", BASE_VAR)?;
        url.query_pairs_mut().append_pair("q", query);
        Ok(ProviderRequest {
            method: "GET",
            url,
            headers: vec![
                (
                    "user-agent".into(),
                    concat!(
                        "Mozilla/5.0 (compatible; toolshed/",
                        env!("CARGO_PKG_VERSION"),
                        ")"
                    )
                    .into(),
                ),
                ("accept".into(), "text/html".into()),
            ],
            json: None,
        })
    }

    fn answers_html(&self) -> bool {
        true
    }

    fn parse(&self, answer: &Value) -> Vec<SearchResult> {
        parse_results(answer.as_str().unwrap_or_default())
    }
}

/// Whether the page is DuckDuckGo's bot check rather than results.
pub(super) fn is_bot_check(html: &str) -> bool {
    html.contains("anomaly-modal")
        || html.contains("challenge-form")
        || html.contains("/anomaly.js")
}

fn classes(doc: &Document, id: NodeId) -> Vec<&str> {
    doc.attr(id, "class")
        .map(|c| c.split_whitespace().collect())
        .unwrap_or_default()
}

fn has_class(doc: &Document, id: NodeId, class: &str) -> bool {
    classes(doc, id).contains(&class)
}

/// Every element below `id` (included), in document order.
fn elements(doc: &Document, id: NodeId) -> Vec<NodeId> {
    let mut out = Vec::new();
    let mut todo = vec![id];
    while let Some(n) = todo.pop() {
        if doc.name(n).is_some() {
            out.push(n);
            todo.extend(doc.children(n).iter().rev());
        }
    }
    out
}

/// The first element below `id` with class `class`.
fn first_with_class(doc: &Document, id: NodeId, class: &str) -> Option<NodeId> {
    elements(doc, id)
        .into_iter()
        .find(|&n| has_class(doc, n, class))
}

/// The results on a DuckDuckGo HTML page, ads left out. Each result is an element with
/// class `result` holding a `result__a` link (the title) and a `result__snippet`; the link
/// goes through `/l/?uddg=<target>`, which is unwrapped.
pub(super) fn parse_results(html: &str) -> Vec<SearchResult> {
    let doc = Document::parse(html);
    let mut found: Vec<SearchResult> = Vec::new();
    for container in elements(&doc, Document::ROOT) {
        let class = classes(&doc, container);
        if !class.contains(&"result") || class.iter().any(|c| c.ends_with("--ad")) {
            continue;
        }
        let Some(link) = first_with_class(&doc, container, "result__a") else {
            continue;
        };
        let Some(url) = doc.attr(link, "href").and_then(target_url) else {
            continue;
        };
        if found.iter().any(|r| r.url == url) {
            continue;
        }
        let title = doc.text(link);
        let snippet = first_with_class(&doc, container, "result__snippet")
            .map(|s| shorten(&doc.text(s), MAX_SNIPPET_CHARS))
            .unwrap_or_default();
        found.push(SearchResult {
            title: if title.is_empty() { url.clone() } else { title },
            url,
            snippet,
            date: None,
        });
    }
    found
}

/// The page a result link leads to: the `uddg` parameter of a DuckDuckGo redirect, or the
/// link itself; only http(s) URLs.
fn target_url(href: &str) -> Option<String> {
    let absolute = if href.starts_with("//") {
        format!("https:{href}")
    } else if href.starts_with('/') {
        format!("https://duckduckgo.com{href}")
    } else {
        href.to_string()
    };
    let url = Url::parse(&absolute).ok()?;
    let target = if url.path().starts_with("/l/") {
        let (_, value) = url.query_pairs().find(|(k, _)| k == "uddg")?;
        Url::parse(&value).ok()?
    } else {
        url
    };
    if !matches!(target.scheme(), "http" | "https") {
        return None;
    }
    // Clicks on DuckDuckGo's own pages (ads, settings) are not results.
    if target
        .host_str()
        .is_some_and(|h| h == "duckduckgo.com" || h.ends_with(".duckduckgo.com"))
    {
        return None;
    }
    Some(target.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = r#"<!DOCTYPE html><html><body>
<div id="links" class="results">
  <div class="result results_links results_links_deep result--ad">
    <a class="result__a" href="https://duckduckgo.com/y.js?ad_provider=x">Buy tides now</a>
  </div>
  <div class="result results_links results_links_deep web-result ">
    <div class="links_main links_deep result__body">
      <h2 class="result__title">
        <a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Ftides.example%2Fguide%3Fa%3D1%26b%3D2&amp;rut=abc">Tide <b>tables</b>, explained</a>
      </h2>
      <a class="result__snippet" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Ftides.example%2Fguide">High water comes roughly <b>twice</b> a day &amp; more.</a>
    </div>
  </div>
  <div class="result results_links web-result">
    <a class="result__a" href="https://harbour.example/charts">Harbour charts</a>
    <div class="result__snippet">Read them before you sail.</div>
  </div>
  <div class="result web-result"><a class="result__a" href="javascript:alert(1)">Not a page</a></div>
  <div class="nav-link"><form><input type="submit" value="Next"></form></div>
</div></body></html>"#;

    #[test]
    fn a_results_page_becomes_results_without_ads_or_redirects() {
        let results = parse_results(PAGE);
        assert_eq!(results.len(), 2, "{results:?}");
        assert_eq!(results[0].title, "Tide tables, explained");
        assert_eq!(results[0].url, "https://tides.example/guide?a=1&b=2");
        assert_eq!(
            results[0].snippet,
            "High water comes roughly twice a day & more."
        );
        assert_eq!(results[1].url, "https://harbour.example/charts");
        assert_eq!(results[1].snippet, "Read them before you sail.");
    }

    #[test]
    fn a_page_without_results_or_with_a_bot_check_is_told_apart() {
        assert!(parse_results("<html><body>No results.</body></html>").is_empty());
        assert!(is_bot_check(
            r#"<div class="anomaly-modal__title">Unfortunately, bots</div>"#
        ));
        assert!(!is_bot_check(PAGE));
    }

    #[test]
    fn requests_are_spaced() {
        let first = wait_for_slot();
        let second = wait_for_slot();
        assert!(
            second >= first + MIN_SPACING - Duration::from_millis(50),
            "{first:?} {second:?}"
        );
    }
}
