//! Rendering: Markdown to HTML and to plain text.

use pulldown_cmark::{CowStr, Event, LinkType, Parser, Tag, TagEnd, html};

use super::options;

/// Renders HTML. Unless `allow_html`, raw HTML is turned into text (so the writer escapes
/// it) and link targets with script-capable schemes are replaced by `#`: Markdown from an
/// untrusted page must not become live markup in whatever displays the result.
pub(super) fn to_html(markdown: &str, allow_html: bool) -> String {
    let events = Parser::new_ext(markdown, options()).map(|event| {
        if allow_html {
            return event;
        }
        match event {
            Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }) => Event::Start(Tag::Link {
                link_type,
                dest_url: safe_url(dest_url, false),
                title,
                id,
            }),
            Event::Start(Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            }) => Event::Start(Tag::Image {
                link_type,
                dest_url: safe_url(dest_url, true),
                title,
                id,
            }),
            other => other,
        }
    });
    let mut out = String::with_capacity(markdown.len() * 3 / 2);
    html::push_html(&mut out, events);
    out
}

/// `url`, or `#` when its scheme can run script. Browsers ignore whitespace and control
/// characters inside a scheme (`java\tscript:`), so those are dropped before comparing.
fn safe_url(url: CowStr<'_>, image: bool) -> CowStr<'_> {
    let squeezed: String = url
        .chars()
        .filter(|c| !c.is_ascii_whitespace() && !c.is_control())
        .take(32)
        .flat_map(char::to_lowercase)
        .collect();
    let dangerous = squeezed.starts_with("javascript:")
        || squeezed.starts_with("vbscript:")
        || (squeezed.starts_with("data:")
            && !(image
                && [
                    "data:image/png",
                    "data:image/gif",
                    "data:image/jpeg",
                    "data:image/webp",
                ]
                .iter()
                .any(|p| squeezed.starts_with(p))));
    if dangerous {
        CowStr::Borrowed("#")
    } else {
        url
    }
}

/// Renders plain text: no markup, blank lines between blocks, list items as `- ` (or `1. `)
/// lines indented two spaces per nesting level, code blocks verbatim.
pub(super) fn to_text(markdown: &str, include_urls: bool) -> String {
    let mut w = TextWriter {
        out: String::with_capacity(markdown.len()),
        include_urls,
        lists: Vec::new(),
        item_fresh: false,
        links: Vec::new(),
        cell: 0,
    };
    for event in Parser::new_ext(markdown, options()) {
        w.event(event);
    }
    let trimmed = w.out.trim_end().len();
    w.out.truncate(trimmed);
    w.out
}

struct TextWriter {
    out: String,
    include_urls: bool,
    /// One entry per open list: the next number for ordered lists.
    lists: Vec<Option<u64>>,
    /// A list marker was just written: the item's first block continues on its line.
    item_fresh: bool,
    /// Open links and images: their URL and where their text starts in `out`.
    links: Vec<(String, usize)>,
    /// The index of the next table cell in the current row.
    cell: usize,
}

impl TextWriter {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text)
            | Event::Code(text)
            | Event::InlineMath(text)
            | Event::DisplayMath(text) => self.write(&text),
            Event::Html(raw) => {
                let text = strip_tags(&raw);
                if !text.trim().is_empty() {
                    self.write(&text);
                }
            }
            Event::InlineHtml(_) => {}
            Event::FootnoteReference(label) => self.write(&format!("[{label}]")),
            Event::SoftBreak | Event::HardBreak => self.write("\n"),
            Event::Rule => {}
            Event::TaskListMarker(checked) => self.write(if checked { "[x] " } else { "[ ] " }),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph
            | Tag::Heading { .. }
            | Tag::CodeBlock(_)
            | Tag::HtmlBlock
            | Tag::Table(_)
            | Tag::MetadataBlock(_)
            | Tag::DefinitionList => self.begin_block(),
            Tag::FootnoteDefinition(label) => {
                self.begin_block();
                self.write(&format!("[{label}]: "));
                // The definition's first paragraph continues the label's line.
                self.item_fresh = true;
            }
            Tag::List(first) => {
                if self.lists.is_empty() {
                    self.begin_block();
                }
                self.lists.push(first);
            }
            Tag::Item => self.start_item(),
            Tag::TableRow => {
                self.newlines(1);
                self.cell = 0;
            }
            Tag::TableHead => self.cell = 0,
            Tag::TableCell => {
                if self.cell > 0 {
                    self.write(" | ");
                }
                self.cell += 1;
            }
            Tag::Link {
                link_type,
                dest_url,
                ..
            } => {
                let url = match link_type {
                    LinkType::Email => format!("mailto:{dest_url}"),
                    _ => dest_url.to_string(),
                };
                self.links.push((url, self.out.len()));
            }
            Tag::Image { dest_url, .. } => self.links.push((dest_url.to_string(), self.out.len())),
            Tag::DefinitionListTitle | Tag::DefinitionListDefinition => self.newlines(1),
            Tag::BlockQuote(_)
            | Tag::Emphasis
            | Tag::Strong
            | Tag::Strikethrough
            | Tag::Superscript
            | Tag::Subscript => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::List(_) => {
                self.lists.pop();
            }
            TagEnd::Link | TagEnd::Image => {
                if let Some((url, start)) = self.links.pop()
                    && self.include_urls
                    && !url.is_empty()
                {
                    let text = self.out.get(start..).unwrap_or("").trim();
                    let redundant = text == url || format!("mailto:{text}") == url;
                    if !redundant {
                        self.write(&format!(" ({url})"));
                    }
                }
            }
            _ => {}
        }
    }

    fn start_item(&mut self) {
        self.item_fresh = false;
        if !self.out.is_empty() {
            self.newlines(1);
        }
        let depth = self.lists.len();
        for _ in 1..depth {
            self.out.push_str("  ");
        }
        match self.lists.last_mut() {
            Some(Some(next)) => {
                self.out.push_str(&format!("{next}. "));
                *next = next.saturating_add(1);
            }
            _ => self.out.push_str("- "),
        }
        self.item_fresh = true;
    }

    /// Separates a new block from what came before: a blank line at the top level, a line
    /// break inside a list, nothing for the first block of a list item.
    fn begin_block(&mut self) {
        if std::mem::take(&mut self.item_fresh) || self.out.is_empty() {
            return;
        }
        self.newlines(if self.lists.is_empty() { 2 } else { 1 });
    }

    /// Ends `out` with exactly `n` line breaks (never fewer than it has).
    fn newlines(&mut self, n: usize) {
        let have = self.out.chars().rev().take_while(|&c| c == '\n').count();
        for _ in have..n {
            self.out.push('\n');
        }
    }

    /// Appends text, indenting every new line to the current list depth.
    fn write(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.item_fresh = false;
        let indent = self.lists.len() * 2;
        for c in text.chars() {
            if c != '\n' && indent > 0 && self.out.ends_with('\n') {
                self.out.extend(std::iter::repeat_n(' ', indent));
            }
            self.out.push(c);
        }
    }
}

/// The text of an HTML block with its tags removed.
fn strip_tags(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}
