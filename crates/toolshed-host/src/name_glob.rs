//! Globs over names: tools, groups, plugins, owners, argument values.

use globset::{Glob, GlobMatcher};

/// A glob as globset reads it (`*` and `?` match any character, `/` included; `[…]`
/// classes, `{a,b}` alternatives, `\` escapes), with its common shapes — a plain name,
/// `prefix*`, `*suffix`, `*` — matched by comparing strings. globset compiles every glob
/// to a regex whose automaton takes about half a million instructions to build: the five
/// rules of the built-in profiles cost 2.5 million at every start before this.
#[derive(Debug, Clone)]
pub(crate) enum NameGlob {
    Exact(String),
    Prefix(String),
    Suffix(String),
    Any,
    Other(GlobMatcher),
}

/// The characters that make a glob more than a plain string.
const SPECIAL: &[char] = &['*', '?', '[', ']', '{', '}', '\\'];

impl NameGlob {
    /// `text` compiled; globset's error when it is not a valid glob.
    pub(crate) fn new(text: &str) -> Result<Self, globset::Error> {
        let plain = |s: &str| !s.contains(SPECIAL);
        if text == "*" {
            return Ok(Self::Any);
        }
        if plain(text) {
            return Ok(Self::Exact(text.to_string()));
        }
        if let Some(prefix) = text.strip_suffix('*')
            && plain(prefix)
        {
            return Ok(Self::Prefix(prefix.to_string()));
        }
        if let Some(suffix) = text.strip_prefix('*')
            && plain(suffix)
        {
            return Ok(Self::Suffix(suffix.to_string()));
        }
        Glob::new(text).map(|glob| Self::Other(glob.compile_matcher()))
    }

    /// Whether `name` matches.
    pub(crate) fn is_match(&self, name: &str) -> bool {
        match self {
            Self::Exact(text) => name == text,
            Self::Prefix(prefix) => name.starts_with(prefix.as_str()),
            Self::Suffix(suffix) => name.ends_with(suffix.as_str()),
            Self::Any => true,
            Self::Other(glob) => glob.is_match(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every shape matches exactly what globset matches.
    #[test]
    fn names_match_as_globset_matches_them() {
        let patterns = [
            "*",
            "",
            "web_fetch",
            "workspace_*",
            "*_read",
            "group:mcp:everything",
            "plugin:system.*",
            "exec_?",
            "a*b",
            "{web,http}_*",
            "[ab]*",
            "**",
            "x/*",
            "*/y",
            "\\*",
        ];
        let names = [
            "",
            "web_fetch",
            "web_fetch2",
            "workspace_read",
            "workspace_",
            "xworkspace_read",
            "fs_read",
            "group:mcp:everything",
            "plugin:system.exec",
            "exec_1",
            "exec_12",
            "ab",
            "a/b",
            "http_get",
            "bz",
            "x/a/b",
            "a/y",
            "*",
        ];
        for pattern in patterns {
            let ours = NameGlob::new(pattern).unwrap();
            let theirs = Glob::new(pattern).unwrap().compile_matcher();
            for name in names {
                assert_eq!(
                    ours.is_match(name),
                    theirs.is_match(name),
                    "`{pattern}` against `{name}` ({ours:?})"
                );
            }
        }
        assert!(matches!(NameGlob::new("web_fetch"), Ok(NameGlob::Exact(_))));
        assert!(matches!(
            NameGlob::new("workspace_*"),
            Ok(NameGlob::Prefix(_))
        ));
        assert!(matches!(NameGlob::new("*_read"), Ok(NameGlob::Suffix(_))));
        assert!(NameGlob::new("[a").is_err());
    }
}
