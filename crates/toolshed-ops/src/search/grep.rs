//! Grep: ripgrep's matcher and searcher over the files a walk lets through.
//!
//! Each walking thread owns a `Searcher` and fills a [`FileSink`] per file; whole files
//! are handed to one [`Collector`] that keeps the first `max_matches` matching lines in
//! path order. Keeping "the first in path order" rather than "the first found" is what
//! makes a parallel search deterministic; it also lets the search pass over files that
//! sort after the last one kept once the limit is known to be exceeded.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use grep_matcher::Matcher;
use grep_regex::RegexMatcher;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};

use super::pattern::{PathGlobs, regex_matcher};
use super::walk::{Backend, Entry, Filter, Visitor, resolve_base};
use super::{
    DEFAULT_GREP_MATCHES, DEFAULT_MAX_LINE_LEN, FileMatches, GrepRequest, GrepResult, LineMatch,
    MAX_CONTEXT_LINES, MAX_SEARCH_BUFFER,
};
use crate::error::OpsError;
use crate::file::FileKind;
use crate::path::shown;

/// Collects the lines of one file, up to a number of matching lines.
#[derive(Debug)]
pub(crate) struct FileSink<'m> {
    matcher: &'m RegexMatcher,
    cap: usize,
    max_line_len: usize,
    lines: Vec<LineMatch>,
    matches: usize,
    overflow: bool,
    binary: bool,
}

impl<'m> FileSink<'m> {
    fn new(matcher: &'m RegexMatcher, cap: usize, max_line_len: usize) -> Self {
        Self {
            matcher,
            cap,
            max_line_len,
            lines: Vec::new(),
            matches: 0,
            overflow: false,
            binary: false,
        }
    }

    fn line(&self, line_number: u64, bytes: &[u8], is_context: bool) -> LineMatch {
        let max = self.max_line_len;
        if bytes.len() <= max {
            return LineMatch {
                line_number,
                text: String::from_utf8_lossy(bytes).into_owned(),
                is_context,
                truncated: false,
            };
        }
        // Show the first match when it lies past the cut, with a little before it.
        let mut start = 0;
        if !is_context
            && let Ok(Some(m)) = self.matcher.find(bytes)
            && m.end() > max
        {
            start = m.start().saturating_sub(max / 4);
        }
        let start = char_floor(bytes, start);
        // `max` at least 1 and `end` never before `start`, even on invalid UTF-8.
        let end = char_floor(bytes, (start + max).min(bytes.len())).max(start);
        let mut text = String::with_capacity(end - start + 6);
        if start > 0 {
            text.push('…');
        }
        text.push_str(&String::from_utf8_lossy(&bytes[start..end]));
        if end < bytes.len() {
            text.push('…');
        }
        LineMatch {
            line_number,
            text,
            is_context,
            truncated: true,
        }
    }
}

/// `at`, moved back to the start of a UTF-8 sequence (when the bytes are UTF-8).
fn char_floor(bytes: &[u8], at: usize) -> usize {
    let mut at = at.min(bytes.len());
    let mut steps = 0;
    while at > 0 && at < bytes.len() && bytes[at] & 0xC0 == 0x80 && steps < 3 {
        at -= 1;
        steps += 1;
    }
    at
}

/// The lines of a match or context block, without terminators.
fn split_lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    body.split(|b| *b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let first = m.line_number().unwrap_or(1);
        for (i, bytes) in split_lines(m.bytes()).enumerate() {
            if self.matches >= self.cap {
                self.overflow = true;
                return Ok(false);
            }
            let line = self.line(first + i as u64, bytes, false);
            self.lines.push(line);
            self.matches += 1;
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, Self::Error> {
        let first = c.line_number().unwrap_or(1);
        for (i, bytes) in split_lines(c.bytes()).enumerate() {
            let line = self.line(first + i as u64, bytes, true);
            self.lines.push(line);
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, Self::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// Keeps the first `keep` matching lines of a file and the context that belongs to them:
/// context stops at the first matching line not kept, and `after` lines past the last kept.
fn trim(lines: &mut Vec<LineMatch>, keep: usize, after: usize) {
    let mut seen = 0;
    let mut last = 0;
    let mut cut = lines.len();
    for (i, line) in lines.iter().enumerate() {
        if !line.is_context {
            if seen == keep {
                cut = i;
                break;
            }
            seen += 1;
            last = line.line_number;
        } else if seen == keep && line.line_number > last + after as u64 {
            cut = i;
            break;
        }
    }
    lines.truncate(cut);
}

/// The lines of one file and how many of them match.
#[derive(Debug)]
struct Hits {
    lines: Vec<LineMatch>,
    matches: usize,
}

/// The first `cap` matching lines in path order, across threads.
#[derive(Debug)]
struct Collector {
    cap: usize,
    after: usize,
    files: BTreeMap<String, Hits>,
    count: usize,
    /// Whether a matching line beyond those kept exists.
    overflow: bool,
}

impl Collector {
    fn add(&mut self, path: String, hits: Hits, file_overflow: bool) {
        self.overflow |= file_overflow;
        if hits.matches == 0 {
            return;
        }
        self.count += hits.matches;
        self.files.insert(path, hits);
        while self.count > self.cap {
            self.overflow = true;
            let excess = self.count - self.cap;
            let Some(mut last) = self.files.last_entry() else {
                break;
            };
            let matches = last.get().matches;
            if matches <= excess {
                self.count -= matches;
                last.remove();
            } else {
                let hits = last.get_mut();
                hits.matches -= excess;
                trim(&mut hits.lines, hits.matches, self.after);
                self.count = self.cap;
            }
        }
    }

    /// Whether nothing in `path` could be kept any more.
    fn passes_over(&self, path: &str) -> bool {
        self.overflow
            && self.count >= self.cap
            && self
                .files
                .last_key_value()
                .is_some_and(|(last, _)| path > last.as_str())
    }
}

#[derive(Debug, Default)]
struct Counts {
    searched: usize,
    binary: usize,
    unreadable: usize,
}

/// Everything the searching threads share.
struct Grep<'a, B: ?Sized> {
    ops: &'a B,
    matcher: RegexMatcher,
    searcher: SearcherBuilder,
    cap: usize,
    after: usize,
    max_line_len: usize,
    collector: Mutex<Collector>,
    /// Set once the collector may pass over files, so threads only lock it then.
    closing: AtomicBool,
    counts: Mutex<Counts>,
}

impl<B: Backend + ?Sized> Grep<'_, B> {
    fn collector(&self) -> std::sync::MutexGuard<'_, Collector> {
        self.collector.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Searches one file and hands its lines to the collector.
    fn search(&self, searcher: &mut Searcher, fs_rel: &Path, rel: &str, counts: &mut Counts) {
        counts.searched += 1;
        if self.closing.load(Ordering::Relaxed) && self.collector().passes_over(rel) {
            return;
        }
        let mut sink = FileSink::new(&self.matcher, self.cap, self.max_line_len);
        if self
            .ops
            .search_file(fs_rel, searcher, &self.matcher, &mut sink)
            .is_err()
        {
            counts.unreadable += 1;
            return;
        }
        if sink.binary {
            counts.binary += 1;
            return;
        }
        if sink.matches == 0 {
            return;
        }
        let mut lines = sink.lines;
        trim(&mut lines, sink.matches, self.after);
        let mut collector = self.collector();
        collector.add(
            rel.to_string(),
            Hits {
                lines,
                matches: sink.matches,
            },
            sink.overflow,
        );
        if collector.overflow && collector.count >= collector.cap {
            self.closing.store(true, Ordering::Relaxed);
        }
    }

    fn merge(&self, counts: &Counts) {
        let mut total = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        total.searched += counts.searched;
        total.binary += counts.binary;
        total.unreadable += counts.unreadable;
    }
}

/// One walking thread's searcher.
struct GrepVisitor<'g, 'a, B: Backend + ?Sized> {
    grep: &'g Grep<'a, B>,
    filter: &'g Filter,
    searcher: Searcher,
    counts: Counts,
}

impl<B: Backend + ?Sized> Visitor for GrepVisitor<'_, '_, B> {
    fn visit(&mut self, entry: &Entry<'_>) {
        if entry.kind == FileKind::File && self.filter.globs.includes(entry.in_base) {
            self.grep.search(
                &mut self.searcher,
                entry.fs_rel,
                entry.rel,
                &mut self.counts,
            );
        }
    }
}

impl<B: Backend + ?Sized> Drop for GrepVisitor<'_, '_, B> {
    fn drop(&mut self) {
        self.grep.merge(&self.counts);
    }
}

/// Runs a grep request on a backend.
pub(crate) fn grep<B: Backend>(ops: &B, request: &GrepRequest) -> Result<GrepResult, OpsError> {
    let matcher = regex_matcher(request)?;
    let globs = PathGlobs::compile(&request.include, &request.exclude)?;
    let (base, kind) = resolve_base(ops, &request.base)?;
    let cap = if request.max_matches == 0 {
        DEFAULT_GREP_MATCHES
    } else {
        request.max_matches
    };
    let max_line_len = if request.max_line_len == 0 {
        DEFAULT_MAX_LINE_LEN
    } else {
        request.max_line_len
    };
    let after = request.context_after.min(MAX_CONTEXT_LINES);
    let mut searcher = SearcherBuilder::new();
    searcher
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .before_context(request.context_before.min(MAX_CONTEXT_LINES))
        .after_context(after)
        .multi_line(request.multiline)
        .heap_limit(Some(MAX_SEARCH_BUFFER));
    let grep = Grep {
        ops,
        matcher,
        searcher,
        cap,
        after,
        max_line_len,
        collector: Mutex::new(Collector {
            cap,
            after,
            files: BTreeMap::new(),
            count: 0,
            overflow: false,
        }),
        closing: AtomicBool::new(false),
        counts: Mutex::new(Counts::default()),
    };
    match kind {
        // A single file is searched as it is: filters are for walks.
        FileKind::File => {
            let mut counts = Counts::default();
            let mut searcher = grep.searcher.build();
            grep.search(&mut searcher, &ops.fs_rel(&base), &base, &mut counts);
            grep.merge(&counts);
        }
        FileKind::Dir => {
            let filter = Arc::new(Filter {
                cancel: request.cancel.clone(),
                max_depth: None,
                include_hidden: request.include_hidden,
                respect_gitignore: request.respect_gitignore,
                globs,
            });
            let make = || -> Box<dyn Visitor + '_> {
                Box::new(GrepVisitor {
                    grep: &grep,
                    filter: &filter,
                    searcher: grep.searcher.build(),
                    counts: Counts::default(),
                })
            };
            ops.walk(&base, &filter, &make);
        }
        _ => {
            return Err(OpsError::SpecialFile {
                path: shown(&request.base),
                kind: "special file".into(),
                action: "read".into(),
            });
        }
    }
    let collector = grep
        .collector
        .into_inner()
        .unwrap_or_else(|p| p.into_inner());
    let counts = grep.counts.into_inner().unwrap_or_else(|p| p.into_inner());
    Ok(GrepResult {
        total_matches: collector.count,
        truncated: collector.overflow,
        files: collector
            .files
            .into_iter()
            .map(|(path, hits)| FileMatches {
                path,
                matches: hits.lines,
            })
            .collect(),
        files_searched: counts.searched,
        skipped_binary: counts.binary,
        skipped_unreadable: counts.unreadable,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(n: u64, ctx: bool) -> LineMatch {
        LineMatch {
            line_number: n,
            text: String::new(),
            is_context: ctx,
            truncated: false,
        }
    }

    #[test]
    fn trimming_keeps_context_up_to_the_first_line_not_kept() {
        // Matches at 3, 4, 9 with one line of context either side.
        let all = vec![
            line(2, true),
            line(3, false),
            line(4, false),
            line(5, true),
            line(8, true),
            line(9, false),
            line(10, true),
        ];
        let numbers = |keep| {
            let mut lines = all.clone();
            trim(&mut lines, keep, 1);
            lines
                .iter()
                .map(|l| (l.line_number, l.is_context))
                .collect::<Vec<_>>()
        };
        assert_eq!(numbers(1), [(2, true), (3, false)]);
        assert_eq!(numbers(2), [(2, true), (3, false), (4, false), (5, true)]);
        assert_eq!(numbers(3).len(), 7);
    }

    #[test]
    fn long_lines_are_cut_around_the_first_match() {
        let matcher = RegexMatcher::new("needle").unwrap();
        let sink = FileSink::new(&matcher, 10, 10);
        let long = format!("{}needle{}", "é".repeat(20), "y".repeat(20));
        let cut = sink.line(1, long.as_bytes(), false);
        assert!(cut.truncated);
        assert!(cut.text.starts_with('…') && cut.text.ends_with('…'));
        assert!(cut.text.contains("needle"), "{}", cut.text);
        let ctx = sink.line(2, long.as_bytes(), true);
        assert_eq!(ctx.text, format!("{}…", "é".repeat(5)));
    }
}
