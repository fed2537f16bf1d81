//! Turning the main content into Markdown, plain text or cleaned HTML.
//!
//! The Markdown walk keeps what carries meaning for a reader: headings, paragraphs, lists
//! (nested), links and images with absolute URLs, emphasis, inline code and fenced code
//! blocks (with the language a `language-*` class names), blockquotes and simple tables.
//! Plain text is the same walk without the markup.

use url::Url;

use super::dom::{Document, Node, NodeId, collapse_whitespace};

/// What the walk writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// CommonMark with GitHub tables.
    Markdown,
    /// Plain text: no markup, list bullets kept.
    Text,
}

/// Elements whose content starts a new block.
const BLOCKS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "body",
    "center",
    "dd",
    "details",
    "dialog",
    "dir",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hgroup",
    "hr",
    "html",
    "legend",
    "li",
    "main",
    "menu",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "tr",
    "ul",
    "#root",
    "caption",
];

/// Renders element `id` of `doc` in `mode`, resolving links against `base`.
pub fn render(doc: &Document, id: NodeId, base: Option<&Url>, mode: Mode) -> String {
    let writer = Writer { doc, base, mode };
    let mut blocks = Blocks::default();
    writer.block_children(id, &mut blocks);
    blocks.finish().join("\n\n")
}

struct Writer<'a> {
    doc: &'a Document,
    base: Option<&'a Url>,
    mode: Mode,
}

/// Blocks collected so far plus the inline text of the block being built.
#[derive(Default)]
struct Blocks {
    done: Vec<String>,
    inline: String,
}

impl Blocks {
    /// Ends the current inline run as a paragraph.
    fn flush(&mut self) {
        let text = tidy_inline(&self.inline);
        self.inline.clear();
        if !text.is_empty() {
            self.done.push(text);
        }
    }

    fn push(&mut self, block: String) {
        self.flush();
        if !block.trim().is_empty() {
            self.done.push(block);
        }
    }

    fn finish(mut self) -> Vec<String> {
        self.flush();
        self.done
    }
}

/// Trims each line of an inline run and drops the spaces collapsing left doubled.
fn tidy_inline(s: &str) -> String {
    s.split('\n')
        .map(collapse_whitespace)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

impl Writer<'_> {
    fn md(&self) -> bool {
        self.mode == Mode::Markdown
    }

    fn block_children(&self, id: NodeId, out: &mut Blocks) {
        for &child in self.doc.children(id) {
            self.node_in_block(child, out);
        }
    }

    fn node_in_block(&self, id: NodeId, out: &mut Blocks) {
        let name = match &self.doc.nodes[id] {
            Node::Text(t) => {
                out.inline.push_str(&space_runs(t));
                return;
            }
            Node::Element { name, .. } => name.as_str(),
        };
        if !BLOCKS.contains(&name) {
            out.inline.push_str(&self.inline(id));
            return;
        }
        match name {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                let text = tidy_inline(&self.inline_children(id)).replace('\n', " ");
                if !text.is_empty() {
                    let level = usize::from(name.as_bytes()[1] - b'0');
                    out.push(if self.md() {
                        format!("{} {text}", "#".repeat(level))
                    } else {
                        text
                    });
                }
            }
            "hr" => out.push(if self.md() {
                "---".into()
            } else {
                String::new()
            }),
            "pre" => out.push(self.code_block(id)),
            "ul" | "ol" | "menu" | "dir" => out.push(self.list(id, name == "ol")),
            "blockquote" => {
                let inner = self.blocks_of(id).join("\n\n");
                let prefix = if self.md() { "> " } else { "  " };
                out.push(prefix_lines(&inner, prefix, prefix));
            }
            "table" => out.push(self.table(id)),
            "dt" => {
                let text = tidy_inline(&self.inline_children(id));
                out.push(if self.md() && !text.is_empty() {
                    format!("**{text}**")
                } else {
                    text
                });
            }
            "dd" => {
                let inner = self.blocks_of(id).join("\n\n");
                out.push(prefix_lines(&inner, ": ", "  "));
            }
            _ => {
                out.flush();
                self.block_children(id, out);
                out.flush();
            }
        }
    }

    /// The blocks inside `id`, rendered on their own.
    fn blocks_of(&self, id: NodeId) -> Vec<String> {
        let mut inner = Blocks::default();
        self.block_children(id, &mut inner);
        inner.finish()
    }

    fn inline_children(&self, id: NodeId) -> String {
        let mut s = String::new();
        for &c in self.doc.children(id) {
            s.push_str(&self.inline(c));
        }
        s
    }

    /// One node as inline text. Blocks met here (a `<div>` in a link) flow as inline text.
    fn inline(&self, id: NodeId) -> String {
        let name = match &self.doc.nodes[id] {
            Node::Text(t) => return space_runs(t),
            Node::Element { name, .. } => name.as_str(),
        };
        match name {
            "br" => "\n".into(),
            "img" => self.image(id),
            "a" => self.link(id),
            "strong" | "b" => self.wrap(id, "**"),
            "em" | "i" | "cite" => self.wrap(id, "*"),
            "del" | "s" | "strike" => self.wrap(id, "~~"),
            "code" | "kbd" | "samp" | "tt" => {
                let code = collapse_whitespace(&self.doc.text(id));
                if code.is_empty() || !self.md() {
                    return code;
                }
                let fence = if code.contains('`') { "``" } else { "`" };
                format!("{fence}{code}{fence}")
            }
            _ if BLOCKS.contains(&name) => format!(" {} ", self.inline_children(id)),
            _ => self.inline_children(id),
        }
    }

    /// `**text**` around the children, spaces kept outside the markers.
    fn wrap(&self, id: NodeId, marker: &str) -> String {
        let inner = self.inline_children(id);
        let trimmed = inner.trim();
        if trimmed.is_empty() || !self.md() {
            return inner;
        }
        let lead = if inner.starts_with(char::is_whitespace) {
            " "
        } else {
            ""
        };
        let trail = if inner.ends_with(char::is_whitespace) {
            " "
        } else {
            ""
        };
        format!("{lead}{marker}{trimmed}{marker}{trail}")
    }

    fn link(&self, id: NodeId) -> String {
        let inner = self.inline_children(id);
        let text = tidy_inline(&inner).replace('\n', " ");
        let href = self.doc.attr(id, "href").map(str::trim).unwrap_or_default();
        if !self.md() || href.is_empty() || href.starts_with('#') {
            return inner;
        }
        let Some(url) = self.absolute(href) else {
            return inner;
        };
        if text.is_empty() {
            return String::new();
        }
        let lead = if inner.starts_with(char::is_whitespace) {
            " "
        } else {
            ""
        };
        let trail = if inner.ends_with(char::is_whitespace) {
            " "
        } else {
            ""
        };
        format!("{lead}[{}]({}){trail}", text.replace(['[', ']'], ""), url)
    }

    fn image(&self, id: NodeId) -> String {
        let alt = collapse_whitespace(self.doc.attr(id, "alt").unwrap_or_default());
        if !self.md() {
            return alt;
        }
        let src = self.doc.attr(id, "src").map(str::trim).unwrap_or_default();
        match self.absolute(src) {
            Some(url) if !src.is_empty() => {
                format!("![{}]({})", alt.replace(['[', ']'], ""), url)
            }
            _ => alt,
        }
    }

    /// `href` made absolute against the page, percent-encoding spaces and parentheses so
    /// the Markdown link stays one token; `None` for `javascript:` and unparseable targets.
    fn absolute(&self, href: &str) -> Option<String> {
        let url = match self.base {
            Some(base) => base.join(href).ok()?,
            None => Url::parse(href).ok()?,
        };
        if !matches!(url.scheme(), "http" | "https" | "mailto" | "ftp") {
            return None;
        }
        Some(url.as_str().replace('(', "%28").replace(')', "%29"))
    }

    fn code_block(&self, id: NodeId) -> String {
        let mut raw = String::new();
        self.raw_text(id, &mut raw);
        let code = raw.strip_prefix('\n').unwrap_or(&raw).trim_end();
        if !self.md() {
            return code.to_string();
        }
        let language = self
            .language(id)
            .or_else(|| self.doc.find(id, "code").and_then(|c| self.language(c)))
            .unwrap_or_default();
        let fence = if code.contains("```") { "~~~~" } else { "```" };
        format!("{fence}{language}\n{code}\n{fence}")
    }

    /// The language a `language-x` or `lang-x` class names.
    fn language(&self, id: NodeId) -> Option<String> {
        self.doc
            .attr(id, "class")?
            .split_whitespace()
            .find_map(|c| {
                c.strip_prefix("language-")
                    .or_else(|| c.strip_prefix("lang-"))
                    .map(str::to_string)
            })
    }

    /// Text below `id` exactly as written (for `<pre>`), `<br>` as a line break.
    fn raw_text(&self, id: NodeId, out: &mut String) {
        match &self.doc.nodes[id] {
            Node::Text(t) => out.push_str(t),
            Node::Element { name, children, .. } => {
                if name == "br" {
                    out.push('\n');
                }
                for &c in children {
                    self.raw_text(c, out);
                }
            }
        }
    }

    fn list(&self, id: NodeId, ordered: bool) -> String {
        let mut number: i64 = self
            .doc
            .attr(id, "start")
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(1);
        let mut items = Vec::new();
        for &child in self.doc.children(id) {
            let blocks = match self.doc.name(child) {
                Some("li") => self.blocks_of(child),
                // Text or inline elements straight in a list: keep them as an item.
                _ => {
                    let mut b = Blocks::default();
                    self.node_in_block(child, &mut b);
                    b.finish()
                }
            };
            if blocks.is_empty() {
                continue;
            }
            let marker = if ordered {
                format!("{number}. ")
            } else {
                "- ".to_string()
            };
            number += 1;
            let indent = " ".repeat(marker.chars().count());
            items.push(prefix_lines(&blocks.join("\n"), &marker, &indent));
        }
        items.join("\n")
    }

    fn table(&self, id: NodeId) -> String {
        // The table's own rows: children, or children of its row groups. Rows of tables
        // nested in cells belong to those tables.
        let own_rows = self
            .doc
            .children(id)
            .iter()
            .flat_map(|&c| match self.doc.name(c) {
                Some("tr") => vec![c],
                Some("thead" | "tbody" | "tfoot") => self
                    .doc
                    .children(c)
                    .iter()
                    .copied()
                    .filter(|&r| self.doc.name(r) == Some("tr"))
                    .collect(),
                _ => Vec::new(),
            });
        let rows: Vec<Vec<String>> = own_rows
            .map(|tr| {
                self.doc
                    .children(tr)
                    .iter()
                    .filter(|&&c| matches!(self.doc.name(c), Some("td" | "th")))
                    .map(|&c| {
                        tidy_inline(&self.inline_children(c))
                            .replace('\n', " ")
                            .replace('|', "\\|")
                    })
                    .collect()
            })
            .filter(|row: &Vec<String>| !row.is_empty())
            .collect();
        let Some(width) = rows.iter().map(Vec::len).max() else {
            return String::new();
        };
        let line = |row: &[String]| {
            let mut cells: Vec<String> = row.to_vec();
            cells.resize(width, String::new());
            if self.md() {
                format!("| {} |", cells.join(" | "))
            } else {
                cells.join("\t")
            }
        };
        let mut out = vec![line(&rows[0])];
        if self.md() {
            out.push(format!("|{}", " --- |".repeat(width)));
        }
        out.extend(rows[1..].iter().map(|r| line(r)));
        out.join("\n")
    }
}

/// Whitespace runs in a text node as single spaces (newlines included), ends kept as one
/// space so words of adjacent nodes stay apart.
fn space_runs(t: &str) -> String {
    let mut out = String::with_capacity(t.len());
    let mut in_space = false;
    for c in t.chars() {
        if c.is_whitespace() && c != '\u{a0}' {
            if !in_space {
                out.push(' ');
            }
            in_space = true;
        } else {
            out.push(if c == '\u{a0}' { ' ' } else { c });
            in_space = false;
        }
    }
    out
}

/// `text` with `first` before its first line and `rest` before every other non-empty one.
fn prefix_lines(text: &str, first: &str, rest: &str) -> String {
    let mut out = String::new();
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if i == 0 {
            out.push_str(first);
        } else if !line.is_empty() {
            out.push_str(rest);
        } else {
            out.push_str(rest.trim_end());
        }
        out.push_str(line);
    }
    out
}

/// The cleaned HTML of element `id`: structure kept, attributes reduced to the ones that
/// carry meaning (`href` and `src` made absolute, `alt`, `title`, spans, a code language).
pub fn to_html(doc: &Document, id: NodeId, base: Option<&Url>) -> String {
    let mut out = String::new();
    html_node(doc, id, base, &mut out);
    out.trim().to_string()
}

const KEPT_ATTRS: &[&str] = &["href", "src", "alt", "title", "colspan", "rowspan", "start"];
const VOID_OUT: &[&str] = &["br", "hr", "img", "wbr", "col"];

fn html_node(doc: &Document, id: NodeId, base: Option<&Url>, out: &mut String) {
    match &doc.nodes[id] {
        Node::Text(t) => out.push_str(&escape_html(t)),
        Node::Element {
            name,
            attrs,
            children,
        } => {
            let shown = !matches!(name.as_str(), "#root" | "html" | "body");
            if shown {
                out.push('<');
                out.push_str(name);
                for (key, value) in attrs {
                    let keep = KEPT_ATTRS.contains(&key.as_str())
                        || (key == "class" && value.contains("language-"));
                    if !keep {
                        continue;
                    }
                    let value = if matches!(key.as_str(), "href" | "src") {
                        let joined = match base {
                            Some(b) => b.join(value.trim()),
                            None => Url::parse(value.trim()),
                        };
                        // `javascript:` and other schemes that run or embed are dropped.
                        match joined {
                            Ok(u) if matches!(u.scheme(), "http" | "https" | "mailto") => {
                                u.to_string()
                            }
                            _ => continue,
                        }
                    } else {
                        value.clone()
                    };
                    out.push_str(&format!(" {key}=\"{}\"", escape_html(&value)));
                }
                out.push('>');
            }
            if VOID_OUT.contains(&name.as_str()) {
                return;
            }
            for &c in children {
                html_node(doc, c, base, out);
            }
            if shown {
                out.push_str(&format!("</{name}>"));
            }
        }
    }
}

/// `s` with `&`, `<`, `>` and `"` escaped.
pub fn escape_html(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
