//! Checking and normalizing the paths tools receive.
//!
//! This is not where confinement happens — the kernel does that when the path is opened
//! beneath the workspace root. Here a path is only checked for form (empty, NUL bytes,
//! length) and turned into a relative path: an absolute path that names the workspace root
//! has the root removed; `.` components are dropped. `..` stays, for the kernel to judge.
//!
//! # Names that are not UTF-8
//!
//! Paths travel as text, but a Linux file name is any bytes. A name that is not valid UTF-8
//! is spelled with each byte outside valid UTF-8 written `\xhh` (two lowercase hex digits),
//! and a backslash in such a name written `\\`; so is a name that holds the text `\x`
//! itself, so that no spelling can mean two files. Every other name is spelled as it is.
//! [`from_fs`] spells names for output (listings, search results, link targets), and
//! [`to_fs`] reads a spelling back: a name is decoded only when it is exactly the spelling
//! of its decoding (hex digits in either case), and taken literally otherwise.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path};

use crate::error::OpsError;

/// The longest path accepted, in bytes (Linux's `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;
/// The longest single name accepted, in bytes (Linux's `NAME_MAX`).
pub const MAX_NAME_BYTES: usize = 255;
/// The reserved directory at the workspace root.
pub const RESERVED_DIR: &str = ".toolshed";

/// `path` shortened for an error message.
pub fn shown(path: &str) -> String {
    if path.chars().count() <= 200 {
        return path.to_string();
    }
    let head: String = path.chars().take(200).collect();
    format!("{head}…")
}

/// The spelling of file-system path bytes as text (see the module docs): borrowed when
/// every name is UTF-8 without `\x` in it, which is nearly always.
pub fn from_fs(bytes: &[u8]) -> Cow<'_, str> {
    if let Ok(text) = std::str::from_utf8(bytes)
        && !text.contains("\\x")
    {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    for (i, name) in bytes.split(|b| *b == b'/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        spell_name(name, &mut out);
    }
    Cow::Owned(out)
}

/// Appends the spelling of one name.
fn spell_name(name: &[u8], out: &mut String) {
    let plain = match std::str::from_utf8(name) {
        Ok(text) if !text.contains("\\x") => Some(text),
        _ => None,
    };
    if let Some(text) = plain {
        out.push_str(text);
        return;
    }
    for chunk in name.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '\\' {
                out.push_str("\\\\");
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
}

/// The file-system bytes a path spelled by [`from_fs`] stands for: borrowed when it has
/// no backslash, which is nearly always.
pub fn to_fs(text: &str) -> Cow<'_, OsStr> {
    if !text.contains('\\') {
        return Cow::Borrowed(OsStr::new(text));
    }
    let mut out: Vec<u8> = Vec::with_capacity(text.len());
    for (i, name) in text.split('/').enumerate() {
        if i > 0 {
            out.push(b'/');
        }
        match unspell_name(name) {
            Some(bytes) => out.extend_from_slice(&bytes),
            None => out.extend_from_slice(name.as_bytes()),
        }
    }
    Cow::Owned(std::ffi::OsString::from_vec(out))
}

/// The bytes `name` spells, if it is a spelling: `\\` and `\xhh` are its only escapes, and
/// spelling the result again gives `name` back (up to the case of hex digits).
fn unspell_name(name: &str) -> Option<Vec<u8>> {
    if !name.contains('\\') {
        return None;
    }
    let mut out = Vec::with_capacity(name.len());
    let bytes = name.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        match bytes.get(i + 1) {
            Some(b'\\') => {
                out.push(b'\\');
                i += 2;
            }
            Some(b'x') => {
                let hex = name.get(i + 2..i + 4)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 4;
            }
            _ => return None,
        }
    }
    let mut again = String::with_capacity(name.len());
    spell_name(&out, &mut again);
    again.eq_ignore_ascii_case(name).then_some(out)
}

/// The one spelling of the file `name` stands for (hex digits in lowercase; a literal
/// name that needs escaping, escaped).
fn canonical(name: &str) -> Cow<'_, str> {
    if !name.contains('\\') {
        return Cow::Borrowed(name);
    }
    Cow::Owned(from_fs(to_fs(name).as_bytes()).into_owned())
}

/// Checks `path` and returns it relative to `root` (`.` for the root itself), each name in
/// its one spelling (see the module docs).
pub fn normalize(root: &Path, path: &str) -> Result<String, OpsError> {
    let invalid = |reason: &str| OpsError::InvalidPath {
        path: shown(path),
        reason: reason.into(),
    };
    if path.is_empty() {
        return Err(invalid("the path is empty; use `.` for the workspace root"));
    }
    if path.contains('\0') {
        return Err(invalid("the path contains a NUL byte"));
    }
    // Limits count the bytes on disk, which a spelled name overstates.
    if path.len() > MAX_PATH_BYTES && to_fs(path).len() > MAX_PATH_BYTES {
        return Err(invalid(&format!(
            "the path is {} bytes; the limit is {MAX_PATH_BYTES}",
            to_fs(path).len()
        )));
    }
    let p = Path::new(path);
    let relative: &Path = if p.is_absolute() {
        p.strip_prefix(root).map_err(|_| OpsError::Escape {
            path: shown(path),
            detail: format!("absolute paths must be inside {}", root.display()),
        })?
    } else {
        p
    };
    let mut parts: Vec<Cow<'_, str>> = Vec::new();
    for component in relative.components() {
        match component {
            Component::CurDir => {}
            Component::Normal(name) => {
                let name = name.to_str().unwrap_or_default();
                if name.len() > MAX_NAME_BYTES && to_fs(name).len() > MAX_NAME_BYTES {
                    return Err(invalid(&format!(
                        "a name in the path is {} bytes; the limit is {MAX_NAME_BYTES}",
                        to_fs(name).len()
                    )));
                }
                parts.push(canonical(name));
            }
            Component::ParentDir => parts.push(Cow::Borrowed("..")),
            Component::RootDir | Component::Prefix(_) => {
                return Err(OpsError::Escape {
                    path: shown(path),
                    detail: "absolute path".into(),
                });
            }
        }
    }
    if parts.is_empty() {
        return Ok(".".into());
    }
    Ok(parts.join("/"))
}

/// Whether the normalized relative path names the reserved directory or something in it,
/// judged on its words (the kernel-resolved check comes after opening).
///
/// `..` is folded on the words here (`a/../.toolshed` counts as reserved). That can refuse a
/// path that a link would have taken elsewhere, which errs on the safe side; confinement
/// itself never relies on it.
pub fn names_reserved(relative: &str) -> bool {
    let mut folded: Vec<&str> = Vec::new();
    for part in relative.split('/') {
        match part {
            ".." if folded.last().is_some_and(|p| *p != "..") => {
                folded.pop();
            }
            "." | "" => {}
            other => folded.push(other),
        }
    }
    folded.first() == Some(&RESERVED_DIR)
}

/// Splits a normalized relative path into its parent and final name.
pub fn split_parent(relative: &str) -> (&str, &str) {
    match relative.rsplit_once('/') {
        Some((parent, name)) => (parent, name),
        None => (".", relative),
    }
}

/// Why a path is not a workspace-relative one (each holds the path as [`shown`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RelativePathError {
    /// Nothing was given.
    #[error("the path is empty; use `.` for the workspace root")]
    Empty,
    /// A NUL byte, which no file name has.
    #[error("`{0}` contains a NUL byte")]
    Nul(String),
    /// An absolute path.
    #[error("`{0}` is absolute; plugins use paths relative to the workspace root")]
    Absolute(String),
    /// `..` above the workspace root.
    #[error("`{0}` climbs out of the workspace with `..`; use a path inside it")]
    ClimbsOut(String),
}

/// Normalizes a workspace-relative path on its words: `.` parts dropped, `..` folded.
/// Absolute paths and `..` climbing above the workspace root are refused. The workspace
/// root itself is `.`.
pub fn normalize_lexically(path: &str) -> Result<String, RelativePathError> {
    if path.is_empty() {
        return Err(RelativePathError::Empty);
    }
    if path.contains('\0') {
        return Err(RelativePathError::Nul(shown(path)));
    }
    if path.starts_with('/') || path.starts_with('\\') {
        return Err(RelativePathError::Absolute(shown(path)));
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(RelativePathError::ClimbsOut(shown(path)));
                }
            }
            name => parts.push(name),
        }
    }
    if parts.is_empty() {
        Ok(".".into())
    } else {
        Ok(parts.join("/"))
    }
}

/// Whether the normalized `path` is `root` or inside it (both from
/// [`normalize_lexically`]). The one containment check for paths that are judged before
/// any file is opened: plugin grants and the files a plugin asks for.
pub fn is_within(root: &str, path: &str) -> bool {
    root == "."
        || path == root
        || (path.len() > root.len()
            && path.starts_with(root)
            && path.as_bytes().get(root.len()) == Some(&b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_and_rejects_malformed_paths() {
        let root = Path::new("/ws/root");
        assert_eq!(normalize(root, "a/./b").unwrap(), "a/b");
        assert_eq!(normalize(root, "/ws/root/a").unwrap(), "a");
        assert_eq!(normalize(root, "/ws/root").unwrap(), ".");
        assert_eq!(normalize(root, "./").unwrap(), ".");
        assert_eq!(normalize(root, "a/../b").unwrap(), "a/../b");
        assert!(matches!(
            normalize(root, "/ws/root2/a"),
            Err(OpsError::Escape { .. })
        ));
        assert!(matches!(
            normalize(root, "/etc/passwd"),
            Err(OpsError::Escape { .. })
        ));
        assert!(matches!(
            normalize(root, ""),
            Err(OpsError::InvalidPath { .. })
        ));
        assert!(matches!(
            normalize(root, "a\0b"),
            Err(OpsError::InvalidPath { .. })
        ));
        assert!(matches!(
            normalize(root, &"a/".repeat(3000)),
            Err(OpsError::InvalidPath { .. })
        ));
        assert!(matches!(
            normalize(root, &"n".repeat(256)),
            Err(OpsError::InvalidPath { .. })
        ));
        assert!(
            names_reserved(".toolshed")
                && names_reserved(".toolshed/x")
                && !names_reserved(".toolshedx")
        );
        assert_eq!(split_parent("a/b/c"), ("a/b", "c"));
        assert_eq!(split_parent("c"), (".", "c"));
    }

    #[test]
    fn names_that_are_not_utf8_have_one_spelling_each() {
        let cases: [(&[u8], &str); 8] = [
            (b"plain.txt", "plain.txt"),
            (b"caf\xc3\xa9/a\\b", "caf\u{e9}/a\\b"),
            (b"\xff.txt", "\\xff.txt"),
            (b"dir/\xe9t\xe9", "dir/\\xe9t\\xe9"),
            (b"a\\b\xff", "a\\\\b\\xff"),
            // The text `\x` itself, so that `\xff` can only mean the byte.
            (b"\\xff", "\\\\xff"),
            (b"\xc3", "\\xc3"),
            (b"ok/\x80/ok", "ok/\\x80/ok"),
        ];
        for (bytes, text) in cases {
            assert_eq!(from_fs(bytes), text, "{bytes:?}");
            assert_eq!(to_fs(text).as_bytes(), bytes, "{text}");
        }
        // Hex digits in either case; anything that is not exactly a spelling is literal.
        assert_eq!(to_fs("\\xFF.txt").as_bytes(), b"\xff.txt");
        for literal in [
            "\\x41",
            "\\x2f",
            "\\x00",
            "\\xc3\\xa9",
            "a\\b",
            "a\\\\b",
            "\\x",
            "\\xzz",
        ] {
            assert_eq!(to_fs(literal).as_bytes(), literal.as_bytes(), "{literal}");
        }
        // Limits count bytes on disk: 255 escaped bytes are 1020 characters.
        let long = "\\xff".repeat(255);
        assert_eq!(normalize(Path::new("/r"), &long).unwrap(), long);
        assert!(normalize(Path::new("/r"), &"\\xff".repeat(256)).is_err());
    }
}
