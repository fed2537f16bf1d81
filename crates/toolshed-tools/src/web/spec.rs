//! The web tools as data.

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
Fetch a public web page (http/https GET; redirects followed, at most 5) and return its readable content. \
`format`: `markdown` (default: the page's main content - navigation, sidebars, ads, cookie banners, comments and footers removed - \
as Markdown with absolute links), `text` (the same content as plain text), `html` (the cleaned HTML of the main content) \
or `raw` (the body exactly as received). JSON and plain-text responses are returned as they are; binary content (images, PDFs, archives) \
is described by type and size only. The output starts with the final URL, status, content type and page title. \
Long content is paginated: at most `max_length` characters (default 20000, at most 100000) from `start_index` (default 0); \
when more remains, the last line says `content truncated — call again with start_index=N`. \
Private, loopback and link-local addresses are refused, also after redirects. A 4xx/5xx answer is an error result naming the status.";

/// `web_fetch`.
pub(super) fn web_fetch() -> ToolSpec {
    let mut spec = ToolSpec::new("web_fetch", FETCH_DESCRIPTION)
        .title("Fetch a web page as Markdown")
        .group(GROUP)
        .annotations(READS_THE_WEB)
        .input_schema(json!({
            "type": "object",
            "properties": {
                "url": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 8192,
                    "description": "The absolute http or https URL to fetch."
                },
                "format": {
                    "type": "string",
                    "enum": ["markdown", "text", "html", "raw"],
                    "description": "markdown (default): main content as Markdown; text: same as plain text; html: cleaned HTML of the main content; raw: the body as received."
                },
                "start_index": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Character offset to start from, for reading a long page in parts (default 0). Use the value the truncation line gives."
                },
                "max_length": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LENGTH,
                    "description": format!("Most characters of content returned (default {DEFAULT_MAX_LENGTH}, at most {MAX_LENGTH}).")
                }
            },
            "required": ["url"],
            "additionalProperties": false
        }));
    // It reaches outside the host: High by the definition of `Danger`.
    spec.danger = Danger::High;
    spec
}

const SEARCH_DESCRIPTION: &str = "\
Search the web. Returns up to `count` results (default 5, at most 20), each with title, URL, snippet and date when the provider gives one; \
structured output `{provider, query, results: [{title, url, snippet, date?}]}`. \
Providers: `searxng`, `brave`, `tavily`, `exa`, `firecrawl`; without `provider` the first configured one in that order is used. \
Follow up with web_fetch to read a result.";

/// `web_search`.
pub(super) fn web_search() -> ToolSpec {
    let mut spec = ToolSpec::new("web_search", SEARCH_DESCRIPTION)
        .title("Search the web")
        .group(GROUP)
        .annotations(READS_THE_WEB)
        .input_schema(json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 2000,
                    "description": "What to search for."
                },
                "count": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_COUNT,
                    "description": format!("How many results (default {DEFAULT_COUNT}, at most {MAX_COUNT}).")
                },
                "provider": {
                    "type": "string",
                    "enum": ["searxng", "brave", "tavily", "exa", "firecrawl"],
                    "description": "The search provider to use; default: the first configured of searxng, brave, tavily, exa, firecrawl."
                }
            },
            "required": ["query"],
            "additionalProperties": false
        }));
    spec.output_schema = Some(json!({
        "type": "object",
        "properties": {
            "provider": {"type": "string", "description": "The provider that answered."},
            "query": {"type": "string", "description": "The query as sent."},
            "results": {
                "type": "array",
                "description": "The results, best first.",
                "items": {
                    "type": "object",
                    "properties": {
                        "title": {"type": "string", "description": "The page title."},
                        "url": {"type": "string", "description": "The page URL."},
                        "snippet": {"type": "string", "description": "An excerpt, plain text."},
                        "date": {"type": "string", "description": "Publication date as the provider gave it, when it did."}
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
        .input_schema(json!({
            "type": "object",
            "properties": {
                "url": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 8192,
                    "description": "The absolute http or https URL of the page to scrape."
                }
            },
            "required": ["url"],
            "additionalProperties": false
        }));
    spec.danger = Danger::High;
    // Firecrawl renders the page before answering; the scrape may take up to 90 s.
    spec.default_timeout_ms = Some(100_000);
    spec
}
