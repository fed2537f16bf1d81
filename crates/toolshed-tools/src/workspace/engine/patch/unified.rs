//! Standard unified diffs, as `diff -u` and `git diff` write them.
//!
//! Text outside file sections (a commit message, `Index:` lines) is ignored. Hunk line
//! counts are trusted only as far as the body agrees: models often miscount, so a hunk also
//! ends at the next `@@`, `diff ` or `---`/`+++` header, or at a line that cannot belong to
//! it, and lines beyond the counts that still look like hunk lines are kept. A bare `@@`
//! (no numbers) is accepted; text after it is used as an anchor line, as in the
//! `*** Begin Patch` format.
//!
//! Paths drop git's `a/` and `b/` prefixes and anything after a tab (timestamps). Without a
//! `diff --git` header, differing `---`/`+++` paths name one file (`foo.c.orig` vs `foo.c`),
//! and the `+++` path is the one patched; renames need git's headers.

use super::codex::{anchor_text, push_body_line, quote};
use super::{FileOp, FilePatch, Hunk, HunkLine, PatchError};

fn malformed(line: usize, message: impl Into<String>) -> PatchError {
    PatchError::Malformed {
        line,
        message: message.into(),
    }
}

/// One file's section while it is being read.
#[derive(Default)]
struct Section {
    line: usize,
    git: Option<(String, String)>,
    is_new: bool,
    is_deleted: bool,
    rename_from: Option<String>,
    rename_to: Option<String>,
    /// From `---`: `Some(None)` is `/dev/null`.
    minus: Option<Option<String>>,
    /// From `+++`: `Some(None)` is `/dev/null`.
    plus: Option<Option<String>>,
    hunks: Vec<Hunk>,
}

/// Parses every file section of a unified diff, starting at index `start`.
pub(super) fn parse(lines: &[&str], start: usize) -> Result<Vec<FilePatch>, PatchError> {
    let mut files = Vec::new();
    let mut i = start;
    while let Some(raw) = lines.get(i) {
        if let Some(rest) = raw.strip_prefix("diff --git ") {
            let mut section = Section {
                line: i + 1,
                git: Some(git_paths(rest)),
                ..Section::default()
            };
            i = parse_git_headers(lines, i + 1, &mut section)?;
            i = parse_file_body(lines, i, &mut section)?;
            files.extend(section.finish()?);
        } else if is_file_header(lines, i) {
            let mut section = Section {
                line: i + 1,
                ..Section::default()
            };
            i = parse_file_body(lines, i, &mut section)?;
            let line = section.line;
            match section.finish()? {
                Some(file) => files.push(file),
                None => {
                    return Err(malformed(
                        line,
                        "this file header has no hunks; follow `---`/`+++` with `@@ -l,c +l,c @@` \
                         and the hunk's lines",
                    ));
                }
            }
        } else if raw.starts_with("@@") {
            return Err(malformed(
                i + 1,
                "found a hunk (`@@`) before any file header; start each file with \
                 `--- a/<path>` and `+++ b/<path>` lines",
            ));
        } else {
            i += 1;
        }
    }
    if files.is_empty() {
        if let Some(at) = lines.iter().position(|l| l.trim() == super::codex::BEGIN) {
            return Err(malformed(
                at + 1,
                "`*** Begin Patch` must be the first line of the patch; remove the text before it",
            ));
        }
        let found = lines.get(start).copied().unwrap_or("");
        return Err(malformed(
            start + 1,
            format!(
                "unrecognised patch format: expected `*** Begin Patch`, or a unified diff with \
                 `--- a/<path>` and `+++ b/<path>` headers, found {}",
                quote(found)
            ),
        ));
    }
    Ok(files)
}

fn is_file_header(lines: &[&str], i: usize) -> bool {
    lines.get(i).is_some_and(|l| l.starts_with("--- "))
        && lines.get(i + 1).is_some_and(|l| l.starts_with("+++ "))
}

/// Reads git's extended header lines (`new file mode`, `rename from`, ...).
fn parse_git_headers(
    lines: &[&str],
    mut i: usize,
    section: &mut Section,
) -> Result<usize, PatchError> {
    const IGNORED: [&str; 5] = [
        "index ",
        "old mode ",
        "new mode ",
        "similarity index ",
        "dissimilarity index ",
    ];
    while let Some(raw) = lines.get(i) {
        if raw.starts_with("new file mode") {
            section.is_new = true;
        } else if raw.starts_with("deleted file mode") {
            section.is_deleted = true;
        } else if let Some(path) = raw.strip_prefix("rename from ") {
            section.rename_from = Some(unquote(path.trim_end()));
        } else if let Some(path) = raw.strip_prefix("rename to ") {
            section.rename_to = Some(unquote(path.trim_end()));
        } else if raw.starts_with("copy from ") || raw.starts_with("copy to ") {
            return Err(unsupported(section, "file copies"));
        } else if is_binary_marker(raw) {
            return Err(unsupported(section, "binary patches"));
        } else if !IGNORED.iter().any(|p| raw.starts_with(p)) {
            break;
        }
        i += 1;
    }
    Ok(i)
}

fn is_binary_marker(line: &str) -> bool {
    line.starts_with("GIT binary patch") || line.starts_with("Binary files ")
}

fn unsupported(section: &Section, what: &str) -> PatchError {
    let path = section
        .git
        .as_ref()
        .map(|(a, _)| a.clone())
        .unwrap_or_default();
    PatchError::Unsupported {
        path,
        what: what.to_string(),
    }
}

/// Reads the `---`/`+++` header (if any) and the hunks of one file.
fn parse_file_body(
    lines: &[&str],
    mut i: usize,
    section: &mut Section,
) -> Result<usize, PatchError> {
    if is_file_header(lines, i) {
        let minus = lines.get(i).and_then(|l| l.get(4..)).unwrap_or("");
        let plus = lines.get(i + 1).and_then(|l| l.get(4..)).unwrap_or("");
        section.minus = Some(header_path(minus, "a/"));
        section.plus = Some(header_path(plus, "b/"));
        i += 2;
    }
    loop {
        let mut j = i;
        while lines.get(j).is_some_and(|l| l.trim().is_empty()) {
            j += 1;
        }
        match lines.get(j) {
            Some(l) if l.starts_with("@@") => {
                let (hunk, next) = parse_hunk(lines, j)?;
                section.hunks.push(hunk);
                i = next;
            }
            Some(l) if is_binary_marker(l) => return Err(unsupported(section, "binary patches")),
            _ => return Ok(i),
        }
    }
}

/// The path of a `---`/`+++` line (after the marker); `None` for `/dev/null`.
fn header_path(rest: &str, prefix: &str) -> Option<String> {
    let rest = rest.split('\t').next().unwrap_or(rest).trim();
    let path = unquote(rest);
    if path == "/dev/null" || path.is_empty() {
        return None;
    }
    Some(path.strip_prefix(prefix).unwrap_or(&path).to_string())
}

/// The two paths of `diff --git a/x b/y`, without prefixes (only used when nothing better is
/// given, e.g. a pure rename or an empty new file).
fn git_paths(rest: &str) -> (String, String) {
    let rest = rest.trim();
    if rest.starts_with('"') {
        let (a, tail) = split_quoted(rest);
        let b = unquote(tail.trim());
        return (strip(&a, "a/"), strip(&b, "b/"));
    }
    let body = rest.strip_prefix("a/").unwrap_or(rest);
    // With spaces in names the split is ambiguous; prefer the one where both names agree.
    let splits: Vec<usize> = body.match_indices(" b/").map(|(i, _)| i).collect();
    let pick = splits
        .iter()
        .copied()
        .find(|&k| body.get(..k) == body.get(k + 3..))
        .or_else(|| splits.first().copied());
    match pick {
        Some(k) => (
            body.get(..k).unwrap_or("").to_string(),
            body.get(k + 3..).unwrap_or("").to_string(),
        ),
        None => (body.to_string(), body.to_string()),
    }
}

fn strip(path: &str, prefix: &str) -> String {
    path.strip_prefix(prefix).unwrap_or(path).to_string()
}

/// Splits a leading C-quoted token off `s`, unquoted.
fn split_quoted(s: &str) -> (String, &str) {
    let mut escaped = false;
    for (k, c) in s.char_indices().skip(1) {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == '"' {
            let end = k + 1;
            return (
                unquote(s.get(..end).unwrap_or(s)),
                s.get(end..).unwrap_or(""),
            );
        }
    }
    (unquote(s), "")
}

/// Undoes git's C-style quoting of a path (`"a/sp\303\244ce"`); other text is returned as is.
fn unquote(s: &str) -> String {
    let Some(inner) = s.strip_prefix('"').and_then(|r| r.strip_suffix('"')) else {
        return s.to_string();
    };
    let mut bytes = Vec::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buf = [0u8; 4];
            bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        match chars.next() {
            Some('n') => bytes.push(b'\n'),
            Some('t') => bytes.push(b'\t'),
            Some('r') => bytes.push(b'\r'),
            Some(d @ '0'..='7') => {
                let mut value = d.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(next) => {
                            value = value * 8 + next;
                            chars.next();
                        }
                        None => break,
                    }
                }
                bytes.push(u8::try_from(value).unwrap_or(b'?'));
            }
            Some(other) => {
                let mut buf = [0u8; 4];
                bytes.extend_from_slice(other.encode_utf8(&mut buf).as_bytes());
            }
            None => bytes.push(b'\\'),
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// What a hunk header says.
pub(super) enum HunkHeader {
    /// `@@ -l,c +l,c @@`.
    Numbered {
        old_start: usize,
        old_count: usize,
        new_count: usize,
    },
    /// `@@`, or `@@ text`: no numbers; `text` is an anchor.
    Bare(Option<String>),
}

pub(super) fn parse_hunk_header(header: &str, line: usize) -> Result<HunkHeader, PatchError> {
    let after = header.strip_prefix("@@").unwrap_or(header);
    let Some(spec) = after.trim_start().strip_prefix('-') else {
        return Ok(HunkHeader::Bare(anchor_text(after)));
    };
    let bad = || {
        malformed(
            line,
            format!(
                "expected a hunk header like `@@ -12,3 +12,4 @@`, found {}",
                quote(header)
            ),
        )
    };
    let inner = spec
        .find("@@")
        .and_then(|end| spec.get(..end))
        .ok_or_else(bad)?;
    let mut parts = inner.split_whitespace();
    let old = parts.next().and_then(parse_range).ok_or_else(bad)?;
    let new = parts
        .next()
        .and_then(|p| p.strip_prefix('+'))
        .and_then(parse_range)
        .ok_or_else(bad)?;
    Ok(HunkHeader::Numbered {
        old_start: old.0,
        old_count: old.1,
        new_count: new.1,
    })
}

/// `12,3` → (12, 3); `12` → (12, 1).
fn parse_range(s: &str) -> Option<(usize, usize)> {
    match s.split_once(',') {
        Some((start, count)) => Some((start.parse().ok()?, count.parse().ok()?)),
        None => Some((s.parse().ok()?, 1)),
    }
}

/// Parses the hunk whose header is at index `i`. Returns it and the index after it.
fn parse_hunk(lines: &[&str], mut i: usize) -> Result<(Hunk, usize), PatchError> {
    let line = i + 1;
    let header = lines.get(i).copied().unwrap_or("");
    let mut hunk = Hunk {
        line,
        ..Hunk::default()
    };
    let counts = match parse_hunk_header(header, line)? {
        HunkHeader::Numbered {
            old_start,
            old_count,
            new_count,
        } => {
            hunk.old_start = Some(old_start);
            hunk.old_count = Some(old_count);
            Some((old_count, new_count))
        }
        HunkHeader::Bare(anchor) => {
            hunk.anchors.extend(anchor);
            None
        }
    };
    i += 1;
    let (mut old_seen, mut new_seen, mut trailing_blank) = (0, 0, 0);
    let satisfied = |old_seen: usize, new_seen: usize| {
        counts.is_some_and(|(old, new)| old_seen >= old && new_seen >= new)
    };
    while let Some(raw) = lines.get(i) {
        if raw.starts_with("@@") || raw.starts_with("diff ") || is_file_header(lines, i) {
            break;
        }
        let hunk_like = raw.starts_with([' ', '+', '-', '\\']);
        if satisfied(old_seen, new_seen) {
            // Past the counts only clear hunk lines continue it (not `-- `, a mail signature).
            if !hunk_like || *raw == "-- " {
                break;
            }
        } else if !hunk_like && !raw.is_empty() {
            break;
        }
        push_body_line(&mut hunk, raw, i + 1)?;
        match raw.chars().next() {
            Some('-') => old_seen += 1,
            Some('+') => new_seen += 1,
            Some('\\') => {}
            _ => {
                old_seen += 1;
                new_seen += 1;
            }
        }
        trailing_blank = if raw.is_empty() {
            trailing_blank + 1
        } else {
            0
        };
        i += 1;
    }
    if !satisfied(old_seen, new_seen) {
        // The counts were too large (or absent): blank lines before whatever follows are
        // separators, not empty context lines.
        for _ in 0..trailing_blank {
            if hunk.lines.last() == Some(&HunkLine::Context(String::new())) {
                hunk.lines.pop();
            }
        }
    }
    if hunk.lines.is_empty() {
        return Err(malformed(
            line,
            "this hunk has no lines; follow `@@ ... @@` with context (` `), removed (`-`) and \
             added (`+`) lines",
        ));
    }
    Ok((hunk, i))
}

impl Section {
    /// The file operation this section describes; `None` for a git section that changes
    /// nothing this engine handles (a mode change) or a header without hunks.
    fn finish(self) -> Result<Option<FilePatch>, PatchError> {
        let line = self.line;
        let flat = |side: &Option<Option<String>>| side.clone().flatten();
        let old_path = self
            .rename_from
            .clone()
            .or_else(|| flat(&self.minus))
            .or_else(|| self.git.as_ref().map(|g| g.0.clone()));
        let new_path = self
            .rename_to
            .clone()
            .or_else(|| flat(&self.plus))
            .or_else(|| self.git.as_ref().map(|g| g.1.clone()));
        let is_add = self.is_new || self.minus == Some(None);
        let is_delete = self.is_deleted || self.plus == Some(None);
        let missing = || malformed(line, "this file section names no path");
        if is_add && is_delete {
            return Err(malformed(
                line,
                "both `---` and `+++` are `/dev/null`; name the file on one side",
            ));
        }
        if is_add {
            let path = new_path.ok_or_else(missing)?;
            let content = added_content(&self.hunks)?;
            let op = FileOp::Add { content };
            return Ok(Some(FilePatch { path, op, line }));
        }
        if is_delete {
            let path = old_path.ok_or_else(missing)?;
            let op = FileOp::Delete;
            return Ok(Some(FilePatch { path, op, line }));
        }
        let (path, move_to) = if self.git.is_some() {
            let path = old_path.ok_or_else(missing)?;
            let move_to = new_path.filter(|p| *p != path);
            (path, move_to)
        } else {
            (new_path.or(old_path).ok_or_else(missing)?, None)
        };
        if self.hunks.is_empty() && move_to.is_none() {
            return Ok(None);
        }
        let op = FileOp::Update {
            move_to,
            hunks: self.hunks,
        };
        Ok(Some(FilePatch { path, op, line }))
    }
}

/// The content of a file added with `--- /dev/null`: its hunks' `+` lines.
fn added_content(hunks: &[Hunk]) -> Result<String, PatchError> {
    let mut body: Vec<&str> = Vec::new();
    for hunk in hunks {
        for l in &hunk.lines {
            match l {
                HunkLine::Add(text) => body.push(text),
                HunkLine::Context(_) | HunkLine::Remove(_) => {
                    return Err(malformed(
                        hunk.line,
                        "a new file's hunk (`--- /dev/null`) can only add lines, but this one \
                         has context or `-` lines; prefix every line with `+`",
                    ));
                }
            }
        }
    }
    let mut content = body.join("\n");
    let no_newline = hunks.last().is_some_and(|h| h.new_no_newline);
    if !body.is_empty() && !no_newline {
        content.push('\n');
    }
    Ok(content)
}
