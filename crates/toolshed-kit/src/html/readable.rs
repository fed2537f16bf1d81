//! Finding the readable main content of a page: what a reader mode keeps.
//!
//! Two passes over the parsed tree. First the chrome goes: elements that are never content
//! (`script`, `nav`, `aside`, `form`, ...) and elements whose `class` or `id` names them as
//! ads, sidebars, menus, cookie banners, comment threads or share buttons. Then the main
//! content is chosen from what is left: the `<article>` with the most text, else `<main>`
//! (or `role="main"`), else the element whose paragraphs hold the most text, the way
//! readability-style extractors score candidates.

use super::dom::{Document, Node, NodeId};

/// Elements dropped wherever they are.
const NEVER_CONTENT: &[&str] = &[
    "script", "style", "noscript", "template", "iframe", "svg", "canvas", "object", "embed",
    "form", "button", "input", "select", "textarea", "nav", "aside", "dialog", "link", "meta",
    "head",
];

/// Elements dropped unless they sit inside an `<article>` or `<main>`, where they hold the
/// article's own title or byline rather than the site's.
const PAGE_CHROME: &[&str] = &["header", "footer"];

/// ARIA roles of page chrome.
const CHROME_ROLES: &[&str] = &[
    "navigation",
    "banner",
    "contentinfo",
    "complementary",
    "search",
    "dialog",
    "alertdialog",
    "menu",
    "menubar",
];

/// Words in a `class` or `id` that mark an element as not content. Compared against the
/// attribute split at spaces, `-` and `_`, so `ad` matches `ad-slot` but not `header` or
/// `download`.
const NOISE_WORDS: &[&str] = &[
    "ad",
    "ads",
    "adsense",
    "advert",
    "advertisement",
    "advertising",
    "sponsor",
    "sponsored",
    "promo",
    "banner",
    "sidebar",
    "menu",
    "navbar",
    "nav",
    "breadcrumb",
    "breadcrumbs",
    "cookie",
    "cookies",
    "consent",
    "gdpr",
    "comment",
    "comments",
    "disqus",
    "share",
    "sharing",
    "social",
    "related",
    "recommended",
    "newsletter",
    "subscribe",
    "signup",
    "popup",
    "modal",
    "outbrain",
    "taboola",
    "widget",
    "masthead",
    "skip",
    "footer",
    "toolbar",
    "pagination",
    "pager",
];

/// The parts of a page `web_fetch` reports.
#[derive(Debug, Clone)]
pub struct Readable {
    /// The page title: `<title>`, else `og:title`, else the first `<h1>`.
    pub title: Option<String>,
    /// The main content element in [`Readable::doc`].
    pub main: NodeId,
    /// The cleaned tree.
    pub doc: Document,
}

/// Parses `html` and finds its main content.
pub fn readable(html: &str) -> Readable {
    let mut doc = Document::parse(html);
    let title = page_title(&doc);
    clean(&mut doc, Document::ROOT, false);
    let main = main_content(&doc);
    Readable { title, main, doc }
}

fn page_title(doc: &Document) -> Option<String> {
    let from_title = doc
        .find(Document::ROOT, "title")
        .map(|t| doc.text(t))
        .filter(|t| !t.is_empty());
    let from_og = || {
        doc.find_all(Document::ROOT, "meta")
            .into_iter()
            .find(|&m| doc.attr(m, "property") == Some("og:title"))
            .and_then(|m| doc.attr(m, "content"))
            .map(super::dom::collapse_whitespace)
            .filter(|t| !t.is_empty())
    };
    let from_h1 = || {
        doc.find(Document::ROOT, "h1")
            .map(|h| doc.text(h))
            .filter(|t| !t.is_empty())
    };
    from_title.or_else(from_og).or_else(from_h1)
}

/// Removes the chrome below `id`. `in_content` says an `<article>` or `<main>` encloses it.
fn clean(doc: &mut Document, id: NodeId, in_content: bool) {
    let children = doc.children(id).to_vec();
    for child in children {
        let Some(name) = doc.name(child) else {
            continue;
        };
        let inside = in_content || matches!(name, "article" | "main");
        if is_chrome(doc, child, in_content) {
            doc.remove_child(id, child);
        } else {
            clean(doc, child, inside);
        }
    }
}

fn is_chrome(doc: &Document, id: NodeId, in_content: bool) -> bool {
    let Some(name) = doc.name(id) else {
        return false;
    };
    if NEVER_CONTENT.contains(&name) || (!in_content && PAGE_CHROME.contains(&name)) {
        return true;
    }
    if doc.attr(id, "hidden").is_some() || doc.attr(id, "aria-hidden") == Some("true") {
        return true;
    }
    if doc.attr(id, "style").is_some_and(|s| {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        s.to_ascii_lowercase().contains("display:none")
    }) {
        return true;
    }
    if doc
        .attr(id, "role")
        .is_some_and(|r| CHROME_ROLES.contains(&r.trim()))
    {
        return true;
    }
    // The containers of the page itself are never dropped by name, whatever their classes
    // say (`<body class="has-sidebar">`).
    if matches!(name, "html" | "body" | "article" | "main") {
        return false;
    }
    let named_noise = ["class", "id"]
        .iter()
        .any(|attr| doc.attr(id, attr).is_some_and(names_noise));
    // A layout wrapper can carry such a name (`<div class="content sidebar-left">`) and
    // still hold the article: keep anything holding an article, the main element or the
    // page's top heading.
    named_noise
        && !["article", "main", "h1"]
            .iter()
            .any(|n| doc.find(id, n).is_some())
}

/// Whether a `class` or `id` value names ads, menus and the like. Layout descriptions
/// (`has-sidebar`, `no-ads`, `with-comments`) do not count.
fn names_noise(value: &str) -> bool {
    value.split_whitespace().any(|name| {
        let lower = name.to_ascii_lowercase();
        let mut words = lower.split(['-', '_']);
        let first = words.next().unwrap_or_default();
        if matches!(
            first,
            "has" | "no" | "with" | "without" | "is" | "show" | "hide"
        ) {
            return false;
        }
        std::iter::once(first)
            .chain(words)
            .any(|word| NOISE_WORDS.contains(&word))
    })
}

/// Chooses the main content element of a cleaned tree.
fn main_content(doc: &Document) -> NodeId {
    let (parent, text_len) = measure(doc);
    let articles = doc.find_all(Document::ROOT, "article");
    // Articles inside another article (comments marked up as articles) do not compete.
    let outer: Vec<NodeId> = articles
        .iter()
        .copied()
        .filter(|&a| !ancestors(&parent, a).any(|up| doc.name(up) == Some("article")))
        .collect();
    let all_text: usize = outer.iter().map(|&a| text_len[a]).sum();
    if let Some(best) = outer.iter().copied().max_by_key(|&a| text_len[a])
        && text_len[best] >= 150
    {
        // One article holding most of the articles' text is the page's article; many of a
        // size are a listing (a blog index, search results), read as a whole.
        if text_len[best] * 2 >= all_text {
            return best;
        }
        if let Some(common) = common_ancestor(&parent, &outer) {
            return common;
        }
    }
    let mains: Vec<NodeId> = all_elements(doc)
        .filter(|&e| doc.name(e) == Some("main") || doc.attr(e, "role") == Some("main"))
        .collect();
    if let Some(&main) = mains.iter().find(|&&m| text_len[m] >= 150) {
        return main;
    }
    best_by_paragraphs(doc, &parent, &text_len)
        .or_else(|| articles.first().copied())
        .or_else(|| mains.first().copied())
        .or_else(|| doc.find(Document::ROOT, "body"))
        .unwrap_or(Document::ROOT)
}

/// The ancestors of `id`, nearest first.
fn ancestors(parent: &[Option<NodeId>], id: NodeId) -> impl Iterator<Item = NodeId> + '_ {
    std::iter::successors(parent[id], move |&up| parent[up])
}

/// The nearest element enclosing all of `ids`.
fn common_ancestor(parent: &[Option<NodeId>], ids: &[NodeId]) -> Option<NodeId> {
    let (&first, rest) = ids.split_first()?;
    let mut chain: Vec<NodeId> = ancestors(parent, first).collect();
    for &id in rest {
        let theirs: std::collections::HashSet<NodeId> = ancestors(parent, id).collect();
        let keep = chain.iter().position(|a| theirs.contains(a))?;
        chain.drain(..keep);
    }
    chain.first().copied()
}

/// Every node's parent, and how many non-whitespace characters of text each node holds,
/// in one pass: a child's id is always larger than its parent's, so walking the ids
/// backwards adds each node into its parent after all of its own children.
fn measure(doc: &Document) -> (Vec<Option<NodeId>>, Vec<usize>) {
    let mut parent = vec![None; doc.nodes.len()];
    for id in all_elements(doc) {
        if matches!(doc.name(id), Some("script" | "style" | "template")) {
            continue;
        }
        for &c in doc.children(id) {
            parent[c] = Some(id);
        }
    }
    let mut len = vec![0usize; doc.nodes.len()];
    for id in (0..doc.nodes.len()).rev() {
        if let Node::Text(t) = &doc.nodes[id] {
            len[id] = t.chars().filter(|c| !c.is_whitespace()).count();
        }
        if let Some(up) = parent[id] {
            len[up] += len[id];
        }
    }
    (parent, len)
}

/// Every element still in the tree, in document order.
fn all_elements(doc: &Document) -> impl Iterator<Item = NodeId> + '_ {
    let mut todo = vec![Document::ROOT];
    std::iter::from_fn(move || {
        while let Some(id) = todo.pop() {
            if doc.name(id).is_some() {
                todo.extend(doc.children(id).iter().rev());
                return Some(id);
            }
        }
        None
    })
}

/// The element whose child paragraphs hold the most text (half credit to grandparents, so
/// an article split into sections still wins as a whole), if any paragraph has text.
fn best_by_paragraphs(
    doc: &Document,
    parent: &[Option<NodeId>],
    text_len: &[usize],
) -> Option<NodeId> {
    let mut score = vec![0usize; doc.nodes.len()];
    for p in all_elements(doc).filter(|&e| doc.name(e) == Some("p")) {
        let len = text_len[p];
        if len < 20 {
            continue;
        }
        if let Some(up) = parent[p] {
            score[up] += len;
            if let Some(grand) = parent[up] {
                score[grand] += len / 2;
            }
        }
    }
    let (best, &top) = score.iter().enumerate().max_by_key(|&(_, s)| *s)?;
    (top > 0).then_some(best)
}
