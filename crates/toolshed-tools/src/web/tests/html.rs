//! The HTML parser and writers on their own: the cases real pages throw at them.

use url::Url;

use crate::web::html::dom::Document;
use crate::web::html::{Mode, fragment_text, readable, render};

fn markdown(html: &str) -> String {
    let page = readable(html);
    let base = Url::parse("https://site.example/dir/page.html").unwrap();
    render(&page.doc, page.main, Some(&base), Mode::Markdown)
}

#[test]
fn implied_end_tags_and_stray_markup() {
    let md = markdown(
        "<body><p>One<p>Two <b>bold</i> text</b><ul><li>a<li>b<ul><li>b1</ul><li>c</ul>\
         <p>x < y & z &copy; &#8217; &#x41; &bogus;</p></body>",
    );
    assert_eq!(
        md,
        "One\n\nTwo **bold text**\n\n- a\n- b\n  - b1\n- c\n\nx < y & z © ’ A &bogus;"
    );
}

#[test]
fn raw_text_elements_and_comments_are_not_parsed_as_markup() {
    let doc = Document::parse(
        "<div><!-- <p>hidden</p> --><script>if (a<b) { document.write('<p>x</p>') }</script>\
         <SCRIPT type=x>var s = \"</scripts>\";</SCRIPT><p>Visible</p></div>",
    );
    assert_eq!(doc.text(Document::ROOT), "Visible");
}

#[test]
fn attributes_unquoted_valueless_and_entity_encoded() {
    let doc = Document::parse("<a href=/x?a=1&amp;b=2 data-x hidden title='it&#39;s'>t</a>");
    let a = doc.find(Document::ROOT, "a").unwrap();
    assert_eq!(doc.attr(a, "href"), Some("/x?a=1&b=2"));
    assert_eq!(doc.attr(a, "data-x"), Some(""));
    assert_eq!(doc.attr(a, "title"), Some("it's"));
}

#[test]
fn links_are_absolute_and_scripts_links_dropped() {
    let md = markdown(
        "<p><a href='../up.html'>up</a> <a href='//cdn.example/x'>cdn</a> \
         <a href='javascript:alert(1)'>js</a> <a href='#top'>top</a> \
         <img src='img/a b.png' alt='A (pic)'></p>",
    );
    assert_eq!(
        md,
        "[up](https://site.example/up.html) [cdn](https://cdn.example/x) js top \
         ![A (pic)](https://site.example/dir/img/a%20b.png)"
    );
}

#[test]
fn the_main_content_is_found_without_article_or_main() {
    let long = "This paragraph is long enough to count as real content in the scoring. ".repeat(3);
    let html = format!(
        "<body><div class='top'><p>Short teaser.</p></div>\
         <div class='story'><h1>Story</h1><p>{long}</p><p>{long}</p></div>\
         <div class='footer-links'><p>Contact us</p></div></body>"
    );
    let md = markdown(&html);
    assert!(md.starts_with("# Story\n\nThis paragraph"), "{md}");
    assert!(!md.contains("teaser") && !md.contains("Contact"), "{md}");
}

#[test]
fn fragments_become_plain_text() {
    assert_eq!(
        fragment_text("The <strong>best</strong> &amp; most"),
        "The best & most"
    );
    assert_eq!(fragment_text("plain  text"), "plain text");
}

#[test]
fn deep_nesting_is_flattened_so_the_writers_cannot_overflow_the_stack() {
    let html = format!("{}<p>deep text</p>", "<div><span><b>".repeat(50_000));
    let md = markdown(&html);
    assert!(md.contains("deep text"), "{md}");
    let page = readable(&html);
    let html_out = crate::web::html::to_html(&page.doc, page.main, None);
    assert!(html_out.contains("deep text"));
}

#[test]
fn deep_nesting_of_lists_quotes_and_tables_stays_within_the_stack() {
    let html = format!(
        "{}<p>deep text</p>",
        "<blockquote><ul><li><table><tr><td><a href='/x'><dl><dd>".repeat(2_000)
    );
    let page = readable(&html);
    for mode in [Mode::Markdown, Mode::Text] {
        let out = render(&page.doc, page.main, None, mode);
        assert!(out.contains("deep text"));
    }
}

#[test]
fn layout_wrappers_named_like_chrome_keep_the_article() {
    let long = "Real article text that a reader came for, long enough to count. ".repeat(4);
    let html = format!(
        "<body class='has-sidebar'><div class='container layout-sidebar-right'>\
         <div id='ad-top' class='ad'>Buy now</div>\
         <div class='content-wrap no-ads'><article><h1>Title</h1><p>{long}</p></article></div>\
         <div class='sidebar'>Sidebar links</div></div></body>"
    );
    let md = markdown(&html);
    assert!(md.starts_with("# Title\n\nReal article text"), "{md}");
    assert!(
        !md.contains("Buy now") && !md.contains("Sidebar links"),
        "{md}"
    );
}

#[test]
fn a_listing_of_articles_is_read_as_a_whole() {
    let card = |n: u32| {
        format!(
            "<article><h2><a href='/p/{n}'>Post {n}</a></h2><p>Summary of post number {n}, \
             long enough to be a real teaser for the reader of this blog index page, \
             and then some more words so that every card alone has enough text to be \
             taken for an article.</p></article>"
        )
    };
    let html = format!(
        "<body><nav>Home</nav><div class='posts'>{}{}{}</div><footer>Footer</footer></body>",
        card(1),
        card(2),
        card(3)
    );
    let md = markdown(&html);
    for n in 1..=3 {
        assert!(
            md.contains(&format!("## [Post {n}](https://site.example/p/{n})")),
            "{md}"
        );
    }
    assert!(!md.contains("Home") && !md.contains("Footer"), "{md}");

    // An article with a comment marked up as a nested article is still one article.
    let long = "The article's own text goes on for a while, as articles do. ".repeat(5);
    let html = format!(
        "<body><article><h1>Main</h1><p>{long}</p><article><p>{long}</p></article></article>\
         <div>Outside</div></body>"
    );
    let md = markdown(&html);
    assert!(md.starts_with("# Main") && !md.contains("Outside"), "{md}");
}
