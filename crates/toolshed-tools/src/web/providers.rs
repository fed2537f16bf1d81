//! The search providers: each turns a query into its API's request and its API's answer
//! into [`SearchResult`]s. See [`SearchProvider`] for why they do no I/O.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolshed_core::ToolError;
use url::Url;

use super::WebEnv;
use super::html::fragment_text;

/// The longest snippet kept, in characters.
pub(super) const MAX_SNIPPET_CHARS: usize = 500;

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

/// A web search API, as a translation: the request for a query, and the results in an
/// answer.
///
/// A provider never does I/O itself. The tool owns the one exchange (the host's HTTP client
/// and its policy, the timeout, the size cap, the error messages that name the provider's
/// variable but never its key), so every provider gets the same guarantees, adding one is
/// two small functions, and each is tested against a server answering in its real format.
pub trait SearchProvider: Send + Sync {
    /// The name callers pass as `provider`.
    fn id(&self) -> &'static str;

    /// The variable holding this provider's credential (or base URL, for SearXNG); named
    /// in errors when the provider refuses the credential.
    fn credential_var(&self) -> &'static str;

    /// The request for `query`, asking for `count` results.
    fn request(&self, query: &str, count: usize) -> Result<ProviderRequest, ToolError>;

    /// The results in the provider's answer, in its order. An HTML answer
    /// ([`SearchProvider::answers_html`]) comes as a JSON string.
    fn parse(&self, answer: &Value) -> Vec<SearchResult>;

    /// Whether the answer is an HTML page rather than JSON.
    fn answers_html(&self) -> bool {
        false
    }
}

/// The providers, in the order the default choice tries them, with the variable that
/// configures each.
pub(super) const PROVIDERS: &[(&str, &str)] = &[
    ("searxng", "SEARXNG_URL"),
    ("brave", "BRAVE_API_KEY"),
    ("tavily", "TAVILY_API_KEY"),
    ("exa", "EXA_API_KEY"),
    ("firecrawl", "FIRECRAWL_API_KEY"),
    ("perplexity", "PERPLEXITY_API_KEY"),
    ("deepseek", "DEEPSEEK_API_KEY"),
];

/// The provider `id` as `env` configures it, if it does.
pub(super) fn configured(env: &WebEnv, id: &str) -> Option<Box<dyn SearchProvider>> {
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
            Box::new(BearerSearch {
                api: &TAVILY,
                base: base(TAVILY.base_var, "https://api.tavily.com"),
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
        "perplexity" => env.get("PERPLEXITY_API_KEY").map(|key| {
            Box::new(BearerSearch {
                api: &PERPLEXITY,
                base: base(PERPLEXITY.base_var, "https://api.perplexity.ai"),
                key: key.to_string(),
            }) as Box<dyn SearchProvider>
        }),
        "deepseek" => env.get("DEEPSEEK_API_KEY").map(|key| {
            Box::new(Deepseek {
                base: base("DEEPSEEK_BASE_URL", "https://api.deepseek.com"),
                key: key.to_string(),
                model: env
                    .get("DEEPSEEK_SEARCH_MODEL")
                    .unwrap_or("deepseek-chat")
                    .to_string(),
            }) as Box<dyn SearchProvider>
        }),
        _ => None,
    }
}

pub(super) fn firecrawl(env: &WebEnv) -> Option<Firecrawl> {
    env.get("FIRECRAWL_API_KEY").map(|key| Firecrawl {
        base: env
            .get("FIRECRAWL_BASE_URL")
            .unwrap_or("https://api.firecrawl.dev")
            .trim_end_matches('/')
            .to_string(),
        key: key.to_string(),
    })
}

pub(super) fn endpoint(
    base: &str,
    path: &str,
    provider: &str,
    var: &str,
) -> Result<Url, ToolError> {
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

/// A search API that takes `{query, max_results}` with a bearer key at `/search` and
/// answers `results` of `title`, `url`, a snippet and a date: Tavily's and Perplexity's.
struct BearerApi {
    id: &'static str,
    name: &'static str,
    credential_var: &'static str,
    base_var: &'static str,
    snippet: &'static [&'static str],
    date: &'static [&'static str],
}

const TAVILY: BearerApi = BearerApi {
    id: "tavily",
    name: "Tavily",
    credential_var: "TAVILY_API_KEY",
    base_var: "TAVILY_BASE_URL",
    snippet: &["content"],
    date: &["published_date"],
};

/// Perplexity's Search API: ranked web results for a query.
const PERPLEXITY: BearerApi = BearerApi {
    id: "perplexity",
    name: "Perplexity",
    credential_var: "PERPLEXITY_API_KEY",
    base_var: "PERPLEXITY_BASE_URL",
    snippet: &["snippet"],
    date: &["date", "last_updated"],
};

struct BearerSearch {
    api: &'static BearerApi,
    base: String,
    key: String,
}

impl SearchProvider for BearerSearch {
    fn id(&self) -> &'static str {
        self.api.id
    }

    fn credential_var(&self) -> &'static str {
        self.api.credential_var
    }

    fn request(&self, query: &str, count: usize) -> Result<ProviderRequest, ToolError> {
        Ok(ProviderRequest {
            method: "POST",
            url: endpoint(&self.base, "/search", self.api.name, self.api.base_var)?,
            headers: vec![("authorization".into(), format!("Bearer {}", self.key))],
            json: Some(json!({"query": query, "max_results": count})),
        })
    }

    fn parse(&self, answer: &Value) -> Vec<SearchResult> {
        results(
            &answer["results"],
            "title",
            "url",
            self.api.snippet,
            self.api.date,
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

/// DeepSeek, which has no search API of its own: its chat model (OpenAI's
/// `chat/completions` shape) is asked for the pages that answer the query, as a JSON list.
/// What it names comes from the model, not from an index, and may be out of date or wrong:
/// each snippet says so, and `web_fetch` checks a page before it is trusted.
struct Deepseek {
    base: String,
    key: String,
    model: String,
}

impl SearchProvider for Deepseek {
    fn id(&self) -> &'static str {
        "deepseek"
    }

    fn credential_var(&self) -> &'static str {
        "DEEPSEEK_API_KEY"
    }

    fn request(&self, query: &str, count: usize) -> Result<ProviderRequest, ToolError> {
        let ask = format!(
            "List up to {count} web pages that best answer this search query. Answer with JSON \
             only: {{\"results\": [{{\"title\": \"...\", \"url\": \"https://...\", \"snippet\": \"...\"}}]}}. \
             Name only pages you know exist.\n\nQuery: {query}"
        );
        Ok(ProviderRequest {
            method: "POST",
            url: endpoint(
                &self.base,
                "/chat/completions",
                "DeepSeek",
                "DEEPSEEK_BASE_URL",
            )?,
            headers: vec![("authorization".into(), format!("Bearer {}", self.key))],
            json: Some(json!({
                "model": self.model,
                "messages": [{"role": "user", "content": ask}],
                "response_format": {"type": "json_object"},
                "temperature": 0,
                "stream": false,
            })),
        })
    }

    fn parse(&self, answer: &Value) -> Vec<SearchResult> {
        let content = answer["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or_default();
        // The JSON object, even wrapped in a code fence.
        let body = content
            .find('{')
            .and_then(|start| content.rfind('}').map(|end| &content[start..=end]))
            .unwrap_or("{}");
        let listed: Value = serde_json::from_str(body).unwrap_or(Value::Null);
        let mut found = results(&listed["results"], "title", "url", &["snippet"], &[]);
        for result in &mut found {
            result.snippet = format!(
                "{} (named by the DeepSeek model, not from a search index)",
                result.snippet
            )
            .trim_start()
            .to_string();
        }
        found
    }
}

pub(super) struct Firecrawl {
    pub(super) base: String,
    pub(super) key: String,
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

pub(super) fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max - 1).collect();
    out.push('…');
    out
}
