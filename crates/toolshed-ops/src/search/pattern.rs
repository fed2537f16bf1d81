//! Turning the patterns a caller gives into matchers: path globs with `.gitignore` rules,
//! and the regular expression grep runs.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use grep_regex::{ErrorKind, RegexMatcher, RegexMatcherBuilder};

use super::{CaseMode, GrepRequest};
use crate::error::OpsError;
use crate::path::shown;

/// The longest pattern accepted, in bytes.
const MAX_PATTERN_BYTES: usize = 4096;
/// Compiled size limit of a regular expression; larger ones are refused, not slow.
const REGEX_SIZE_LIMIT: usize = 16 << 20;
/// Cache of the lazy DFA, per searching thread.
const DFA_SIZE_LIMIT: usize = 32 << 20;

fn invalid(pattern: &str, reason: impl Into<String>) -> OpsError {
    OpsError::InvalidPattern {
        pattern: shown(pattern),
        reason: reason.into(),
    }
}

/// Include and exclude globs, matched against paths relative to the search base.
#[derive(Debug, Clone, Default)]
pub(crate) struct PathGlobs {
    include: Option<GlobSet>,
    exclude: Option<GlobSet>,
    /// `exclude` plus each `x/**` exclusion as `x`, so the directory is skipped whole.
    exclude_dirs: Option<GlobSet>,
}

impl PathGlobs {
    /// Compiles `include` (where a leading `!` makes an exclusion) and `exclude`.
    pub(crate) fn compile(include: &[String], exclude: &[String]) -> Result<Self, OpsError> {
        let mut inc = Vec::new();
        let mut exc = Vec::new();
        for pattern in include {
            match pattern.strip_prefix('!') {
                Some(rest) => exc.push((pattern.as_str(), rest)),
                None => inc.push((pattern.as_str(), pattern.as_str())),
            }
        }
        for pattern in exclude {
            exc.push((
                pattern.as_str(),
                pattern.strip_prefix('!').unwrap_or(pattern),
            ));
        }
        let inc = inc
            .iter()
            .map(|(given, glob)| Ok((given.to_string(), translate(given, glob)?)))
            .collect::<Result<Vec<_>, OpsError>>()?;
        let exc = exc
            .iter()
            .map(|(given, glob)| Ok((given.to_string(), translate(given, glob)?)))
            .collect::<Result<Vec<_>, OpsError>>()?;
        let mut dirs = exc.clone();
        for (given, glob) in &exc {
            if let Some(dir) = glob.strip_suffix("/**") {
                dirs.push((given.clone(), dir.to_string()));
            }
        }
        Ok(Self {
            include: build_set(&inc)?,
            exclude: build_set(&exc)?,
            exclude_dirs: build_set(&dirs)?,
        })
    }

    /// Whether a file (relative to the base) is wanted by the include globs.
    pub(crate) fn includes(&self, in_base: &str) -> bool {
        self.include
            .as_ref()
            .is_none_or(|set| set.is_match(in_base))
    }

    /// Whether a file or directory (relative to the base) is excluded.
    pub(crate) fn excludes(&self, in_base: &str, is_dir: bool) -> bool {
        let set = if is_dir {
            &self.exclude_dirs
        } else {
            &self.exclude
        };
        set.as_ref().is_some_and(|set| set.is_match(in_base))
    }
}

/// Rewrites a `.gitignore`-style glob into one matched against the whole relative path.
fn translate(given: &str, glob: &str) -> Result<String, OpsError> {
    if glob.len() > MAX_PATTERN_BYTES {
        return Err(invalid(
            given,
            format!("the pattern is longer than {MAX_PATTERN_BYTES} bytes"),
        ));
    }
    if glob.contains('\0') {
        return Err(invalid(given, "the pattern contains a NUL byte"));
    }
    let mut body = glob.strip_prefix("./").unwrap_or(glob);
    let anchored_by_slash = body.starts_with('/');
    body = body.trim_start_matches('/');
    let body = body.trim_end_matches('/');
    if body.is_empty() {
        return Err(invalid(
            given,
            "the pattern is empty; use `**` to match every file",
        ));
    }
    if body.split('/').any(|part| part == "..") {
        return Err(invalid(
            given,
            "patterns are relative to the search base and cannot contain `..`; set `base` instead",
        ));
    }
    if anchored_by_slash || body.contains('/') {
        Ok(body.to_string())
    } else {
        Ok(format!("**/{body}"))
    }
}

fn build_set(globs: &[(String, String)]) -> Result<Option<GlobSet>, OpsError> {
    if globs.is_empty() {
        return Ok(None);
    }
    let mut set = GlobSetBuilder::new();
    for (given, glob) in globs {
        let compiled = GlobBuilder::new(glob)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| invalid(given, e.kind().to_string()))?;
        set.add(compiled);
    }
    set.build()
        .map(Some)
        .map_err(|e| invalid(&globs[0].0, e.to_string()))
}

/// The matcher grep runs for `request`.
pub(crate) fn regex_matcher(request: &GrepRequest) -> Result<RegexMatcher, OpsError> {
    let pattern = request.pattern.as_str();
    if pattern.is_empty() {
        return Err(invalid(
            pattern,
            "the pattern is empty; give the text or regular expression to search for",
        ));
    }
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(invalid(
            pattern,
            format!("the pattern is longer than {MAX_PATTERN_BYTES} bytes"),
        ));
    }
    let mut builder = RegexMatcherBuilder::new();
    builder
        .case_insensitive(request.case == CaseMode::Insensitive)
        .case_smart(request.case == CaseMode::Smart)
        .fixed_strings(request.fixed_string)
        // `^` and `$` match at line boundaries, as in ripgrep.
        .multi_line(true)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(DFA_SIZE_LIMIT);
    if !request.multiline {
        // Lets the searcher skip line-by-line matching, and refuses `\n` in the pattern.
        builder.line_terminator(Some(b'\n'));
    }
    builder.build(pattern).map_err(|e| {
        let hint = match e.kind() {
            ErrorKind::NotAllowed(_) => "; set multiline: true to match across lines",
            _ if request.fixed_string => "",
            _ => {
                "; escape special characters with `\\`, or set fixed_string: true to search for the text as it is"
            }
        };
        invalid(pattern, format!("{e}{hint}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn globs(inc: &[&str], exc: &[&str]) -> PathGlobs {
        let s = |v: &[&str]| v.iter().map(|p| p.to_string()).collect::<Vec<_>>();
        PathGlobs::compile(&s(inc), &s(exc)).unwrap()
    }

    #[test]
    fn globs_follow_gitignore_rules() {
        let g = globs(&["*.rs", "!**/gen/**"], &["vendor"]);
        assert!(g.includes("main.rs") && g.includes("a/b/main.rs") && !g.includes("main.c"));
        assert!(g.excludes("a/gen/x.rs", false) && g.excludes("a/gen", true));
        assert!(g.excludes("vendor", true) && g.excludes("x/vendor", true));
        assert!(!g.excludes("a/generated", true));
        let g = globs(&["/*.rs", "src/*.rs"], &[]);
        assert!(g.includes("main.rs") && !g.includes("a/main.rs"));
        assert!(
            g.includes("src/lib.rs") && !g.includes("src/a/lib.rs") && !g.includes("x/src/lib.rs")
        );
        assert!(globs(&[], &[]).includes("anything"));
        for bad in ["src/[", "", "!", "../x", "a{b"] {
            let err = PathGlobs::compile(&[bad.to_string()], &[]).unwrap_err();
            assert!(
                matches!(err, OpsError::InvalidPattern { .. }),
                "{bad}: {err}"
            );
        }
    }
}
