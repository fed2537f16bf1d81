//! The browser tools as data: their arguments (the schema is generated from them) and
//! specs.

use schemars::JsonSchema;
use serde::Deserialize;
use toolshed_core::{Danger, ToolAnnotations, ToolSpec};

use super::{GROUP, Run};

/// Pages on the web, read but not changed by the call itself.
const READS: ToolAnnotations = ToolAnnotations {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: true,
};

/// Acts on a page (clicks, types, navigates): may change what a site holds.
const ACTS: ToolAnnotations = ToolAnnotations {
    read_only: false,
    destructive: true,
    idempotent: false,
    open_world: true,
};

/// Local to toolshed: lists or closes its own sessions.
const LOCAL: ToolAnnotations = ToolAnnotations {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: false,
};

/// `browser_open`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct OpenArgs {
    /// http(s) URL to load (none: a blank page)
    #[schemars(length(min = 1, max = 8192))]
    pub url: Option<String>,
}

/// Tools that act on one session.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SessionArgs {
    #[schemars(length(min = 1, max = 64))]
    pub session: String,
}

/// `browser_navigate`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NavigateArgs {
    #[schemars(length(min = 1, max = 64))]
    pub session: String,
    /// http(s) URL
    #[schemars(length(min = 1, max = 8192))]
    pub url: String,
}

/// What `browser_get_content` returns of a page.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Format {
    #[default]
    Markdown,
    Text,
    Html,
}

fn default_max_chars() -> u64 {
    20_000
}

/// `browser_get_content`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ContentArgs {
    #[schemars(length(min = 1, max = 64))]
    pub session: String,
    #[serde(default)]
    pub format: Format,
    /// CSS selector of the part to read (left out: the page's main content)
    #[schemars(length(min = 1, max = 1024))]
    pub selector: Option<String>,
    /// Character offset to start at (from a previous truncated read)
    #[serde(default)]
    #[schemars(range(max = 100_000_000))]
    pub start: u64,
    #[serde(default = "default_max_chars")]
    #[schemars(range(min = 1, max = 100_000))]
    pub max_chars: u64,
}

/// `browser_screenshot`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScreenshotArgs {
    #[schemars(length(min = 1, max = 64))]
    pub session: String,
    /// The whole page, not just the viewport
    #[serde(default)]
    pub full_page: bool,
}

/// `browser_click`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClickArgs {
    #[schemars(length(min = 1, max = 64))]
    pub session: String,
    /// CSS selector of the element
    #[schemars(length(min = 1, max = 1024))]
    pub selector: Option<String>,
    /// Visible text of the element (when no selector)
    #[schemars(length(min = 1, max = 1024))]
    pub text: Option<String>,
}

/// `browser_type`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TypeArgs {
    #[schemars(length(min = 1, max = 64))]
    pub session: String,
    /// CSS selector of the field; its value is replaced
    #[schemars(length(min = 1, max = 1024))]
    pub selector: String,
    /// What to type
    #[schemars(length(max = 100_000))]
    pub text: String,
    /// Press Enter afterwards (submits a form)
    #[serde(default)]
    pub submit: bool,
}

fn default_wait_ms() -> u64 {
    10_000
}

/// `browser_wait`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WaitArgs {
    #[schemars(length(min = 1, max = 64))]
    pub session: String,
    /// Wait until an element matches this CSS selector
    #[schemars(length(min = 1, max = 1024))]
    pub selector: Option<String>,
    /// Wait until the page's text contains this
    #[schemars(length(min = 1, max = 1024))]
    pub text: Option<String>,
    /// Wait until no request has been in flight for 500 ms
    #[serde(default)]
    pub network_idle: bool,
    #[serde(default = "default_wait_ms")]
    #[schemars(range(min = 1, max = 120_000))]
    pub timeout_ms: u64,
}

/// `browser_evaluate`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EvaluateArgs {
    #[schemars(length(min = 1, max = 64))]
    pub session: String,
    /// JavaScript expression; a promise is awaited; the value is returned as JSON
    #[schemars(length(min = 1, max = 100_000))]
    pub expression: String,
}

fn tool(name: &str, title: &str, description: &str, annotations: ToolAnnotations) -> ToolSpec {
    let mut spec = ToolSpec::new(name, description)
        .title(title)
        .group(GROUP)
        .annotations(annotations);
    // A browser reaches outside the host: High by the definition of `Danger`, but for
    // the tools that only list or close toolshed's own sessions.
    if annotations.open_world {
        spec.danger = Danger::High;
    }
    spec
}

/// Every tool, with what runs it.
pub(super) fn all() -> Vec<(ToolSpec, Run)> {
    use crate::args::schema;
    vec![
        (
            tool("browser_open", "Open a browser page", "Open a page in a headless browser (JavaScript runs, cookies kept) and return its session id; loads `url` if given.", ACTS)
                .input_schema(schema::<OpenArgs>()),
            Run::Open,
        ),
        (
            tool("browser_list", "List browser sessions", "List your browser sessions: id, URL, title, idle time.", LOCAL)
                .input_schema(schema::<EmptyArgs>()),
            Run::List,
        ),
        (
            tool("browser_navigate", "Go to a URL", "Load an http(s) URL in a browser session and wait for it.", ACTS)
                .input_schema(schema::<NavigateArgs>()),
            Run::Navigate,
        ),
        (
            tool("browser_session_info", "Browser session details", "A browser session's URL, title, age and requests in flight.", READS)
                .input_schema(schema::<SessionArgs>()),
            Run::Info,
        ),
        (
            tool("browser_get_content", "Read a browser page", "Read the rendered page (after JavaScript) as Markdown, text or HTML, like web_fetch; pages with `start`.", READS)
                .input_schema(schema::<ContentArgs>()),
            Run::Content,
        ),
        (
            tool("browser_screenshot", "Screenshot a page", "A PNG screenshot of the viewport or the full page, as an image.", READS)
                .input_schema(schema::<ScreenshotArgs>()),
            Run::Screenshot,
        ),
        (
            tool("browser_close", "Close a browser session", "Close a browser session.", LOCAL)
                .input_schema(schema::<SessionArgs>()),
            Run::Close,
        ),
        (
            tool("browser_click", "Click an element", "Click the element matching `selector`, or the one showing `text`; waits for a navigation it starts.", ACTS)
                .input_schema(schema::<ClickArgs>()),
            Run::Click,
        ),
        (
            tool("browser_type", "Type into a field", "Replace a field's value with `text` as typed keys; `submit` presses Enter.", ACTS)
                .input_schema(schema::<TypeArgs>()),
            Run::Type,
        ),
        (
            tool("browser_wait", "Wait for a page", "Wait until `selector` matches, `text` shows, or the network is idle.", READS)
                .input_schema(schema::<WaitArgs>()),
            Run::Wait,
        ),
        (
            tool("browser_evaluate", "Run JavaScript in a page", "Evaluate a JavaScript expression in the page and return its value as JSON.", ACTS)
                .input_schema(schema::<EvaluateArgs>()),
            Run::Evaluate,
        ),
    ]
}

/// Tools without arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EmptyArgs {}
