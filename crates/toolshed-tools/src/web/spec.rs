//! The web tools as data.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolshed_core::{Danger, ToolAnnotations, ToolSpec};

use super::GROUP;
use super::fetch::{DEFAULT_MAX_LENGTH, MAX_LENGTH};
use super::search::{DEFAULT_COUNT, MAX_COUNT};

/// Reads from outside the host, changes nothing there.
const READS_THE_WEB: ToolAnnotations = ToolAnnotations {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: true,
};

const FETCH_DESCRIPTION: &str = "\
Fetch a public web page's main content as Markdown (or text, HTML, raw); the last line \
gives a long page's next `start_index`.";

/// `web_fetch`.
pub(super) fn web_fetch() -> ToolSpec {
    let mut spec = ToolSpec::new("web_fetch", FETCH_DESCRIPTION)
        .title("Fetch a web page")
        .group(GROUP)
        .annotations(READS_THE_WEB)
        .input_schema(crate::args::schema::<FetchArgs>())
        .touch(toolshed_core::TouchKind::Hosts, "url");
    // It reaches outside the host: High by the definition of `Danger`.
    spec.danger = Danger::High;
    spec
}

const SEARCH_DESCRIPTION: &str = "\
Search the web: titles, URLs, snippets and dates, best first, from the first configured \
provider (or `provider`; keyless DuckDuckGo, best effort, when none is). Read a result with \
web_fetch.";

/// What `web_fetch` returns of a page.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum Format {
    #[default]
    Markdown,
    Text,
    Html,
    Raw,
}

fn default_max_length() -> u64 {
    DEFAULT_MAX_LENGTH
}

/// The arguments of `web_fetch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct FetchArgs {
    /// http(s) URL
    #[schemars(length(min = 1, max = 8192))]
    pub(super) url: String,
    /// raw: the body as received
    #[serde(default)]
    pub(super) format: Format,
    /// Where to go on from
    #[serde(default)]
    pub(super) start_index: u64,
    /// Most characters
    #[serde(default = "default_max_length")]
    #[schemars(range(min = 1, max = MAX_LENGTH))]
    pub(super) max_length: u64,
}

/// `web_search`.
pub(super) fn web_search() -> ToolSpec {
    let mut spec = ToolSpec::new("web_search", SEARCH_DESCRIPTION)
        .title("Search the web")
        .group(GROUP)
        .annotations(READS_THE_WEB)
        .input_schema(crate::args::schema::<SearchArgs>());
    spec.output_schema = Some(json!({
        "type": "object",
        "properties": {
            // Names that say what they hold: every byte here is paid on every turn.
            "provider": {"type": "string"},
            "query": {"type": "string", "description": "As sent"},
            "results": {
                "type": "array",
                "description": "Best first",
                "items": {
                    "type": "object",
                    "properties": {
                        "title": {"type": "string"},
                        "url": {"type": "string"},
                        "snippet": {"type": "string", "description": "Plain text"},
                        "date": {"type": "string", "description": "As the provider gave it"}
                    },
                    "required": ["title", "url", "snippet"]
                }
            }
        },
        "required": ["provider", "query", "results"]
    }));
    spec.danger = Danger::High;
    spec
}

/// The search providers `web_search` knows, in the order it tries them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum Provider {
    Searxng,
    Brave,
    Tavily,
    Exa,
    Firecrawl,
    Perplexity,
    Deepseek,
    Duckduckgo,
}

impl Provider {
    /// The provider's id, as in [`super::providers::PROVIDERS`].
    pub(super) fn id(self) -> &'static str {
        match self {
            Provider::Searxng => "searxng",
            Provider::Brave => "brave",
            Provider::Tavily => "tavily",
            Provider::Exa => "exa",
            Provider::Firecrawl => "firecrawl",
            Provider::Perplexity => "perplexity",
            Provider::Deepseek => "deepseek",
            Provider::Duckduckgo => "duckduckgo",
        }
    }
}

fn default_count() -> u64 {
    DEFAULT_COUNT
}

/// The arguments of `web_search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct SearchArgs {
    /// What to search for.
    #[schemars(length(min = 1, max = 2000))]
    pub(super) query: String,
    /// How many results.
    #[serde(default = "default_count")]
    #[schemars(range(min = 1, max = MAX_COUNT))]
    pub(super) count: u64,
    /// Left out: the first configured, in this order
    pub(super) provider: Option<Provider>,
}

const SCRAPE_DESCRIPTION: &str = "\
Scrape a web page through Firecrawl (needs FIRECRAWL_API_KEY) and return it as Markdown. \
Firecrawl renders JavaScript, so use this for pages web_fetch returns empty or incomplete. \
The URL is sent to the Firecrawl service, which fetches it.";

/// `firecrawl_scrape`.
pub(super) fn firecrawl_scrape() -> ToolSpec {
    let mut spec = ToolSpec::new("firecrawl_scrape", SCRAPE_DESCRIPTION)
        .title("Scrape a page with Firecrawl")
        .group(GROUP)
        .annotations(READS_THE_WEB)
        .input_schema(crate::args::schema::<ScrapeArgs>());
    spec.danger = Danger::High;
    // Firecrawl renders the page before answering; the scrape may take up to 90 s.
    spec.default_timeout_ms = Some(100_000);
    spec
}

/// The arguments of `firecrawl_scrape`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ScrapeArgs {
    /// The absolute http or https URL of the page to scrape.
    #[schemars(length(min = 1, max = 8192))]
    pub(super) url: String,
}
