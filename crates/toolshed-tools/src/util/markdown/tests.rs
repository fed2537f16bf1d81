use serde_json::{Value, json};
use toolshed_core::{ErrorKind, ToolError, ToolOutput};

use super::plugin;
use crate::util::test_support;

async fn ok(args: Value) -> ToolOutput {
    test_support::ok(&plugin(), args).await
}

async fn err(args: Value) -> ToolError {
    test_support::err(&plugin(), args).await
}

async fn op(operation: &str, markdown: &str) -> ToolOutput {
    ok(json!({"operation": operation, "markdown": markdown})).await
}

#[tokio::test]
async fn to_html_renders_extensions() {
    let md = "# Title\n\n~~old~~ **new**\n\n- [x] done\n- [ ] todo\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nNote[^n].\n\n[^n]: Here.\n";
    let html = op("to_html", md).await.text_joined();
    assert!(html.starts_with("<h1>Title</h1>\n"), "{html}");
    assert!(
        html.contains("<del>old</del> <strong>new</strong>"),
        "{html}"
    );
    assert!(
        html.contains(r#"<input disabled="" type="checkbox" checked=""/>"#),
        "{html}"
    );
    assert!(
        html.contains("<table><thead><tr><th>a</th><th>b</th></tr></thead>"),
        "{html}"
    );
    assert!(
        html.contains(r#"<sup class="footnote-reference">"#),
        "{html}"
    );
}

#[tokio::test]
async fn to_html_escapes_raw_html_by_default() {
    let md = "Hi <script>alert(1)</script> there\n\n<div onclick=\"x()\">block</div>\n";
    let out = op("to_html", md).await;
    assert_eq!(
        out.text_joined(),
        "<p>Hi &lt;script&gt;alert(1)&lt;/script&gt; there</p>\n\
         &lt;div onclick=\"x()\"&gt;block&lt;/div&gt;\n"
    );
    assert_eq!(out.structured.unwrap()["raw_html"], "escaped");

    let out = ok(json!({"operation": "to_html", "markdown": md, "allow_html": true})).await;
    assert_eq!(
        out.text_joined(),
        "<p>Hi <script>alert(1)</script> there</p>\n<div onclick=\"x()\">block</div>\n"
    );
}

#[tokio::test]
async fn to_html_neutralises_script_urls_unless_html_is_allowed() {
    let md = "[a](javascript:alert(1)) [b](<JaVa\tscript:x>) [c](https://ok.example) \
              ![d](data:image/png;base64,AAAA) [e](data:text/html,x)";
    let html = op("to_html", md).await.text_joined();
    assert_eq!(
        html,
        "<p><a href=\"#\">a</a> <a href=\"#\">b</a> \
         <a href=\"https://ok.example\">c</a> \
         <img src=\"data:image/png;base64,AAAA\" alt=\"d\" /> <a href=\"#\">e</a></p>\n"
    );
    let html = ok(json!({
        "operation": "to_html", "markdown": "[a](javascript:alert(1))", "allow_html": true
    }))
    .await
    .text_joined();
    assert_eq!(html, "<p><a href=\"javascript:alert(1)\">a</a></p>\n");
}

#[tokio::test]
async fn to_text_strips_markup_and_keeps_structure() {
    let md = "\
# Title

Some **bold** and `code` with a [link](https://example.com).
Next line.

1. First
2. Second
   - nested *item*
   - [x] done

- loose one

- loose two

  more

```
let x = 1;
  indented
```

| a | b |
|---|---|
| 1 | 2 |

Note[^n].

[^n]: The note.
";
    let out = op("to_text", md).await;
    let text = out.text_joined();
    assert_eq!(
        text,
        "\
Title

Some bold and code with a link.
Next line.

1. First
2. Second
  - nested item
  - [x] done

- loose one
- loose two
  more

let x = 1;
  indented

a | b
1 | 2

Note[n].

[n]: The note."
    );
    assert_eq!(out.structured.unwrap()["text"], json!(text));
}

#[tokio::test]
async fn to_text_include_urls() {
    let md = "See [docs](https://docs.example), <https://auto.example>, <me@x.org> \
              and ![logo](logo.png).";
    let plain = op("to_text", md).await.text_joined();
    assert_eq!(plain, "See docs, https://auto.example, me@x.org and logo.");
    let with_urls = ok(json!({"operation": "to_text", "markdown": md, "include_urls": true}))
        .await
        .text_joined();
    assert_eq!(
        with_urls,
        "See docs (https://docs.example), https://auto.example, me@x.org and logo (logo.png)."
    );
}

#[tokio::test]
async fn to_text_of_empty_input_is_empty() {
    assert_eq!(op("to_text", "").await.text_joined(), "");
}

#[tokio::test]
async fn headings_with_github_slugs_and_lines() {
    let md = "# Hello, World!\n\ntext\n\n## Install\n\n## Install\n\n### C++ & Rust: ünïcode_ok?\n\nSetext\n------\n\n## `code` *in* heading\n\n## Install-1\n";
    let out = op("headings", md).await;
    assert_eq!(
        out.structured,
        Some(json!({
            "headings": [
                {"level": 1, "text": "Hello, World!", "slug": "hello-world", "line": 1},
                {"level": 2, "text": "Install", "slug": "install", "line": 5},
                {"level": 2, "text": "Install", "slug": "install-1", "line": 7},
                {"level": 3, "text": "C++ & Rust: ünïcode_ok?", "slug": "c--rust-ünïcode_ok", "line": 9},
                {"level": 2, "text": "Setext", "slug": "setext", "line": 11},
                {"level": 2, "text": "code in heading", "slug": "code-in-heading", "line": 14},
                // github-slugger: the literal "Install-1" collides with the generated one.
                {"level": 2, "text": "Install-1", "slug": "install-1-1", "line": 16},
            ],
            "count": 7,
        }))
    );
    let text = out.text_joined();
    assert!(
        text.starts_with("# Hello, World! (#hello-world, line 1)\n## Install (#install, line 5)"),
        "{text}"
    );
}

#[tokio::test]
async fn headings_none() {
    let out = op("headings", "just text").await;
    assert_eq!(out.text_joined(), "No headings found.");
    assert_eq!(out.structured.unwrap()["count"], 0);
}

#[tokio::test]
async fn toc_nests_and_respects_max_level() {
    let md = "# Guide\n\n### Skipped level\n\n## Setup\n\n### Linux\n\n#### Deep\n\n## Setup\n\n## [Links] *and* stuff\n";
    let out = op("toc", md).await;
    assert_eq!(
        out.text_joined(),
        "\
- [Guide](#guide)
  - [Skipped level](#skipped-level)
  - [Setup](#setup)
    - [Linux](#linux)
  - [Setup](#setup-1)
  - [\\[Links\\] and stuff](#links-and-stuff)"
    );
    let out = ok(json!({"operation": "toc", "markdown": md, "max_level": 1})).await;
    assert_eq!(out.text_joined(), "- [Guide](#guide)");
    let out = ok(json!({"operation": "toc", "markdown": md, "max_level": 4})).await;
    assert!(
        out.text_joined()
            .contains("    - [Linux](#linux)\n      - [Deep](#deep)"),
        "{}",
        out.text_joined()
    );
    let out = ok(json!({"operation": "toc", "markdown": "no headings"})).await;
    assert_eq!(out.text_joined(), "No headings up to level 3.");
}

#[tokio::test]
async fn toc_rejects_bad_max_level() {
    let e = err(json!({"operation": "toc", "markdown": "# a", "max_level": 7})).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    let msg = e.to_string();
    assert!(msg.contains("at /max_level"), "{msg}");
    assert!(msg.contains("is 7"), "{msg}");
}

#[tokio::test]
async fn links_of_every_kind_with_references_resolved() {
    let md = "\
Intro [inline](https://a.example \"Title A\").

See [docs][d], [d][] and [d], <https://auto.example> and <me@x.org>.
![alt *text*](img.png) [![badge](b.svg)](https://ci.example)

[unresolved] stays text.

[d]: https://docs.example \"Docs\"
";
    let out = op("links", md).await;
    assert_eq!(
        out.structured,
        Some(json!({
            "links": [
                {"text": "inline", "url": "https://a.example", "title": "Title A", "kind": "link", "line": 1},
                {"text": "docs", "url": "https://docs.example", "title": "Docs", "kind": "link", "line": 3, "reference": "d"},
                {"text": "d", "url": "https://docs.example", "title": "Docs", "kind": "link", "line": 3, "reference": "d"},
                {"text": "d", "url": "https://docs.example", "title": "Docs", "kind": "link", "line": 3, "reference": "d"},
                {"text": "https://auto.example", "url": "https://auto.example", "title": "", "kind": "autolink", "line": 3},
                {"text": "me@x.org", "url": "mailto:me@x.org", "title": "", "kind": "autolink", "line": 3},
                {"text": "alt text", "url": "img.png", "title": "", "kind": "image", "line": 4},
                {"text": "badge", "url": "https://ci.example", "title": "", "kind": "link", "line": 4},
                {"text": "badge", "url": "b.svg", "title": "", "kind": "image", "line": 4},
            ],
            "count": 9,
            "truncated": false,
        }))
    );
    let text = out.text_joined();
    assert!(
        text.starts_with("line 1: link [inline](https://a.example)\n"),
        "{text}"
    );
}

#[tokio::test]
async fn links_none() {
    let out = op("links", "no links here").await;
    assert_eq!(out.text_joined(), "No links or images found.");
}

#[tokio::test]
async fn input_over_one_mib_is_refused() {
    let big = "a".repeat(1024 * 1024 + 1);
    let e = err(json!({"operation": "to_text", "markdown": big})).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    let msg = e.to_string();
    assert!(msg.contains("1048577 bytes"), "{msg}");
    assert!(msg.contains("limit is 1048576"), "{msg}");
}

#[tokio::test]
async fn option_for_another_operation_is_refused() {
    let e = err(json!({"operation": "to_text", "markdown": "x", "allow_html": true})).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    let msg = e.to_string();
    assert!(msg.contains("at /allow_html"), "{msg}");
    assert!(msg.contains("only to operation `to_html`"), "{msg}");
}

#[tokio::test]
async fn unknown_operation_is_refused() {
    let e = err(json!({"operation": "to_pdf", "markdown": "x"})).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    assert!(e.to_string().contains("to_pdf"), "{e}");
}

#[tokio::test]
async fn pathological_input_finishes() {
    // Deep nesting and long runs of delimiters must not hang or overflow.
    // A wide table header with many short rows would make the renderer pad every row.
    let table = format!(
        "{}|\n{}|\n{}",
        "|a".repeat(5000),
        "|-".repeat(5000),
        "a\n".repeat(50_000)
    );
    let md = format!(
        "{}x\n\n{}\n\n{}\n\n{table}",
        "> ".repeat(5000),
        "*a ".repeat(20_000),
        "[".repeat(20_000)
    );
    for operation in ["to_html", "to_text", "headings", "toc", "links"] {
        ok(json!({"operation": operation, "markdown": md})).await;
    }
}

#[tokio::test]
async fn schema_compiles_and_accepts_examples() {
    test_support::check_schema(
        &plugin(),
        &[
            json!({"operation": "toc", "markdown": "# a", "max_level": 2}),
            json!({"operation": "to_html", "markdown": "", "allow_html": true}),
        ],
        &[
            json!({"operation": "toc", "markdown": "# a", "max_level": 9}),
            json!({"operation": "toc"}),
            json!({"operation": "toc", "markdown": "x", "extra": 1}),
        ],
    );
}
