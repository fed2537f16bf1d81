//! How lines written by a model are found in a file.
//!
//! Models copy context imperfectly: trailing spaces vanish, indentation shifts, an editor
//! turned `-` into `–`. Rather than fail, the engine retries with progressively looser
//! comparisons, [`MatchLevel`] by [`MatchLevel`], and reports the level it needed so the tool
//! can tell the model. Each level is a normalisation applied to both sides, so a match at a
//! looser level is still a line-for-line match, never a guess.

use std::borrow::Cow;

/// How loosely lines were compared to find a match, from strictest to loosest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MatchLevel {
    /// Byte-for-byte equal lines (line terminators aside).
    Exact,
    /// Equal once trailing whitespace is removed.
    TrailingWhitespace,
    /// Equal once leading and trailing whitespace is removed.
    SurroundingWhitespace,
    /// Equal once trimmed and with Unicode dashes, quotes and spaces read as ASCII.
    UnicodePunctuation,
}

impl MatchLevel {
    /// Every level, in the order they are tried.
    pub const ALL: [MatchLevel; 4] = [
        MatchLevel::Exact,
        MatchLevel::TrailingWhitespace,
        MatchLevel::SurroundingWhitespace,
        MatchLevel::UnicodePunctuation,
    ];

    /// What was ignored to match, for a message: `"ignored trailing whitespace"`.
    pub fn describe(self) -> &'static str {
        match self {
            MatchLevel::Exact => "exact match",
            MatchLevel::TrailingWhitespace => "ignored trailing whitespace",
            MatchLevel::SurroundingWhitespace => "ignored leading and trailing whitespace",
            MatchLevel::UnicodePunctuation => {
                "ignored surrounding whitespace and read Unicode dashes, quotes and spaces as ASCII"
            }
        }
    }

    /// `line` as this level compares it.
    pub fn normalize(self, line: &str) -> Cow<'_, str> {
        match self {
            MatchLevel::Exact => Cow::Borrowed(line),
            MatchLevel::TrailingWhitespace => Cow::Borrowed(line.trim_end()),
            MatchLevel::SurroundingWhitespace => Cow::Borrowed(line.trim()),
            MatchLevel::UnicodePunctuation => {
                let trimmed = line.trim();
                if trimmed.chars().any(|c| ascii_lookalike(c).is_some()) {
                    Cow::Owned(
                        trimmed
                            .chars()
                            .map(|c| ascii_lookalike(c).unwrap_or(c))
                            .collect(),
                    )
                } else {
                    Cow::Borrowed(trimmed)
                }
            }
        }
    }
}

/// The ASCII character a Unicode look-alike stands for, if `c` is one.
fn ascii_lookalike(c: char) -> Option<char> {
    match c {
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}'
        | '\u{2212}' => Some('-'),
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => Some('\''),
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => Some('"'),
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => Some(' '),
        _ => None,
    }
}

/// Where to look for a run of lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    /// The first match at or after the start.
    First,
    /// Only a match that ends at the last line of the file.
    AtEnd,
    /// The match whose start is nearest this 0-based line (earlier wins a tie).
    Nearest(usize),
}

/// Finds `needle` in `lines` starting at index `from` or later, trying each level in turn.
/// Returns the 0-based start of the match and the level that found it.
pub(crate) fn seek(
    lines: &[&str],
    needle: &[&str],
    from: usize,
    placement: Placement,
) -> Option<(usize, MatchLevel)> {
    if needle.is_empty() || needle.len() > lines.len() {
        return None;
    }
    let last = lines.len() - needle.len();
    if from > last {
        return None;
    }
    for level in MatchLevel::ALL {
        let hay = normalize_all(lines, level);
        let want = normalize_all(needle, level);
        let found = match placement {
            Placement::First => occurrences(&hay, &want, from).into_iter().next(),
            Placement::AtEnd => matches_at(&hay, &want, last).then_some(last),
            Placement::Nearest(hint) => occurrences(&hay, &want, from)
                .into_iter()
                .min_by_key(|&s| s.abs_diff(hint)),
        };
        if let Some(start) = found {
            return Some((start, level));
        }
    }
    None
}

/// The starts of `needle` in `lines` at `level`, leftmost first, not overlapping.
pub(crate) fn find_all(lines: &[&str], needle: &[&str], level: MatchLevel) -> Vec<usize> {
    if needle.is_empty() || needle.len() > lines.len() {
        return Vec::new();
    }
    let hay = normalize_all(lines, level);
    let want = normalize_all(needle, level);
    // Non-overlapping, leftmost first.
    let mut found: Vec<usize> = Vec::new();
    for s in occurrences(&hay, &want, 0) {
        if found.last().is_none_or(|&prev| s >= prev + needle.len()) {
            found.push(s);
        }
    }
    found
}

fn normalize_all<'a>(lines: &[&'a str], level: MatchLevel) -> Vec<Cow<'a, str>> {
    lines.iter().map(|l| level.normalize(l)).collect()
}

fn matches_at(hay: &[Cow<'_, str>], want: &[Cow<'_, str>], start: usize) -> bool {
    hay.get(start..start + want.len())
        .is_some_and(|window| window.iter().zip(want).all(|(h, w)| h == w))
}

/// Every start of `want` in `hay` at or after `from`, in linear time: lines become small
/// integers (equal lines, equal numbers) and Knuth–Morris–Pratt runs over them, so a file
/// of many identical lines cannot make the search quadratic.
fn occurrences(hay: &[Cow<'_, str>], want: &[Cow<'_, str>], from: usize) -> Vec<usize> {
    let mut ids: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
    let want_ids: Vec<u32> = want
        .iter()
        .map(|l| {
            let next = ids.len() as u32;
            *ids.entry(l.as_ref()).or_insert(next)
        })
        .collect();
    // Lines absent from the needle can never match: one id outside the needle's.
    let hay_ids: Vec<u32> = hay
        .iter()
        .map(|l| ids.get(l.as_ref()).copied().unwrap_or(u32::MAX))
        .collect();
    let m = want_ids.len();
    if m == 0 || m > hay_ids.len() {
        return Vec::new();
    }
    let mut fail = vec![0usize; m];
    let mut k = 0;
    for i in 1..m {
        while k > 0 && want_ids[i] != want_ids[k] {
            k = fail[k - 1];
        }
        if want_ids[i] == want_ids[k] {
            k += 1;
        }
        fail[i] = k;
    }
    let mut found = Vec::new();
    let mut k = 0;
    for (i, id) in hay_ids.iter().enumerate() {
        while k > 0 && *id != want_ids[k] {
            k = fail[k - 1];
        }
        if *id == want_ids[k] {
            k += 1;
        }
        if k == m {
            let start = i + 1 - m;
            if start >= from {
                found.push(start);
            }
            k = fail[k - 1];
        }
    }
    found
}

/// The region of a file most like some lines that were not found.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Closest {
    /// 0-based index of the first line.
    pub(crate) start: usize,
    /// Number of lines (the needle's, or the whole file when it is shorter).
    pub(crate) len: usize,
    /// Similarity of the region's text to the needle's, in `0.0..=1.0`.
    pub(crate) similarity: f64,
}

/// How many line comparisons the search for the closest region may make; past it, only the
/// first needle lines are scored, which keeps a miss in a huge file cheap.
const CLOSEST_BUDGET: usize = 4_000_000;
/// Characters of a line that take part in the comparison.
const COMPARED_CHARS: usize = 512;

/// How many windows, ranked by the cheap score, get the precise comparison.
const REFINED_WINDOWS: usize = 16;

/// Finds the run of `needle.len()` lines of `lines` most similar to `needle`.
///
/// Every window is ranked by a cheap score, the mean per-line Dice coefficient over
/// character bigrams of the trimmed lines; the best [`REFINED_WINDOWS`] are then compared
/// precisely with `similar`'s character ratio of the untrimmed texts (the cheap score
/// favours short lines), and the best of those wins, the earliest on a tie.
pub(crate) fn closest_region(lines: &[&str], needle: &[&str]) -> Option<Closest> {
    if lines.is_empty() || needle.is_empty() {
        return None;
    }
    let len = needle.len().min(lines.len());
    let windows = lines.len() - len + 1;
    let scored = (CLOSEST_BUDGET / windows).clamp(1, len);
    let want: Vec<Vec<u64>> = needle.iter().take(scored).map(|l| bigrams(l)).collect();
    let have: Vec<Vec<u64>> = lines.iter().map(|l| bigrams(l)).collect();
    let mut ranked: Vec<(usize, f64)> = (0..windows)
        .map(|start| {
            let total: f64 = have
                .iter()
                .skip(start)
                .zip(&want)
                .map(|(h, w)| dice(h, w))
                .sum();
            (start, total)
        })
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked.truncate(REFINED_WINDOWS);
    ranked.sort_by_key(|&(start, _)| start);

    let wanted = needle.join("\n");
    let mut best: Option<Closest> = None;
    for (start, _) in ranked {
        let region = lines.get(start..start + len).unwrap_or(&[]).join("\n");
        let similarity = similarity(&region, &wanted);
        if best.as_ref().is_none_or(|b| similarity > b.similarity) {
            best = Some(Closest {
                start,
                len,
                similarity,
            });
        }
    }
    best
}

/// `similar`'s character-level ratio of two texts, with a time cap so a huge pair cannot
/// stall an error message (past the cap the diff, and so the ratio, is approximate).
pub(crate) fn similarity(a: &str, b: &str) -> f64 {
    let diff = similar::TextDiff::configure()
        .timeout(std::time::Duration::from_millis(50))
        .diff_chars(a, b);
    // Two decimals: enough for "83% similar", and stable across f32 rounding.
    (f64::from(diff.ratio()) * 100.0).round() / 100.0
}

/// Sorted character bigrams of a trimmed line (a single character counts as one unigram).
fn bigrams(line: &str) -> Vec<u64> {
    let chars: Vec<char> = line.trim().chars().take(COMPARED_CHARS).collect();
    let mut grams: Vec<u64> = match chars.as_slice() {
        [] => Vec::new(),
        [only] => vec![(1 << 63) | u64::from(*only)],
        _ => chars
            .windows(2)
            .map(|pair| match pair {
                [a, b] => (u64::from(*a) << 32) | u64::from(*b),
                _ => 0,
            })
            .collect(),
    };
    grams.sort_unstable();
    grams
}

/// Dice coefficient of two sorted multisets: 1.0 for equal, 0.0 for disjoint.
fn dice(a: &[u64], b: &[u64]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while let (Some(x), Some(y)) = (a.get(i), b.get(j)) {
        match x.cmp(y) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    (2 * common) as f64 / (a.len() + b.len()) as f64
}

#[cfg(test)]
mod kmp_tests {
    use super::*;

    #[test]
    fn repetitive_lines_match_where_they_should() {
        let mut hay = vec!["a"; 10];
        hay.push("b");
        assert_eq!(find_all(&hay, &["a", "a", "b"], MatchLevel::Exact), vec![8]);
        assert_eq!(
            find_all(&hay, &["a", "a"], MatchLevel::Exact),
            vec![0, 2, 4, 6, 8]
        );
        assert_eq!(
            seek(&hay, &["a", "b"], 3, Placement::First),
            Some((9, MatchLevel::Exact))
        );
        assert_eq!(
            seek(&hay, &["a", "a"], 0, Placement::Nearest(5)),
            Some((5, MatchLevel::Exact))
        );
        assert_eq!(
            seek(&hay, &["b"], 0, Placement::AtEnd),
            Some((10, MatchLevel::Exact))
        );
        // A needle of many repeated lines in a file of them: linear, not quadratic.
        let big = vec!["a"; 200_000];
        let mut needle = vec!["a"; 8_000];
        needle.push("b");
        assert!(find_all(&big, &needle, MatchLevel::SurroundingWhitespace).is_empty());
        assert_eq!(
            seek(&["x ", "y"], &["x", "y"], 0, Placement::First),
            Some((0, MatchLevel::TrailingWhitespace))
        );
    }
}
