use super::*;

use std::path::Path;

use crate::text::Encoding;
use crate::tools::apply;
use crate::uri::{path_of, uri_of};

#[test]
fn uris_round_trip_and_edits_apply_in_the_servers_units() {
    let path = Path::new("/tmp/a dir/é.rs");
    let uri = uri_of(path);
    assert_eq!(uri, "file:///tmp/a%20dir/%C3%A9.rs");
    assert_eq!(path_of(&uri).as_deref(), Some(path));
    let edit = |l1, c1, l2, c2, t: &str| lsp_types::TextEdit {
        range: lsp_types::Range::new(
            lsp_types::Position::new(l1, c1),
            lsp_types::Position::new(l2, c2),
        ),
        new_text: t.into(),
    };
    let text = "let é = 1;\nuse(é);\n";
    // In UTF-16 `é` is one unit wide; in UTF-8 two.
    let renamed = apply(
        text,
        &[edit(1, 4, 1, 5, "x"), edit(0, 4, 0, 5, "x")],
        Encoding::Utf16,
        Some("é"),
    );
    assert_eq!(renamed.as_deref(), Ok("let x = 1;\nuse(x);\n"));
    let renamed = apply(text, &[edit(0, 4, 0, 6, "x")], Encoding::Utf8, None);
    assert_eq!(renamed.as_deref(), Ok("let x = 1;\nuse(é);\n"));
    let overlapping = [edit(0, 0, 0, 5, "a"), edit(0, 3, 0, 6, "b")];
    assert!(apply(text, &overlapping, Encoding::Utf8, None).is_err());
    // Computed from another version: the range does not hold the old name, or ends past
    // the line.
    let elsewhere = apply(text, &[edit(0, 0, 0, 3, "x")], Encoding::Utf8, Some("é"));
    assert!(elsewhere.unwrap_err().contains("another version"));
    assert!(apply(text, &[edit(0, 4, 0, 40, "x")], Encoding::Utf8, None).is_err());
}

#[test]
fn overrides_change_and_extend_the_defaults() {
    let mut overrides = std::collections::BTreeMap::new();
    overrides.insert(
        "python".to_string(),
        LanguageOverride {
            command: Some(vec!["pylsp".into()]),
            ..Default::default()
        },
    );
    overrides.insert(
        "zig".to_string(),
        LanguageOverride {
            command: Some(vec!["zls".into()]),
            extensions: Some(vec![".zig".into()]),
            ..Default::default()
        },
    );
    overrides.insert(
        "go".to_string(),
        LanguageOverride {
            command: Some(Vec::new()),
            ..Default::default()
        },
    );
    let languages = languages_with(&overrides);
    let python = languages.iter().find(|l| l.name == "python").unwrap();
    assert_eq!(python.command, vec!["pylsp"]);
    assert!(python.serves(Path::new("a/b.py")));
    let zig = languages.iter().find(|l| l.name == "zig").unwrap();
    assert!(zig.serves(Path::new("main.zig")));
    assert!(
        !languages.iter().any(|l| l.name == "go"),
        "an empty command turns a language off"
    );
}
