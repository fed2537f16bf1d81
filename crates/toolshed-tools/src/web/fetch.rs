//! `web_fetch`: one GET (redirects followed), the body classified by content type, HTML
//! reduced to its main content, and the result paginated by characters.

use std::time::Duration;

use serde_json::Value;
use toolshed_core::{CallContext, HttpRequest, HttpResponse, ToolError, ToolOutput};
use toolshed_ops::NetClient;
use url::Url;

use super::html::{self, Mode, entities::windows_1252};
use super::request_timeout;
use super::spec::{FetchArgs, Format};

/// The default for `max_length`, in characters.
pub(super) const DEFAULT_MAX_LENGTH: u64 = 20_000;
/// The largest `max_length`, in characters: 30,000 characters stay under the host's
/// default per-call ceiling (100,000 bytes) even at three bytes a character, so a long page
/// always ends with its own `start_index` line rather than the pipeline's cut.
pub(super) const MAX_LENGTH: u64 = 30_000;
/// The most response bytes read; the rest of a larger body is never downloaded.
pub(super) const MAX_RESPONSE_BYTES: usize = 5 << 20;
/// The most redirects followed.
pub(super) const MAX_REDIRECTS: usize = 5;
/// The longest a fetch may take, whatever the call's deadline.
const TIMEOUT_CAP: Duration = Duration::from_secs(60);
/// How much content a 4xx/5xx result shows.
const ERROR_EXCERPT_CHARS: usize = 2_000;

/// The final answer of a fetch and where it came from.
struct Fetched {
    url: String,
    requested: String,
    response: HttpResponse,
}

impl Fetched {
    fn header(&self, name: &str) -> Option<&str> {
        self.response
            .headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

pub(super) async fn run(
    ctx: &CallContext,
    net: &NetClient,
    args: Value,
) -> Result<ToolOutput, ToolError> {
    let args: FetchArgs = crate::args::parse(args)?;
    let url = Url::parse(args.url.trim()).map_err(|e| {
        ToolError::invalid_at(
            "/url",
            format!(
                "`{}` is not an absolute URL ({e}); pass one like https://example.com/page",
                args.url
            ),
        )
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ToolError::invalid_at(
            "/url",
            format!(
                "`{}` uses the scheme `{}`; web_fetch fetches only http and https URLs",
                args.url,
                url.scheme()
            ),
        ));
    }
    let max_length = args.max_length;
    if !(1..=MAX_LENGTH).contains(&max_length) {
        return Err(ToolError::invalid_at(
            "/max_length",
            format!("`max_length` is {max_length}; use 1 to {MAX_LENGTH}"),
        ));
    }
    let fetched = get(ctx, net, url.as_str()).await?;
    // Parsing and converting up to 5 MiB of HTML is CPU work: off the async runtime.
    let format = args.format;
    let (fetched, page) = tokio::task::spawn_blocking(move || {
        let page = Page::read(&fetched, format);
        (fetched, page)
    })
    .await
    .map_err(|e| ToolError::Internal(format!("reading the page failed: {e}")))?;
    let status = fetched.response.status;
    if status >= 400 {
        return Ok(ToolOutput::text(error_text(&fetched, &page)).into_error());
    }
    let mut out = header(&fetched, &page);
    out.push_str(&toolshed_kit::window(
        &page.content,
        args.start_index,
        max_length,
        "start_index",
    )?);
    Ok(ToolOutput::text(out))
}

/// GETs `url`, following redirects through [`crate::http::send_public`] (every hop checked
/// by the HTTP client).
async fn get(ctx: &CallContext, net: &NetClient, url: &str) -> Result<Fetched, ToolError> {
    let request = HttpRequest {
        method: "GET".into(),
        url: url.to_string(),
        headers: vec![
            (
                "accept".into(),
                "text/html,application/xhtml+xml,application/json;q=0.9,text/plain;q=0.8,*/*;q=0.5"
                    .into(),
            ),
            // The client does not decompress; ask for the body as it is.
            ("accept-encoding".into(), "identity".into()),
        ],
        body: None,
        timeout: request_timeout(ctx, TIMEOUT_CAP),
        max_response_bytes: MAX_RESPONSE_BYTES,
    };
    let sent = crate::http::send_public(net, &ctx.cancel, request, MAX_REDIRECTS).await?;
    Ok(Fetched {
        url: sent.url,
        requested: url.to_string(),
        response: sent.response,
    })
}

/// What the body is, as far as web_fetch cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Html,
    /// JSON, plain text, XML, CSS, ...: returned as it is.
    Text,
    Binary,
}

/// A response read into the content web_fetch returns.
struct Page {
    kind: Kind,
    title: Option<String>,
    content: String,
}

impl Page {
    fn read(fetched: &Fetched, format: Format) -> Self {
        let content_type = fetched.header("content-type");
        let body = &fetched.response.body;
        let encoded = fetched
            .header("content-encoding")
            .map(str::trim)
            .filter(|e| !e.is_empty() && !e.eq_ignore_ascii_case("identity"));
        let kind = if encoded.is_some() {
            Kind::Binary
        } else {
            classify(content_type, body)
        };
        if kind == Kind::Binary {
            let what = content_type.unwrap_or("no content type");
            let size = if fetched.response.truncated {
                format!("more than {} bytes", body.len())
            } else {
                format!("{} bytes", body.len())
            };
            let mut content = format!(
                "Binary content ({what}), {size}; web_fetch returns text only, so the body is not shown."
            );
            if let Some(encoding) = encoded {
                content = format!(
                    "The server sent the body compressed ({encoding}) although web_fetch asked for it uncompressed; {size}, not shown."
                );
            }
            return Self {
                kind,
                title: None,
                content,
            };
        }
        let text = decode(body, content_type);
        if kind == Kind::Text {
            return Self {
                kind,
                title: None,
                content: text,
            };
        }
        let page = html::readable(&text);
        if format == Format::Raw {
            return Self {
                kind,
                title: page.title,
                content: text,
            };
        }
        let base = Url::parse(&fetched.url).ok();
        let base = base_href(&page, base);
        let content = match format {
            Format::Markdown => html::render(&page.doc, page.main, base.as_ref(), Mode::Markdown),
            Format::Text => html::render(&page.doc, page.main, base.as_ref(), Mode::Text),
            Format::Html | Format::Raw => html::to_html(&page.doc, page.main, base.as_ref()),
        };
        let content = if content.trim().is_empty() {
            "(no readable content found: the page may build its content with JavaScript; try format `raw`, or firecrawl_scrape if it is configured)".to_string()
        } else {
            content
        };
        Self {
            kind,
            title: page.title,
            content,
        }
    }
}

/// The page's `<base href>` joined onto its URL, else its URL.
fn base_href(page: &html::Readable, url: Option<Url>) -> Option<Url> {
    let doc = &page.doc;
    let href = doc
        .find(html::dom::Document::ROOT, "base")
        .and_then(|b| doc.attr(b, "href"));
    match (href, &url) {
        (Some(href), Some(u)) => u.join(href.trim()).ok().or(url),
        _ => url,
    }
}

fn mime(content_type: Option<&str>) -> String {
    content_type
        .and_then(|ct| ct.split(';').next())
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

fn classify(content_type: Option<&str>, body: &[u8]) -> Kind {
    let mime = mime(content_type);
    let looks_binary = body.iter().take(4096).any(|&b| b == 0);
    match mime.as_str() {
        "text/html" | "application/xhtml+xml" => Kind::Html,
        "" => {
            if looks_binary || (std::str::from_utf8(body).is_err() && body.len() > 16) {
                Kind::Binary
            } else {
                let start: String = String::from_utf8_lossy(&body[..body.len().min(512)])
                    .trim_start()
                    .chars()
                    .take(64)
                    .collect::<String>()
                    .to_ascii_lowercase();
                if start.starts_with("<!doctype html") || start.starts_with("<html") {
                    Kind::Html
                } else {
                    Kind::Text
                }
            }
        }
        m if is_textual(m) && !looks_binary => Kind::Text,
        _ => Kind::Binary,
    }
}

fn is_textual(mime: &str) -> bool {
    mime.starts_with("text/")
        || mime.ends_with("+json")
        || mime.ends_with("+xml")
        || matches!(
            mime,
            "application/json"
                | "application/ld+json"
                | "application/xml"
                | "application/javascript"
                | "application/x-javascript"
                | "application/ecmascript"
                | "application/x-ndjson"
                | "application/yaml"
                | "application/x-yaml"
                | "application/toml"
                | "application/x-sh"
                | "application/sql"
                | "application/graphql"
                | "application/x-www-form-urlencoded"
        )
}

/// The body as text: UTF-8 unless the content type or a `<meta charset>` says Latin-1 or
/// windows-1252 (the other single-byte encoding pages still use); invalid bytes become U+FFFD.
fn decode(body: &[u8], content_type: Option<&str>) -> String {
    let declared = content_type
        .and_then(charset_param)
        .or_else(|| sniff_meta_charset(body));
    match declared.as_deref() {
        Some(
            "iso-8859-1" | "latin1" | "latin-1" | "windows-1252" | "cp1252" | "us-ascii" | "ascii",
        ) if std::str::from_utf8(body).is_err() => body
            .iter()
            .map(|&b| windows_1252(b).unwrap_or(char::from(b)))
            .collect(),
        _ => String::from_utf8_lossy(body).into_owned(),
    }
}

fn charset_param(content_type: &str) -> Option<String> {
    content_type.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| v.trim().trim_matches(['"', '\'']).to_ascii_lowercase())
    })
}

fn sniff_meta_charset(body: &[u8]) -> Option<String> {
    let head = String::from_utf8_lossy(&body[..body.len().min(2048)]).to_ascii_lowercase();
    let at = head.find("charset=")? + "charset=".len();
    let value: String = head[at..]
        .trim_start_matches(['"', '\''])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
        .collect();
    (!value.is_empty()).then_some(value)
}

/// The lines before the content: final URL, status, content type, title.
fn header(fetched: &Fetched, page: &Page) -> String {
    let status = fetched.response.status;
    let mut out = format!("URL: {}\n", fetched.url);
    if fetched.url != fetched.requested {
        out.push_str(&format!("Redirected from: {}\n", fetched.requested));
    }
    out.push_str(&format!("Status: {status} {}\n", reason(status)));
    out.push_str(&format!(
        "Content-Type: {}\n",
        fetched.header("content-type").unwrap_or("(none)")
    ));
    if page.kind == Kind::Html {
        out.push_str(&format!(
            "Title: {}\n",
            page.title.as_deref().unwrap_or("(none)")
        ));
    }
    if fetched.response.truncated && page.kind != Kind::Binary {
        out.push_str(&format!(
            "Note: the response is larger than {} MiB; only its first {} MiB were read\n",
            MAX_RESPONSE_BYTES >> 20,
            MAX_RESPONSE_BYTES >> 20
        ));
    }
    out
}

fn error_text(fetched: &Fetched, page: &Page) -> String {
    let status = fetched.response.status;
    let mut out = format!(
        "HTTP {status} {} from {}: the server answered with an error, so there is no page to read. {}\n\n",
        reason(status),
        fetched.url,
        if status == 404 || status == 410 {
            "Check the URL, or search for the page's new address"
        } else if status == 401 || status == 403 {
            "The page needs a login or refuses automated clients"
        } else if status == 429 {
            "The server is rate limiting; wait before retrying"
        } else if status >= 500 {
            "The server failed; retrying later may work"
        } else {
            "Check the URL and the request"
        }
    );
    out.push_str(&header(fetched, page));
    let excerpt: String = page.content.chars().take(ERROR_EXCERPT_CHARS).collect();
    if !excerpt.trim().is_empty() {
        out.push('\n');
        out.push_str(&excerpt);
    }
    out
}

/// The reason phrase of common status codes.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        206 => "Partial Content",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        410 => "Gone",
        429 => "Too Many Requests",
        451 => "Unavailable For Legal Reasons",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}
