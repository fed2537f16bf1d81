//! A small, forgiving HTML parser: bytes of a real-world page in, a tree out.
//!
//! It is not the HTML5 parsing algorithm, and does not try to be: `web_fetch` needs the
//! page's structure well enough to find the article and turn it into Markdown, not a DOM a
//! browser would agree with byte for byte. What it does handle is what breaks naive parsers
//! on real pages: `<script>`/`<style>` bodies (raw text, never parsed as tags), comments and
//! doctypes, void elements, unquoted and valueless attributes, character references, end
//! tags that close several open elements, stray end tags (ignored), and the implied end
//! tags of `p`, `li`, `dt`/`dd`, table rows and cells and `option`.
//!
//! A full HTML5 parser (`html5ever`) would be more exact, at the cost of a dozen crates and
//! a much longer build; the extraction above it is heuristic anyway.

use super::entities::decode_entities;

/// An index into [`Document::nodes`].
pub type NodeId = usize;

/// One node of the tree.
#[derive(Debug, Clone)]
pub enum Node {
    /// An element: lowercase name, attributes (lowercase names, decoded values), children.
    Element {
        /// The tag name, lowercase.
        name: String,
        /// Attributes in source order.
        attrs: Vec<(String, String)>,
        /// Child nodes in order.
        children: Vec<NodeId>,
    },
    /// Text, character references decoded.
    Text(String),
}

/// A parsed page: a root element (`#root`) holding everything.
#[derive(Debug, Clone)]
pub struct Document {
    /// Every node; [`Document::ROOT`] is the root.
    pub nodes: Vec<Node>,
}

/// Elements with no content and no end tag.
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr",
];

/// The deepest nesting kept. Deeper start tags still count, but their content joins the
/// element at this depth: the writers recurse over the tree, and a hostile page of 100,000
/// unclosed `<div>`s must not overflow the stack.
pub const MAX_DEPTH: usize = 256;

/// Elements whose content is raw text up to their end tag.
const RAW_TEXT: &[&str] = &[
    "script", "style", "textarea", "title", "xmp", "noscript", "iframe", "noembed", "noframes",
];

/// Elements a new block-level start tag closes (an open `<p>` ends at `<div>`, say).
const CLOSES_P: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "details",
    "div",
    "dl",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "table",
    "ul",
];

impl Document {
    /// The root node's id.
    pub const ROOT: NodeId = 0;

    /// Parses `html`. Never fails: whatever cannot be understood becomes text or is dropped.
    pub fn parse(html: &str) -> Self {
        let mut doc = Self {
            nodes: vec![Node::Element {
                name: "#root".into(),
                attrs: Vec::new(),
                children: Vec::new(),
            }],
        };
        let mut stack: Vec<NodeId> = vec![Self::ROOT];
        let bytes = html.as_bytes();
        let mut i = 0;
        let mut text_start = 0;
        while i < bytes.len() {
            if bytes[i] != b'<' {
                i += 1;
                continue;
            }
            let rest = &html[i..];
            let tag = if rest.starts_with("<!--") {
                Some(Markup::Skip(
                    rest.find("-->").map_or(html.len(), |e| i + e + 3),
                ))
            } else if rest.starts_with("<!") || rest.starts_with("<?") {
                Some(Markup::Skip(
                    rest.find('>').map_or(html.len(), |e| i + e + 1),
                ))
            } else if rest.starts_with("</") {
                parse_end_tag(html, i)
            } else {
                parse_start_tag(html, i)
            };
            let Some(tag) = tag else {
                // A `<` that opens no tag is text.
                i += 1;
                continue;
            };
            doc.push_text(&stack, &html[text_start..i]);
            match tag {
                Markup::Skip(end) => i = end,
                Markup::End { name, end } => {
                    doc.close(&mut stack, &name);
                    i = end;
                }
                Markup::Start {
                    name,
                    attrs,
                    end,
                    self_closing,
                } => {
                    doc.implied_ends(&mut stack, &name);
                    let id = doc.append(
                        &stack,
                        Node::Element {
                            name: name.clone(),
                            attrs,
                            children: Vec::new(),
                        },
                    );
                    i = end;
                    if RAW_TEXT.contains(&name.as_str()) {
                        let close = find_end_tag(html, i, &name);
                        let body = &html[i..close.0];
                        if !body.is_empty() {
                            let text = if matches!(name.as_str(), "title" | "textarea") {
                                decode_entities(body)
                            } else {
                                body.to_string()
                            };
                            let text_id = doc.nodes.len();
                            doc.nodes.push(Node::Text(text));
                            if let Node::Element { children, .. } = &mut doc.nodes[id] {
                                children.push(text_id);
                            }
                        }
                        i = close.1;
                    } else if !self_closing
                        && !VOID.contains(&name.as_str())
                        && stack.len() < MAX_DEPTH
                    {
                        stack.push(id);
                    }
                }
            }
            text_start = i;
        }
        doc.push_text(&stack, &html[text_start.min(html.len())..]);
        doc
    }

    /// The element's name, or `None` for text.
    pub fn name(&self, id: NodeId) -> Option<&str> {
        match &self.nodes[id] {
            Node::Element { name, .. } => Some(name),
            Node::Text(_) => None,
        }
    }

    /// The element's children (none for text).
    pub fn children(&self, id: NodeId) -> &[NodeId] {
        match &self.nodes[id] {
            Node::Element { children, .. } => children,
            Node::Text(_) => &[],
        }
    }

    /// The value of attribute `name` on element `id`.
    pub fn attr(&self, id: NodeId, name: &str) -> Option<&str> {
        match &self.nodes[id] {
            Node::Element { attrs, .. } => attrs
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str()),
            Node::Text(_) => None,
        }
    }

    /// Every element below `id` (depth first, `id` included) whose name is `name`.
    pub fn find_all(&self, id: NodeId, name: &str) -> Vec<NodeId> {
        let mut out = Vec::new();
        let mut todo = vec![id];
        while let Some(n) = todo.pop() {
            if self.name(n) == Some(name) {
                out.push(n);
            }
            todo.extend(self.children(n).iter().rev());
        }
        out
    }

    /// The first element named `name` below `id` (`id` included), in document order.
    pub fn find(&self, id: NodeId, name: &str) -> Option<NodeId> {
        let mut todo = vec![id];
        while let Some(n) = todo.pop() {
            if self.name(n) == Some(name) {
                return Some(n);
            }
            todo.extend(self.children(n).iter().rev());
        }
        None
    }

    /// All text below `id`, concatenated, whitespace runs collapsed to one space.
    pub fn text(&self, id: NodeId) -> String {
        let mut raw = String::new();
        self.collect_text(id, &mut raw);
        collapse_whitespace(&raw)
    }

    fn collect_text(&self, id: NodeId, out: &mut String) {
        match &self.nodes[id] {
            Node::Text(t) => out.push_str(t),
            Node::Element { name, children, .. } => {
                if matches!(name.as_str(), "script" | "style" | "template") {
                    return;
                }
                for &c in children {
                    self.collect_text(c, out);
                }
                if name == "br" {
                    out.push(' ');
                }
            }
        }
    }

    /// Detaches `id` from its parent `parent`.
    pub fn remove_child(&mut self, parent: NodeId, id: NodeId) {
        if let Node::Element { children, .. } = &mut self.nodes[parent] {
            children.retain(|&c| c != id);
        }
    }

    fn append(&mut self, stack: &[NodeId], node: Node) -> NodeId {
        let id = self.nodes.len();
        self.nodes.push(node);
        let parent = stack.last().copied().unwrap_or(Self::ROOT);
        if let Node::Element { children, .. } = &mut self.nodes[parent] {
            children.push(id);
        }
        id
    }

    fn push_text(&mut self, stack: &[NodeId], raw: &str) {
        if raw.is_empty() {
            return;
        }
        let text = decode_entities(raw);
        // Merge with a preceding text node, so a stray `<` does not split words.
        let parent = stack.last().copied().unwrap_or(Self::ROOT);
        if let Node::Element { children, .. } = &self.nodes[parent]
            && let Some(&last) = children.last()
            && let Node::Text(prev) = &mut self.nodes[last]
        {
            prev.push_str(&text);
            return;
        }
        self.append(stack, Node::Text(text));
    }

    /// Pops the stack down to the innermost open `name`; a stray end tag changes nothing.
    fn close(&mut self, stack: &mut Vec<NodeId>, name: &str) {
        if let Some(pos) = stack.iter().rposition(|&id| self.name(id) == Some(name))
            && pos > 0
        {
            stack.truncate(pos);
        }
    }

    /// Closes what a start tag `name` implicitly ends.
    fn implied_ends(&mut self, stack: &mut Vec<NodeId>, name: &str) {
        let closes: &[&str] = match name {
            "li" => &["li"],
            "dt" | "dd" => &["dt", "dd"],
            "tr" => &["tr", "td", "th"],
            "td" | "th" => &["td", "th"],
            "option" => &["option"],
            _ if CLOSES_P.contains(&name) => &["p"],
            _ => &[],
        };
        // Only look up to the nearest container the implied end cannot cross.
        let barrier: &[&str] = match name {
            "li" => &["ul", "ol", "menu"],
            "dt" | "dd" => &["dl"],
            "tr" | "td" | "th" => &["table"],
            "option" => &["select", "datalist"],
            _ => &[
                "div",
                "article",
                "section",
                "main",
                "blockquote",
                "li",
                "td",
                "th",
                "body",
                "button",
                "table",
            ],
        };
        for pos in (1..stack.len()).rev() {
            let Some(open) = self.name(stack[pos]) else {
                break;
            };
            if closes.contains(&open) {
                stack.truncate(pos);
                // `<tr>` closes an open cell and then its row.
                if name == "tr" {
                    continue;
                }
                return;
            }
            if barrier.contains(&open) {
                return;
            }
        }
    }
}

enum Markup {
    Start {
        name: String,
        attrs: Vec<(String, String)>,
        end: usize,
        self_closing: bool,
    },
    End {
        name: String,
        end: usize,
    },
    /// A comment, doctype or processing instruction ending at the offset.
    Skip(usize),
}

fn is_name_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b':' | b'.')
}

fn parse_end_tag(html: &str, at: usize) -> Option<Markup> {
    let bytes = html.as_bytes();
    let start = at + 2;
    let mut i = start;
    while i < bytes.len() && is_name_char(bytes[i]) {
        i += 1;
    }
    if i == start || !bytes[start].is_ascii_alphabetic() {
        return None;
    }
    let name = html[start..i].to_ascii_lowercase();
    let end = html[i..].find('>').map_or(html.len(), |e| i + e + 1);
    Some(Markup::End { name, end })
}

fn parse_start_tag(html: &str, at: usize) -> Option<Markup> {
    let bytes = html.as_bytes();
    let start = at + 1;
    if start >= bytes.len() || !bytes[start].is_ascii_alphabetic() {
        return None;
    }
    let mut i = start;
    while i < bytes.len() && is_name_char(bytes[i]) {
        i += 1;
    }
    let name = html[start..i].to_ascii_lowercase();
    let mut attrs = Vec::new();
    let mut self_closing = false;
    loop {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= bytes.len() {
            return Some(Markup::Start {
                name,
                attrs,
                end: html.len(),
                self_closing,
            });
        }
        match bytes[i] {
            b'>' => {
                return Some(Markup::Start {
                    name,
                    attrs,
                    end: i + 1,
                    self_closing,
                });
            }
            b'/' => {
                self_closing = true;
                i += 1;
                continue;
            }
            _ => {}
        }
        self_closing = false;
        let name_start = i;
        while i < bytes.len()
            && !bytes[i].is_ascii_whitespace()
            && !matches!(bytes[i], b'=' | b'>' | b'/')
        {
            i += 1;
        }
        if i == name_start {
            // A lone `=` or similar: skip it.
            i += 1;
            continue;
        }
        let attr_name = html[name_start..i].to_ascii_lowercase();
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let mut value = String::new();
        if i < bytes.len() && bytes[i] == b'=' {
            i += 1;
            while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            if i < bytes.len() && matches!(bytes[i], b'"' | b'\'') {
                let quote = bytes[i] as char;
                let value_start = i + 1;
                let value_end = html[value_start..]
                    .find(quote)
                    .map_or(html.len(), |e| value_start + e);
                value = decode_entities(&html[value_start..value_end]);
                i = (value_end + 1).min(html.len());
            } else {
                let value_start = i;
                while i < bytes.len() && !bytes[i].is_ascii_whitespace() && bytes[i] != b'>' {
                    i += 1;
                }
                value = decode_entities(&html[value_start..i]);
            }
        }
        if !attrs.iter().any(|(n, _)| *n == attr_name) {
            attrs.push((attr_name, value));
        }
    }
}

/// Where the end tag `</name>` of a raw-text element starts and ends, from `from`; the end
/// of the input when it is missing.
fn find_end_tag(html: &str, from: usize, name: &str) -> (usize, usize) {
    let bytes = html.as_bytes();
    let mut search = from;
    while let Some(pos) = html[search..].find("</") {
        let start = search + pos;
        let after = start + 2 + name.len();
        if bytes
            .get(start + 2..after)
            .is_some_and(|n| n.eq_ignore_ascii_case(name.as_bytes()))
            && bytes
                .get(after)
                .is_none_or(|&b| b == b'>' || b == b'/' || b.is_ascii_whitespace())
        {
            let end = html[after..]
                .find('>')
                .map_or(html.len(), |e| after + e + 1);
            return (start, end);
        }
        search = start + 2;
    }
    (html.len(), html.len())
}

/// `s` with every run of whitespace turned into one space, trimmed.
pub fn collapse_whitespace(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for word in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}
