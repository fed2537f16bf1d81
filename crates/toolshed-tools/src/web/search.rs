//! `web_search` and `firecrawl_scrape`: search APIs behind one trait.
//!
//! A [`SearchProvider`] is data in, data out: it builds the request for a query and parses
//! the provider's JSON answer into [`SearchResult`]s, and never does I/O itself. The tool
//! owns the one exchange (the host's HTTP client, its policy, the timeout, the size cap and
//! the error messages), so adding a provider is two small functions, and a provider's
//! parsing is tested against its real response format without any network.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolshed_core::{CallContext, HttpRequest, NetPolicy, ToolError, ToolOutput};
use url::Url;

use super::html::fragment_text;
use super::{WebEnv, http_client, request_timeout};
use crate::util::parse_args;

/// The default number of results.
pub(super) const DEFAULT_COUNT: u64 = 5;
/// The most results one call returns.
pub(super) const MAX_COUNT: u64 = 20;
/// The most bytes of a provider's answer read.
const MAX_RESPONSE_BYTES: usize = 4 << 20;
/// The longest a search may take.
const SEARCH_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest a scrape may take: Firecrawl renders the page first.
const SCRAPE_TIMEOUT: Duration = Duration::from_secs(90);
/// The longest snippet kept, in characters.
const MAX_SNIPPET_CHARS: usize = 500;
/// The most Markdown characters `firecrawl_scrape` returns.
const MAX_SCRAPE_CHARS: usize = 100_000;

/// One search hit, the same shape whichever provider found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchResult {
    /// The page title.
    pub title: String,
    /// The page URL.
    pub url: String,
    /// A short excerpt or description, plain text.
    pub snippet: String,
    /// When the page was published or last changed, as the provider wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
}

/// A request a provider wants sent.
#[derive(Debug, Clone)]
pub struct ProviderRequest {
    /// `GET` or `POST`.
    pub method: &'static str,
    /// The full URL, query included.
    pub url: Url,
    /// Headers, credentials included.
    pub headers: Vec<(String, String)>,
    /// A JSON body, for `POST`.
    pub json: Option<Value>,
}

/// A web search API. Implementations only translate: see the [module docs](self).
pub trait SearchProvider: Send + Sync {
    /// The name callers pass as `provider`.
    fn id(&self) -> &'static str;

    /// The variable holding this provider's credential (or base URL, for SearXNG); named
    /// in errors when the provider refuses the credential.
    fn credential_var(&self) -> &'static str;

    /// The request for `query`, asking for `count` results.
    fn request(&self, query: &str, count: usize) -> Result<ProviderRequest, ToolError>;

    /// The results in the provider's answer, in its order.
    fn parse(&self, answer: &Value) -> Vec<SearchResult>;
}

/// The providers, in the order the default choice tries them, with the variable that
/// configures each.
pub const PROVIDERS: &[(&str, &str)] = &[
    ("searxng", "SEARXNG_URL"),
    ("brave", "BRAVE_API_KEY"),
    ("tavily", "TAVILY_API_KEY"),
    ("exa", "EXA_API_KEY"),
    ("firecrawl", "FIRECRAWL_API_KEY"),
];

/// The provider `id` as `env` configures it, if it does.
pub fn configured(env: &WebEnv, id: &str) -> Option<Box<dyn SearchProvider>> {
    let base = |var: &str, default: &str| {
        env.get(var)
            .unwrap_or(default)
            .trim_end_matches('/')
            .to_string()
    };
    match id {
        "searxng" => env.get("SEARXNG_URL").map(|url| {
            Box::new(Searxng {
                base: url.trim_end_matches('/').to_string(),
            }) as Box<dyn SearchProvider>
        }),
        "brave" => env.get("BRAVE_API_KEY").map(|key| {
            Box::new(Brave {
                base: base("BRAVE_BASE_URL", "https://api.search.brave.com"),
                key: key.to_string(),
            }) as Box<dyn SearchProvider>
        }),
        "tavily" => env.get("TAVILY_API_KEY").map(|key| {
            Box::new(Tavily {
                base: base("TAVILY_BASE_URL", "https://api.tavily.com"),
                key: key.to_string(),
            }) as Box<dyn SearchProvider>
        }),
        "exa" => env.get("EXA_API_KEY").map(|key| {
            Box::new(Exa {
                base: base("EXA_BASE_URL", "https://api.exa.ai"),
                key: key.to_string(),
            }) as Box<dyn SearchProvider>
        }),
        "firecrawl" => firecrawl(env).map(|f| Box::new(f) as Box<dyn SearchProvider>),
        _ => None,
    }
}

fn firecrawl(env: &WebEnv) -> Option<Firecrawl> {
    env.get("FIRECRAWL_API_KEY").map(|key| Firecrawl {
        base: env
            .get("FIRECRAWL_BASE_URL")
            .unwrap_or("https://api.firecrawl.dev")
            .trim_end_matches('/')
            .to_string(),
        key: key.to_string(),
    })
}

fn endpoint(base: &str, path: &str, provider: &str, var: &str) -> Result<Url, ToolError> {
    let url = Url::parse(&format!("{base}{path}")).map_err(|e| ToolError::Unconfigured {
        message: format!(
            "the {provider} base URL `{base}` is not a valid URL ({e}); fix {var} in toolshed's environment"
        ),
        variables: vec![var.to_string()],
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ToolError::Unconfigured {
            message: format!("the {provider} base URL `{base}` must be http or https; fix {var}"),
            variables: vec![var.to_string()],
        });
    }
    Ok(url)
}

struct Searxng {
    base: String,
}

impl SearchProvider for Searxng {
    fn id(&self) -> &'static str {
        "searxng"
    }

    fn credential_var(&self) -> &'static str {
        "SEARXNG_URL"
    }

    fn request(&self, query: &str, _count: usize) -> Result<ProviderRequest, ToolError> {
        let mut url = endpoint(&self.base, "/search", "SearXNG", "SEARXNG_URL")?;
        url.query_pairs_mut()
            .append_pair("q", query)
            .append_pair("format", "json");
        Ok(ProviderRequest {
            method: "GET",
            url,
            headers: vec![("accept".into(), "application/json".into())],
            json: None,
        })
    }

    fn parse(&self, answer: &Value) -> Vec<SearchResult> {
        results(
            &answer["results"],
            "title",
            "url",
            &["content"],
            &["publishedDate"],
        )
    }
}

struct Brave {
    base: String,
    key: String,
}

impl SearchProvider for Brave {
    fn id(&self) -> &'static str {
        "brave"
    }

    fn credential_var(&self) -> &'static str {
        "BRAVE_API_KEY"
    }

    fn request(&self, query: &str, count: usize) -> Result<ProviderRequest, ToolError> {
        let mut url = endpoint(&self.base, "/res/v1/web/search", "Brave", "BRAVE_BASE_URL")?;
        url.query_pairs_mut()
            .append_pair("q", query)
            .append_pair("count", &count.to_string());
        Ok(ProviderRequest {
            method: "GET",
            url,
            headers: vec![
                ("accept".into(), "application/json".into()),
                ("x-subscription-token".into(), self.key.clone()),
            ],
            json: None,
        })
    }

    fn parse(&self, answer: &Value) -> Vec<SearchResult> {
        results(
            &answer["web"]["results"],
            "title",
            "url",
            &["description"],
            &["page_age", "age"],
        )
    }
}

struct Tavily {
    base: String,
    key: String,
}

impl SearchProvider for Tavily {
    fn id(&self) -> &'static str {
        "tavily"
    }

    fn credential_var(&self) -> &'static str {
        "TAVILY_API_KEY"
    }

    fn request(&self, query: &str, count: usize) -> Result<ProviderRequest, ToolError> {
        Ok(ProviderRequest {
            method: "POST",
            url: endpoint(&self.base, "/search", "Tavily", "TAVILY_BASE_URL")?,
            headers: vec![("authorization".into(), format!("Bearer {}", self.key))],
            json: Some(json!({"query": query, "max_results": count})),
        })
    }

    fn parse(&self, answer: &Value) -> Vec<SearchResult> {
        results(
            &answer["results"],
            "title",
            "url",
            &["content"],
            &["published_date"],
        )
    }
}

struct Exa {
    base: String,
    key: String,
}

impl SearchProvider for Exa {
    fn id(&self) -> &'static str {
        "exa"
    }

    fn credential_var(&self) -> &'static str {
        "EXA_API_KEY"
    }

    fn request(&self, query: &str, count: usize) -> Result<ProviderRequest, ToolError> {
        Ok(ProviderRequest {
            method: "POST",
            url: endpoint(&self.base, "/search", "Exa", "EXA_BASE_URL")?,
            headers: vec![("x-api-key".into(), self.key.clone())],
            // Text is not returned unless asked for; a short excerpt makes the snippet.
            json: Some(json!({
                "query": query,
                "numResults": count,
                "contents": {"text": {"maxCharacters": MAX_SNIPPET_CHARS}}
            })),
        })
    }

    fn parse(&self, answer: &Value) -> Vec<SearchResult> {
        results(
            &answer["results"],
            "title",
            "url",
            &["text", "summary"],
            &["publishedDate"],
        )
    }
}

struct Firecrawl {
    base: String,
    key: String,
}

impl SearchProvider for Firecrawl {
    fn id(&self) -> &'static str {
        "firecrawl"
    }

    fn credential_var(&self) -> &'static str {
        "FIRECRAWL_API_KEY"
    }

    fn request(&self, query: &str, count: usize) -> Result<ProviderRequest, ToolError> {
        Ok(ProviderRequest {
            method: "POST",
            url: endpoint(&self.base, "/v1/search", "Firecrawl", "FIRECRAWL_BASE_URL")?,
            headers: vec![("authorization".into(), format!("Bearer {}", self.key))],
            json: Some(json!({"query": query, "limit": count})),
        })
    }

    fn parse(&self, answer: &Value) -> Vec<SearchResult> {
        // v1 answers `data: [...]`; v2 groups by source, `data: {web: [...]}`.
        let data = match &answer["data"] {
            Value::Object(groups) => groups.get("web").cloned().unwrap_or(Value::Null),
            other => other.clone(),
        };
        results(&data, "title", "url", &["description", "markdown"], &[])
    }
}

/// The results in array `items`: title, url, the first non-empty snippet field, the first
/// date field. Items without a URL are skipped; snippets are plain text, shortened.
fn results(
    items: &Value,
    title: &str,
    url: &str,
    snippet: &[&str],
    date: &[&str],
) -> Vec<SearchResult> {
    let text = |item: &Value, key: &str| {
        item.get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    items
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|item| {
            let url = text(item, url)?;
            let snippet = snippet
                .iter()
                .find_map(|k| text(item, k))
                .map(|s| shorten(&fragment_text(&s), MAX_SNIPPET_CHARS))
                .unwrap_or_default();
            Some(SearchResult {
                title: text(item, title)
                    .map(|t| fragment_text(&t))
                    .unwrap_or_else(|| url.clone()),
                url,
                snippet,
                date: date.iter().find_map(|k| text(item, k)),
            })
        })
        .collect()
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max - 1).collect();
    out.push('…');
    out
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    query: String,
    #[serde(default)]
    count: Option<u64>,
    #[serde(default)]
    provider: Option<String>,
}

/// The error for a search with no provider configured.
fn unconfigured() -> ToolError {
    let variables: Vec<String> = PROVIDERS.iter().map(|(_, v)| v.to_string()).collect();
    ToolError::Unconfigured {
        message: format!(
            "web_search has no search provider configured: set one of {} in toolshed's environment (SEARXNG_URL is the base URL of a SearXNG instance; the others are API keys), then restart toolshed. See docs/web.md",
            variables.join(", ")
        ),
        variables,
    }
}

pub(super) async fn run(
    ctx: &CallContext,
    env: &WebEnv,
    args: Value,
) -> Result<ToolOutput, ToolError> {
    let args: SearchArgs = parse_args(args)?;
    let query = args.query.trim();
    if query.is_empty() {
        return Err(ToolError::invalid_at(
            "/query",
            "`query` is empty; say what to search for",
        ));
    }
    let count = args.count.unwrap_or(DEFAULT_COUNT);
    if !(1..=MAX_COUNT).contains(&count) {
        return Err(ToolError::invalid_at(
            "/count",
            format!("`count` is {count}; use 1 to {MAX_COUNT}"),
        ));
    }
    let count = usize::try_from(count).unwrap_or(1);
    let provider = match args.provider.as_deref() {
        Some(id) => {
            let Some(&(_, var)) = PROVIDERS.iter().find(|(p, _)| *p == id) else {
                let names: Vec<&str> = PROVIDERS.iter().map(|(p, _)| *p).collect();
                return Err(ToolError::invalid_at(
                    "/provider",
                    format!("unknown provider `{id}`; use one of {}", names.join(", ")),
                ));
            };
            configured(env, id).ok_or_else(|| ToolError::Unconfigured {
                message: format!(
                    "the {id} search provider is not configured: set {var} in toolshed's environment, or leave out `provider` to use a configured one"
                ),
                variables: vec![var.to_string()],
            })?
        }
        None => PROVIDERS
            .iter()
            .find_map(|(id, _)| configured(env, id))
            .ok_or_else(unconfigured)?,
    };
    let request = provider.request(query, count)?;
    let answer = exchange(
        ctx,
        provider.id(),
        provider.credential_var(),
        request,
        SEARCH_TIMEOUT,
    )
    .await?;
    let mut found = provider.parse(&answer);
    found.truncate(count);
    Ok(search_output(provider.id(), query, &found))
}

fn search_output(provider: &str, query: &str, found: &[SearchResult]) -> ToolOutput {
    let mut text = if found.is_empty() {
        format!("No results for \"{query}\" ({provider}). Try other words.")
    } else {
        format!("Results for \"{query}\" ({provider}):")
    };
    for (i, r) in found.iter().enumerate() {
        text.push_str(&format!("\n\n{}. {}\n   {}", i + 1, r.title, r.url));
        if !r.snippet.is_empty() {
            text.push_str(&format!("\n   {}", r.snippet));
        }
        if let Some(date) = &r.date {
            text.push_str(&format!("\n   Date: {date}"));
        }
    }
    ToolOutput::text_and_structured(
        text,
        json!({"provider": provider, "query": query, "results": found}),
    )
}

/// Sends a provider request and returns its JSON answer, or an error naming the provider,
/// the status and what to do. Never puts a credential in a message.
async fn exchange(
    ctx: &CallContext,
    provider: &str,
    credential_var: &str,
    request: ProviderRequest,
    timeout: Duration,
) -> Result<Value, ToolError> {
    let client = http_client(ctx)?;
    let host = request.url.host_str().unwrap_or_default().to_string();
    let port = request.url.port_or_known_default().unwrap_or(443);
    // The operator named this host (the default API or a base URL they set), so it is the
    // only one reachable, whatever its address: a self-hosted SearXNG on the LAN works.
    let policy = NetPolicy::Only(vec![format!("{host}:{port}")]);
    let mut headers = request.headers;
    let body = match &request.json {
        Some(json) => {
            headers.push(("content-type".into(), "application/json".into()));
            Some(json.to_string().into_bytes())
        }
        None => None,
    };
    headers.push(("accept-encoding".into(), "identity".into()));
    let http = HttpRequest {
        method: request.method.to_string(),
        url: request.url.to_string(),
        headers,
        body,
        timeout: request_timeout(ctx, timeout),
        max_response_bytes: MAX_RESPONSE_BYTES,
    };
    let response = client.0.send(http, &policy, &ctx.cancel).await?;
    let status = response.status;
    if !(200..300).contains(&status) {
        let excerpt = shorten(
            &String::from_utf8_lossy(&response.body)
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
            300,
        );
        let advice = match status {
            401 | 403 => format!("check {credential_var}: the provider refused it"),
            402 => "the provider's plan or credits are used up".to_string(),
            429 => "rate limited; wait before searching again".to_string(),
            s if s >= 500 => {
                "the provider failed; try again later or pick another provider with `provider`"
                    .to_string()
            }
            _ => "the request was refused".to_string(),
        };
        return Err(ToolError::Failed(format!(
            "{provider} answered HTTP {status} from {host}: {advice}. Its answer: {excerpt}"
        )));
    }
    if response.truncated {
        return Err(ToolError::Failed(format!(
            "{provider}'s answer from {host} is larger than {} MiB; ask for fewer results",
            MAX_RESPONSE_BYTES >> 20
        )));
    }
    serde_json::from_slice(&response.body).map_err(|e| {
        ToolError::Failed(format!(
            "{provider} answered from {host} with something that is not JSON ({e}); for SearXNG, enable the json format in its settings.yml (search.formats)"
        ))
    })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScrapeArgs {
    url: String,
}

pub(super) async fn scrape(
    ctx: &CallContext,
    env: &WebEnv,
    args: Value,
) -> Result<ToolOutput, ToolError> {
    let args: ScrapeArgs = parse_args(args)?;
    let target = Url::parse(args.url.trim())
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .ok_or_else(|| {
            ToolError::invalid_at(
                "/url",
                format!(
                    "`{}` is not an absolute http or https URL; pass one like https://example.com/page",
                    args.url
                ),
            )
        })?;
    let firecrawl = firecrawl(env).ok_or_else(|| ToolError::Unconfigured {
        message: "firecrawl_scrape needs a Firecrawl API key: set FIRECRAWL_API_KEY in toolshed's environment (and FIRECRAWL_BASE_URL for a self-hosted Firecrawl), or use web_fetch".into(),
        variables: vec!["FIRECRAWL_API_KEY".into()],
    })?;
    let request = ProviderRequest {
        method: "POST",
        url: endpoint(
            &firecrawl.base,
            "/v1/scrape",
            "Firecrawl",
            "FIRECRAWL_BASE_URL",
        )?,
        headers: vec![("authorization".into(), format!("Bearer {}", firecrawl.key))],
        json: Some(json!({"url": target.as_str(), "formats": ["markdown"]})),
    };
    let answer = exchange(
        ctx,
        "firecrawl",
        "FIRECRAWL_API_KEY",
        request,
        SCRAPE_TIMEOUT,
    )
    .await?;
    if answer["success"] == Value::Bool(false) {
        let why = answer["error"].as_str().unwrap_or("no reason given");
        return Err(ToolError::Failed(format!(
            "Firecrawl could not scrape `{target}`: {why}"
        )));
    }
    let data = &answer["data"];
    let markdown = data["markdown"].as_str().unwrap_or_default();
    let meta = &data["metadata"];
    let mut out = format!(
        "URL: {}\n",
        meta["sourceURL"].as_str().unwrap_or(target.as_str())
    );
    if let Some(status) = meta["statusCode"].as_u64() {
        out.push_str(&format!("Status: {status}\n"));
    }
    if let Some(title) = meta["title"].as_str() {
        out.push_str(&format!("Title: {title}\n"));
    }
    out.push('\n');
    let total = markdown.chars().count();
    out.extend(markdown.chars().take(MAX_SCRAPE_CHARS));
    if total > MAX_SCRAPE_CHARS {
        out.push_str(&format!(
            "\n\ncontent truncated at {MAX_SCRAPE_CHARS} of {total} characters; the rest is not shown (web_fetch reads long pages in parts with start_index)"
        ));
    }
    Ok(ToolOutput::text(out))
}
