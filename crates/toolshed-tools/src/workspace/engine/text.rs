//! Lines with their terminators, so rewritten files keep their own line endings.

use std::fmt::Write as _;

/// One line of a file: its text without the terminator, and the terminator itself
/// (`"\n"`, `"\r\n"`, or `""` for a last line that has none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Line<'a> {
    pub(crate) text: &'a str,
    pub(crate) eol: &'a str,
}

/// Splits `content` into lines. A lone `\r` is not a terminator (it stays in the text).
pub(crate) fn split_lines(content: &str) -> Vec<Line<'_>> {
    content
        .split_inclusive('\n')
        .map(|piece| {
            if let Some(text) = piece.strip_suffix("\r\n") {
                Line { text, eol: "\r\n" }
            } else if let Some(text) = piece.strip_suffix('\n') {
                Line { text, eol: "\n" }
            } else {
                Line {
                    text: piece,
                    eol: "",
                }
            }
        })
        .collect()
}

/// The terminator most lines use; LF on a tie or when there is none.
pub(crate) fn dominant_eol(lines: &[Line<'_>]) -> &'static str {
    let crlf = lines.iter().filter(|l| l.eol == "\r\n").count();
    let lf = lines.iter().filter(|l| l.eol == "\n").count();
    if crlf > lf { "\r\n" } else { "\n" }
}

/// `text` with every line terminator (LF or CRLF) replaced by `eol`.
pub(crate) fn with_eol(text: &str, eol: &str) -> String {
    let lf = text.replace("\r\n", "\n");
    if eol == "\n" {
        lf
    } else {
        lf.replace('\n', eol)
    }
}

/// The lines of a snippet given by a model (`old`, a hunk line list, ...): split on LF with a
/// trailing CR dropped, and without the empty piece after a final newline.
pub(crate) fn snippet_lines(snippet: &str) -> Vec<&str> {
    let body = snippet
        .strip_suffix("\r\n")
        .or_else(|| snippet.strip_suffix('\n'))
        .unwrap_or(snippet);
    body.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect()
}

/// The leading whitespace of a line.
pub(crate) fn indentation(line: &str) -> &str {
    let rest = line.trim_start();
    line.get(..line.len() - rest.len()).unwrap_or("")
}

/// At most `max` characters of `s`, with `…` when something was cut.
pub(crate) fn shorten(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", s.get(..cut).unwrap_or(s)),
        None => s.to_string(),
    }
}

/// How many lines of a file an error message shows at most.
pub(crate) const MAX_SHOWN_LINES: usize = 20;
/// How many characters of one line an error message shows at most.
pub(crate) const MAX_SHOWN_CHARS: usize = 240;

/// Writes `lines` numbered from `first` (1-based) as `  12 | text`, one per line.
pub(crate) fn write_numbered(out: &mut String, first: usize, lines: &[&str]) {
    let shown = lines.len().min(MAX_SHOWN_LINES);
    let width = (first + shown.saturating_sub(1)).to_string().len();
    for (k, line) in lines.iter().take(shown).enumerate() {
        let _ = writeln!(
            out,
            "  {:>width$} | {}",
            first + k,
            shorten(line, MAX_SHOWN_CHARS)
        );
    }
    if lines.len() > shown {
        let _ = writeln!(out, "  … ({} more lines)", lines.len() - shown);
    }
}

/// Writes `lines` indented by two spaces, capped like [`write_numbered`].
pub(crate) fn write_indented(out: &mut String, lines: &[&str]) {
    let shown = lines.len().min(MAX_SHOWN_LINES);
    for line in lines.iter().take(shown) {
        let _ = writeln!(out, "  {}", shorten(line, MAX_SHOWN_CHARS));
    }
    if lines.len() > shown {
        let _ = writeln!(out, "  … ({} more lines)", lines.len() - shown);
    }
}

/// A list of 1-based line numbers for a message: `3, 8, 12`.
pub(crate) fn join_numbers(numbers: &[usize]) -> String {
    numbers
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
