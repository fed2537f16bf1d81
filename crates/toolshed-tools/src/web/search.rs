//! `web_search` and `firecrawl_scrape`: the one exchange with a search API (the host's
//! HTTP client, the policy, the timeout, the size cap, the error messages) around a
//! [`SearchProvider`](super::SearchProvider) that only translates.

use std::time::Duration;

use serde_json::{Value, json};
use toolshed_core::HttpClient;
use toolshed_core::{CallContext, HttpRequest, NetPolicy, ToolError, ToolOutput};
use toolshed_ops::NetClient;
use url::Url;

use super::duckduckgo::{self, Duckduckgo};
use super::providers::{
    PROVIDERS, ProviderRequest, SearchProvider, SearchResult, configured, endpoint, firecrawl,
    shorten,
};
use super::spec::{ScrapeArgs, SearchArgs};
use super::{WebEnv, request_timeout};

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
/// The most Markdown characters `firecrawl_scrape` returns.
const MAX_SCRAPE_CHARS: usize = 30_000;

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

/// Why web_search cannot run with `env`: no provider configured.
pub(super) fn unconfigured_search(env: &WebEnv) -> Option<ToolError> {
    let any = PROVIDERS
        .iter()
        .any(|(id, _)| configured(env, id).is_some());
    (!any).then(unconfigured)
}

/// Why firecrawl_scrape cannot run with `env`: no Firecrawl key.
pub(super) fn unconfigured_scrape(env: &WebEnv) -> Option<ToolError> {
    firecrawl(env).is_none().then(no_firecrawl)
}

fn no_firecrawl() -> ToolError {
    ToolError::Unconfigured {
        message: "firecrawl_scrape needs a Firecrawl API key: set FIRECRAWL_API_KEY in toolshed's environment (and FIRECRAWL_BASE_URL for a self-hosted Firecrawl), or use web_fetch".into(),
        variables: vec!["FIRECRAWL_API_KEY".into()],
    }
}

pub(super) async fn run(
    ctx: &CallContext,
    net: &NetClient,
    env: &WebEnv,
    settings: super::Settings,
    args: Value,
) -> Result<ToolOutput, ToolError> {
    let args: SearchArgs = crate::args::parse(args)?;
    let query = args.query.trim();
    if query.is_empty() {
        return Err(ToolError::invalid_at(
            "/query",
            "`query` is empty; say what to search for",
        ));
    }
    let count = args.count;
    if !(1..=MAX_COUNT).contains(&count) {
        return Err(ToolError::invalid_at(
            "/count",
            format!("`count` is {count}; use 1 to {MAX_COUNT}"),
        ));
    }
    let count = usize::try_from(count).unwrap_or(1);
    let keyless =
        || -> Box<dyn SearchProvider> { Box::new(Duckduckgo::new(env.get(duckduckgo::BASE_VAR))) };
    let provider = match args.provider.map(|p| p.id()) {
        Some(duckduckgo::ID) if settings.keyless_fallback => keyless(),
        Some(duckduckgo::ID) => {
            return Err(ToolError::Unconfigured {
                message: "the duckduckgo provider is off ([web.search] fallback = \"off\"); set fallback = \"duckduckgo\" in your toolshed config, or leave out `provider` to use a configured one".into(),
                variables: Vec::new(),
            });
        }
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
        None => match PROVIDERS.iter().find_map(|(id, _)| configured(env, id)) {
            Some(provider) => provider,
            None if settings.keyless_fallback => keyless(),
            None => return Err(unconfigured()),
        },
    };
    let request = provider.request(query, count)?;
    if provider.id() == duckduckgo::ID {
        // Best effort: spaced out, so as not to be taken for a bot.
        let wait = duckduckgo::wait_for_slot();
        if wait >= request_timeout(ctx, SEARCH_TIMEOUT) {
            return Err(ToolError::Failed(
                "too many keyless searches at once; DuckDuckGo is asked at most once every 1.5 s. Try again, or configure a keyed provider (docs/web.md)".into(),
            ));
        }
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
        }
    }
    let answer = exchange(
        ctx,
        net,
        provider.id(),
        provider.credential_var(),
        request,
        SEARCH_TIMEOUT,
        provider.answers_html(),
    )
    .await?;
    if provider.id() == duckduckgo::ID {
        let page = answer.as_str().unwrap_or_default();
        if duckduckgo::is_bot_check(page) {
            return Err(ToolError::Failed(
                "DuckDuckGo answered with a bot check instead of results (too many searches from this address); wait a few minutes, or configure a keyed provider such as SEARXNG_URL or BRAVE_API_KEY (docs/web.md)".into(),
            ));
        }
    }
    let mut found = provider.parse(&answer);
    found.truncate(count);
    Ok(search_output(provider.id(), query, &found))
}

fn search_output(provider: &str, query: &str, found: &[SearchResult]) -> ToolOutput {
    let source = if provider == duckduckgo::ID {
        "duckduckgo, keyless and best effort: configure a keyed provider for reliable results"
            .to_string()
    } else {
        provider.to_string()
    };
    let mut text = if found.is_empty() {
        format!("No results for \"{query}\" ({source}). Try other words.")
    } else {
        format!("Results for \"{query}\" ({source}):")
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
    net: &NetClient,
    provider: &str,
    credential_var: &str,
    request: ProviderRequest,
    timeout: Duration,
    html: bool,
) -> Result<Value, ToolError> {
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
    let response = net.send(http, &policy, &ctx.cancel).await?;
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
    if html {
        return Ok(Value::String(
            String::from_utf8_lossy(&response.body).into_owned(),
        ));
    }
    serde_json::from_slice(&response.body).map_err(|e| {
        ToolError::Failed(format!(
            "{provider} answered from {host} with something that is not JSON ({e}); for SearXNG, enable the json format in its settings.yml (search.formats)"
        ))
    })
}

pub(super) async fn scrape(
    ctx: &CallContext,
    net: &NetClient,
    env: &WebEnv,
    args: Value,
) -> Result<ToolOutput, ToolError> {
    let args: ScrapeArgs = crate::args::parse(args)?;
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
    let firecrawl = firecrawl(env).ok_or_else(no_firecrawl)?;
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
        net,
        "firecrawl",
        "FIRECRAWL_API_KEY",
        request,
        SCRAPE_TIMEOUT,
        false,
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
