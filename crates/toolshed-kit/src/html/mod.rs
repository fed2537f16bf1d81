//! HTML for `web_fetch`: a forgiving parser ([`dom`]), the main-content finder
//! ([`readable`](mod@readable)) and the Markdown, text and HTML writers ([`render`](mod@render)).

pub mod dom;
pub mod entities;
pub mod readable;
pub mod render;

pub use readable::{Readable, readable};
pub use render::{Mode, render, to_html};

/// Plain text of an HTML fragment (a search snippet with `<strong>` in it): tags dropped,
/// references decoded, whitespace collapsed.
pub fn fragment_text(html: &str) -> String {
    if !html.contains(['<', '&']) {
        return dom::collapse_whitespace(html);
    }
    let doc = dom::Document::parse(html);
    doc.text(dom::Document::ROOT)
}
