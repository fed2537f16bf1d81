//! Search-and-replace edits: the engine of `workspace_edit`.
//!
//! The text to replace (`old`) must match exactly once, unless every occurrence is to be
//! replaced. An exact match is always preferred. Only when there is none does the edit retry
//! line by line while ignoring trailing whitespace, then leading and trailing whitespace
//! ([`MatchLevel::TrailingWhitespace`], [`MatchLevel::SurroundingWhitespace`]) and it uses
//! such a match only when it is the single one, so a loose match can never pick the wrong
//! place. The outcome says when this happened, so the tool can tell the model.
//!
//! Line endings: LF and CRLF compare equal, and the replacement is written with the file's
//! dominant line ending, so a CRLF file stays CRLF when `old`/`new` were written with LF.
//!
//! A whitespace-tolerant match replaces whole lines. When leading whitespace differed, `new`
//! is re-indented by the difference between the file's indentation of the first matched line
//! and `old`'s first line: the extra prefix is added to (or removed from) every non-blank line
//! of `new`; when neither indentation is a prefix of the other (tabs against spaces), lines
//! starting with `old`'s indentation get the file's instead.

use std::borrow::Cow;
use std::fmt;

use super::matching::{self, MatchLevel};
use super::text::{self, dominant_eol, join_numbers, snippet_lines, split_lines, with_eol};

/// The result of a successful edit.
#[derive(Clone, Debug, PartialEq)]
pub struct EditOutcome {
    /// The whole new content of the file.
    pub content: String,
    /// How many occurrences were replaced.
    pub replacements: usize,
    /// What was ignored to find `old`, when there was no exact match.
    pub fallback: Option<String>,
}

/// A region of the file that resembles the text that was not found.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// 1-based number of the first line.
    pub start_line: usize,
    /// 1-based number of the last line (inclusive).
    pub end_line: usize,
    /// The region's text, lines joined with `\n`.
    pub text: String,
    /// Similarity to `old`, from 0.0 (nothing alike) to 1.0 (identical).
    pub similarity: f64,
}

/// Why an edit was refused; the file is to be left unchanged.
#[derive(Clone, Debug, PartialEq)]
pub enum EditError {
    /// `old` is empty.
    EmptyOld,
    /// `old` and `new` are the same text.
    Unchanged,
    /// `old` occurs nowhere, not even ignoring whitespace.
    NotFound {
        /// The most similar region with as many lines as `old`, if the file has any lines.
        closest: Option<Candidate>,
    },
    /// `old` occurs more than once and not every occurrence was asked for.
    Ambiguous {
        /// How many times it occurs.
        count: usize,
        /// 1-based line of each occurrence, at most [`MAX_LISTED_MATCHES`].
        lines: Vec<usize>,
        /// Set when only a whitespace-tolerant comparison found these (they are refused
        /// even with `replace_all`): what it ignored.
        fallback: Option<String>,
    },
}

/// How many match lines [`EditError::Ambiguous`] lists at most.
pub const MAX_LISTED_MATCHES: usize = 20;

impl fmt::Display for EditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EditError::EmptyOld => write!(
                f,
                "The text to replace is empty, so there is nothing to find. Give the exact \
                 text to replace with a few surrounding lines, or write the whole file instead."
            ),
            EditError::Unchanged => write!(
                f,
                "The replacement is identical to the text to replace, so the edit would change \
                 nothing. Give the new text you want in the file."
            ),
            EditError::NotFound { closest: None } => write!(
                f,
                "The text to replace was not found: the file is empty. Write the file's content \
                 instead of editing it."
            ),
            EditError::NotFound {
                closest: Some(candidate),
            } => {
                let mut out = String::new();
                let lines: Vec<&str> = candidate.text.split('\n').collect();
                text::write_numbered(&mut out, candidate.start_line, &lines);
                let range = if candidate.start_line == candidate.end_line {
                    format!("line {}", candidate.start_line)
                } else {
                    format!("lines {}-{}", candidate.start_line, candidate.end_line)
                };
                write!(
                    f,
                    "The text to replace was not found in the file, not even ignoring \
                     whitespace. The closest match is at {range} ({:.0}% similar):\n{out}\
                     Nothing was changed. Read those lines again and copy them exactly, \
                     including indentation, into the text to replace.",
                    candidate.similarity * 100.0
                )
            }
            EditError::Ambiguous {
                count,
                lines,
                fallback: None,
            } => write!(
                f,
                "The text to replace occurs {count} times (at lines {}{}), so the edit is \
                 ambiguous and nothing was changed. Include more surrounding lines so it \
                 matches exactly once, or set replace_all to replace every occurrence.",
                join_numbers(lines),
                listed_suffix(*count, lines.len())
            ),
            EditError::Ambiguous {
                count,
                lines,
                fallback: Some(fallback),
            } => write!(
                f,
                "The text to replace was not found exactly; compared loosely \
                 ({fallback}) it matches {count} places (at lines {}{}), which is too \
                 uncertain to edit, so nothing was changed. Copy the text exactly from the \
                 file, including whitespace, with enough surrounding lines to match once.",
                join_numbers(lines),
                listed_suffix(*count, lines.len())
            ),
        }
    }
}

fn listed_suffix(count: usize, listed: usize) -> String {
    if count > listed {
        format!(", first {listed} listed")
    } else {
        String::new()
    }
}

impl std::error::Error for EditError {}

/// Replaces `old` with `new` in `content`: exactly one occurrence, or every occurrence when
/// `replace_all` is set. See the module documentation for the fallbacks.
pub fn apply_edit(
    content: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<EditOutcome, EditError> {
    if old.is_empty() {
        return Err(EditError::EmptyOld);
    }
    if old == new {
        return Err(EditError::Unchanged);
    }
    let lines = split_lines(content);
    let eol = dominant_eol(&lines);
    let new_text = with_eol(new, eol);

    // `old` in the file's line endings first (so an LF `"\n"` cannot match the second half
    // of a CRLF), then as given, for files that mix both.
    let converted = with_eol(old, eol);
    let mut attempts = vec![Cow::Borrowed(old)];
    if converted != old {
        attempts.insert(0, Cow::Owned(converted));
    }
    for old_text in &attempts {
        let starts: Vec<usize> = content
            .match_indices(old_text.as_ref())
            .map(|(i, _)| i)
            .collect();
        if starts.is_empty() {
            continue;
        }
        if old_text.as_ref() == new_text {
            return Err(EditError::Unchanged);
        }
        if starts.len() > 1 && !replace_all {
            return Err(EditError::Ambiguous {
                count: starts.len(),
                lines: line_numbers(content, &starts),
                fallback: None,
            });
        }
        let content = if replace_all {
            content.replace(old_text.as_ref(), &new_text)
        } else {
            content.replacen(old_text.as_ref(), &new_text, 1)
        };
        return Ok(EditOutcome {
            content,
            replacements: starts.len(),
            fallback: None,
        });
    }

    let old_lines = snippet_lines(old);
    let texts: Vec<&str> = lines.iter().map(|l| l.text).collect();
    for level in [
        MatchLevel::TrailingWhitespace,
        MatchLevel::SurroundingWhitespace,
    ] {
        let found = matching::find_all(&texts, &old_lines, level);
        match found.as_slice() {
            [] => continue,
            [start] => {
                let region = Region {
                    start: *start,
                    len: old_lines.len(),
                };
                let content = replace_region(&lines, region, old, &old_lines, new, level, eol);
                return Ok(EditOutcome {
                    content,
                    replacements: 1,
                    fallback: Some(level.describe().to_string()),
                });
            }
            _ => {
                return Err(EditError::Ambiguous {
                    count: found.len(),
                    lines: found
                        .iter()
                        .take(MAX_LISTED_MATCHES)
                        .map(|s| s + 1)
                        .collect(),
                    fallback: Some(level.describe().to_string()),
                });
            }
        }
    }

    let closest = matching::closest_region(&texts, &old_lines).map(|c| Candidate {
        start_line: c.start + 1,
        end_line: c.start + c.len,
        text: texts
            .get(c.start..c.start + c.len)
            .unwrap_or(&[])
            .join("\n"),
        similarity: c.similarity,
    });
    Err(EditError::NotFound { closest })
}

/// 1-based line numbers of the byte offsets `starts` (ascending), at most
/// [`MAX_LISTED_MATCHES`].
fn line_numbers(content: &str, starts: &[usize]) -> Vec<usize> {
    let mut numbers = Vec::new();
    let (mut line, mut scanned) = (1, 0);
    for &start in starts.iter().take(MAX_LISTED_MATCHES) {
        line += content
            .get(scanned..start)
            .map_or(0, |s| s.matches('\n').count());
        scanned = start;
        numbers.push(line);
    }
    numbers
}

#[derive(Clone, Copy)]
struct Region {
    start: usize,
    len: usize,
}

/// The file with the whole lines of `region` replaced by `new`, which is re-indented when
/// the match ignored leading whitespace. `old`'s final newline (or its absence) decides
/// whether the region's last terminator belongs to the replaced text, as in an exact match.
fn replace_region(
    lines: &[text::Line<'_>],
    region: Region,
    old: &str,
    old_lines: &[&str],
    new: &str,
    level: MatchLevel,
    eol: &str,
) -> String {
    let end = region.start + region.len;
    let last_eol = end
        .checked_sub(1)
        .and_then(|i| lines.get(i))
        .map_or("", |l| l.eol);
    let mut new_text = new.replace("\r\n", "\n");
    if level == MatchLevel::SurroundingWhitespace {
        let from = old_lines.first().map_or("", |l| text::indentation(l));
        let to = lines
            .get(region.start)
            .map_or("", |l| text::indentation(l.text));
        new_text = reindent(&new_text, from, to);
    }
    let mut replacement = with_eol(&new_text, eol);
    if old.ends_with('\n') {
        // The region's own terminator was part of `old`; a file that had none keeps none.
        if last_eol.is_empty()
            && let Some(stripped) = replacement.strip_suffix(eol)
        {
            replacement.truncate(stripped.len());
        }
    } else {
        replacement.push_str(last_eol);
    }

    let mut out = String::new();
    for line in lines.get(..region.start).unwrap_or(&[]) {
        out.push_str(line.text);
        out.push_str(line.eol);
    }
    out.push_str(&replacement);
    for line in lines.get(end..).unwrap_or(&[]) {
        out.push_str(line.text);
        out.push_str(line.eol);
    }
    out
}

/// Shifts every non-blank line of `text` from indentation `from` to indentation `to`.
fn reindent(text: &str, from: &str, to: &str) -> String {
    if from == to {
        return text.to_string();
    }
    text.split('\n')
        .map(|line| {
            if line.trim().is_empty() {
                return line.to_string();
            }
            if let Some(extra) = to.strip_prefix(from) {
                format!("{extra}{line}")
            } else if let Some(extra) = from.strip_prefix(to) {
                line.strip_prefix(extra).unwrap_or(line).to_string()
            } else {
                match line.strip_prefix(from) {
                    Some(rest) => format!("{to}{rest}"),
                    None => line.to_string(),
                }
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}
