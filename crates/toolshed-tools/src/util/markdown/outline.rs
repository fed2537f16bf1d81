//! The outline of a document: headings with GitHub-style anchors, a table of contents, and
//! every link and image.

use std::collections::HashMap;

use pulldown_cmark::{Event, LinkType, Parser, Tag, TagEnd};
use serde_json::{Value, json};
use toolshed_core::ToolOutput;

use super::{LineIndex, options};

/// At most this many links are reported; a document with more is cut and says so.
const MAX_LINKS: usize = 10_000;

/// One heading of the document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Heading {
    pub level: u8,
    pub text: String,
    pub slug: String,
    pub line: usize,
}

/// Every heading, in document order, with unique slugs.
pub(super) fn headings(markdown: &str) -> Vec<Heading> {
    let lines = LineIndex::new(markdown);
    let mut slugger = Slugger::default();
    let mut out = Vec::new();
    let mut open: Option<(u8, usize, String)> = None;
    for (event, range) in Parser::new_ext(markdown, options()).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                open = Some((level as u8, lines.line(range.start), String::new()));
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, line, text)) = open.take() {
                    let text = text.trim().to_string();
                    let slug = slugger.slug(&text);
                    out.push(Heading {
                        level,
                        text,
                        slug,
                        line,
                    });
                }
            }
            Event::Text(t) | Event::Code(t) | Event::InlineMath(t) | Event::DisplayMath(t) => {
                if let Some((_, _, text)) = open.as_mut() {
                    text.push_str(&t);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some((_, _, text)) = open.as_mut() {
                    text.push(' ');
                }
            }
            _ => {}
        }
    }
    out
}

/// Anchors the way GitHub makes them (github-slugger): lowercase, spaces to `-`, everything
/// but letters, digits, `-` and `_` dropped; a repeated slug gets `-1`, `-2`, ….
#[derive(Default)]
struct Slugger {
    occurrences: HashMap<String, usize>,
}

impl Slugger {
    fn slug(&mut self, text: &str) -> String {
        let base: String = text
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                '-' | '_' => Some(c),
                c if c.is_alphanumeric() => Some(c),
                _ => None,
            })
            .collect();
        let mut slug = base.clone();
        while self.occurrences.contains_key(&slug) {
            let count = self.occurrences.entry(base.clone()).or_insert(0);
            *count += 1;
            slug = format!("{base}-{count}");
        }
        self.occurrences.insert(slug.clone(), 0);
        slug
    }
}

pub(super) fn headings_output(markdown: &str) -> ToolOutput {
    let found = headings(markdown);
    let text = if found.is_empty() {
        "No headings found.".to_string()
    } else {
        found
            .iter()
            .map(|h| {
                format!(
                    "{} {} (#{}, line {})",
                    "#".repeat(usize::from(h.level)),
                    h.text,
                    h.slug,
                    h.line
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let list: Vec<Value> = found
        .iter()
        .map(|h| json!({"level": h.level, "text": h.text, "slug": h.slug, "line": h.line}))
        .collect();
    ToolOutput::text_and_structured(text, json!({"headings": list, "count": found.len()}))
}

/// A nested bullet list of links to the headings up to `max_level`. Slugs are computed over
/// all headings, deeper ones included, so duplicate suffixes match what GitHub renders.
pub(super) fn toc(markdown: &str, max_level: u8) -> (String, Vec<(Heading, usize)>) {
    let mut entries = Vec::new();
    // The levels of the enclosing entries; a heading nests under the nearest shallower one,
    // so skipping a level (h1 then h3) indents by one step, not two.
    let mut stack: Vec<u8> = Vec::new();
    let mut out = String::new();
    for heading in headings(markdown) {
        if heading.level > max_level {
            continue;
        }
        while stack.last().is_some_and(|&l| l >= heading.level) {
            stack.pop();
        }
        let depth = stack.len();
        stack.push(heading.level);
        out.push_str(&"  ".repeat(depth));
        out.push_str(&format!(
            "- [{}](#{})\n",
            escape_link_text(&heading.text),
            heading.slug
        ));
        entries.push((heading, depth));
    }
    (out, entries)
}

pub(super) fn toc_output(markdown: &str, max_level: u8) -> ToolOutput {
    let (markdown_toc, entries) = toc(markdown, max_level);
    let text = if entries.is_empty() {
        format!("No headings up to level {max_level}.")
    } else {
        markdown_toc.trim_end().to_string()
    };
    let list: Vec<Value> = entries
        .iter()
        .map(|(h, depth)| {
            json!({"level": h.level, "text": h.text, "slug": h.slug, "line": h.line, "depth": depth})
        })
        .collect();
    ToolOutput::text_and_structured(
        text,
        json!({"toc": markdown_toc, "max_level": max_level, "entries": list}),
    )
}

/// Escapes the characters that would turn heading text into markup inside `[...]`.
fn escape_link_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '\\' | '[' | ']' | '*' | '_' | '`' | '<') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// One link or image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Link {
    pub text: String,
    pub url: String,
    pub title: String,
    pub kind: &'static str,
    pub line: usize,
    /// The reference label, for reference-style links.
    pub reference: Option<String>,
}

/// Every link and image in document order (an image inside a link comes after the link),
/// and whether the list was cut at [`MAX_LINKS`].
pub(super) fn links(markdown: &str) -> (Vec<Link>, bool) {
    let lines = LineIndex::new(markdown);
    let mut out: Vec<Link> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    let mut truncated = false;
    for (event, range) in Parser::new_ext(markdown, options()).into_offset_iter() {
        match event {
            Event::Start(Tag::Link { .. } | Tag::Image { .. }) if out.len() >= MAX_LINKS => {
                truncated = true;
                break;
            }
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }) => {
                let (kind, url) = match link_type {
                    LinkType::Autolink => ("autolink", dest_url.to_string()),
                    LinkType::Email => ("autolink", format!("mailto:{dest_url}")),
                    _ => ("link", dest_url.to_string()),
                };
                open.push(out.len());
                out.push(Link {
                    text: String::new(),
                    url,
                    title: title.to_string(),
                    kind,
                    line: lines.line(range.start),
                    reference: reference_label(link_type, &id),
                });
            }
            Event::Start(Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            }) => {
                open.push(out.len());
                out.push(Link {
                    text: String::new(),
                    url: dest_url.to_string(),
                    title: title.to_string(),
                    kind: "image",
                    line: lines.line(range.start),
                    reference: reference_label(link_type, &id),
                });
            }
            Event::End(TagEnd::Link | TagEnd::Image) => {
                open.pop();
            }
            Event::Text(t) | Event::Code(t) | Event::InlineMath(t) => {
                for &i in &open {
                    if let Some(link) = out.get_mut(i) {
                        link.text.push_str(&t);
                    }
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                for &i in &open {
                    if let Some(link) = out.get_mut(i) {
                        link.text.push(' ');
                    }
                }
            }
            _ => {}
        }
    }
    (out, truncated)
}

fn reference_label(link_type: LinkType, id: &str) -> Option<String> {
    match link_type {
        LinkType::Reference | LinkType::Collapsed | LinkType::Shortcut => Some(id.to_string()),
        _ => None,
    }
}

pub(super) fn links_output(markdown: &str) -> ToolOutput {
    let (found, truncated) = links(markdown);
    let mut text = if found.is_empty() {
        "No links or images found.".to_string()
    } else {
        found
            .iter()
            .map(|l| format!("line {}: {} [{}]({})", l.line, l.kind, l.text, l.url))
            .collect::<Vec<_>>()
            .join("\n")
    };
    if truncated {
        text.push_str(&format!(
            "\n(stopped after {MAX_LINKS} links; split the document to see the rest)"
        ));
    }
    let list: Vec<Value> = found
        .iter()
        .map(|l| {
            let mut entry = json!({
                "text": l.text, "url": l.url, "title": l.title, "kind": l.kind, "line": l.line
            });
            if let (Some(reference), Some(map)) = (&l.reference, entry.as_object_mut()) {
                map.insert("reference".into(), json!(reference));
            }
            entry
        })
        .collect();
    ToolOutput::text_and_structured(
        text,
        json!({"links": list, "count": found.len(), "truncated": truncated}),
    )
}
