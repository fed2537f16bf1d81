//! Manifest parsing over the fixtures in `fixtures/manifests`: every good one loads, every
//! broken one is refused naming its file, the expected field, and a reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use toolshed_host::manifest::{find_manifest, load_manifest};

fn fixtures(kind: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/manifests")
        .join(kind);
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn every_good_fixture_loads() {
    let dirs = fixtures("good");
    assert_eq!(dirs.len(), 6, "one fixture per manifest file name");
    for dir in dirs {
        let path =
            find_manifest(&dir).unwrap_or_else(|| panic!("no manifest in {}", dir.display()));
        let manifest = load_manifest(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(manifest.id.starts_with("fixture."), "{}", manifest.id);
    }
    let toml = load_manifest(
        &fixtures("good")
            .iter()
            .find(|d| d.ends_with("toml"))
            .unwrap()
            .join("plugin.toml"),
    )
    .unwrap();
    assert_eq!(
        toml.translations["fr"].name.as_deref(),
        Some("Exemple TOML")
    );
    assert_eq!(toml.tools[0].default_timeout_ms, Some(5000));
    assert!(toml.tools[0].annotations.read_only);
    assert!(toml.config[0].secret);
    assert_eq!(toml.capabilities.network, vec!["example.com"]);
}

#[test]
fn every_broken_fixture_names_file_field_and_problem() {
    let dirs = fixtures("broken");
    assert!(dirs.len() >= 20);
    for dir in dirs {
        let expected = std::fs::read_to_string(dir.join("expected_field")).unwrap();
        let path =
            find_manifest(&dir).unwrap_or_else(|| panic!("no manifest in {}", dir.display()));
        let err = match load_manifest(&path) {
            Ok(m) => panic!("{} loaded as {m:?}", dir.display()),
            Err(e) => e,
        };
        assert_eq!(err.path, path, "{err}");
        assert_eq!(err.field, expected.trim(), "{}: {err}", dir.display());
        assert!(
            err.problem.len() > 10,
            "{}: reason too thin: {err}",
            dir.display()
        );
        assert!(err.to_string().contains(&*path.to_string_lossy()));
    }
}
