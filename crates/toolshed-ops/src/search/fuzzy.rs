//! A fuzzy path scorer in the manner of fzf: the query's characters must appear in the path
//! in order; the best placement of them is scored.
//!
//! Each matched character earns a base score and bonuses — at the start of a path segment,
//! at a word boundary (`_`, `-`, `.`, camelCase), inside the file name rather than a
//! directory, right after the previous matched character — and each gap between matched
//! characters costs a little. The best placement is found by dynamic programming over
//! (query character, path position), keeping two rows.

use crate::error::OpsError;
use crate::path::shown;

const SCORE_MATCH: i32 = 16;
const BONUS_SEGMENT: i32 = 10;
const BONUS_WORD: i32 = 8;
const BONUS_CAMEL: i32 = 7;
const BONUS_NAME: i32 = 6;
const BONUS_CONSECUTIVE: i32 = 6;
const GAP_START: i32 = 3;
const GAP_EXTEND: i32 = 1;
/// Far below any real score, and far from overflowing when penalties are subtracted.
const NONE: i32 = i32::MIN / 4;
/// The longest query accepted, in characters.
const MAX_QUERY_CHARS: usize = 256;

/// A query, lower-cased and without whitespace, with scratch space for scoring.
#[derive(Debug, Clone)]
pub(crate) struct FuzzyQuery {
    chars: Vec<char>,
    path: Vec<char>,
    bonus: Vec<i32>,
    prev: Vec<i32>,
    cur: Vec<i32>,
}

fn lower(c: char) -> char {
    c.to_lowercase().next().unwrap_or(c)
}

impl FuzzyQuery {
    /// Prepares `query`; an empty one is refused.
    pub(crate) fn new(query: &str) -> Result<Self, OpsError> {
        let chars: Vec<char> = query
            .chars()
            .filter(|c| !c.is_whitespace())
            .map(lower)
            .collect();
        let reason = if chars.is_empty() {
            Some("the query is empty; give some characters of the path to find".to_string())
        } else if chars.len() > MAX_QUERY_CHARS {
            Some(format!(
                "the query is longer than {MAX_QUERY_CHARS} characters"
            ))
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(OpsError::InvalidPattern {
                pattern: shown(query),
                reason,
            });
        }
        Ok(Self {
            chars,
            path: Vec::new(),
            bonus: Vec::new(),
            prev: Vec::new(),
            cur: Vec::new(),
        })
    }

    /// The score of `path`, or `None` when the query's characters are not all in it.
    pub(crate) fn score(&mut self, path: &str) -> Option<i64> {
        // Cheap rejection first: most paths do not contain the query at all.
        let mut want = self.chars.iter().peekable();
        for c in path.chars() {
            if want.peek().is_some_and(|w| **w == lower(c)) {
                want.next();
            }
        }
        if want.peek().is_some() {
            return None;
        }
        self.path.clear();
        self.path.extend(path.chars());
        let n = self.path.len();
        let name_start = self
            .path
            .iter()
            .rposition(|c| *c == '/')
            .map_or(0, |i| i + 1);
        self.bonus.clear();
        for (j, &c) in self.path.iter().enumerate() {
            let prev = j.checked_sub(1).map(|p| self.path[p]);
            let mut bonus = match prev {
                None | Some('/') => BONUS_SEGMENT,
                Some(p) if !p.is_alphanumeric() => BONUS_WORD,
                Some(p) if p.is_lowercase() && c.is_uppercase() => BONUS_CAMEL,
                _ => 0,
            };
            if j >= name_start {
                bonus += BONUS_NAME;
            }
            self.bonus.push(bonus);
        }
        for c in &mut self.path {
            *c = lower(*c);
        }
        self.prev.clear();
        self.prev.resize(n, NONE);
        self.cur.clear();
        self.cur.resize(n, NONE);
        for (i, &q) in self.chars.iter().enumerate() {
            // The best score of the previous character placed at k <= j - 2, less the gap.
            let mut gap = NONE;
            for j in 0..n {
                if i > 0 && j >= 2 {
                    gap = (gap - GAP_EXTEND).max(self.prev[j - 2] - GAP_START);
                }
                self.cur[j] = if self.path[j] != q {
                    NONE
                } else if i == 0 {
                    SCORE_MATCH + self.bonus[j]
                } else {
                    let consecutive = match j.checked_sub(1) {
                        Some(p) if self.prev[p] > NONE => self.prev[p] + BONUS_CONSECUTIVE,
                        _ => NONE,
                    };
                    let best = consecutive.max(gap);
                    if best <= NONE {
                        NONE
                    } else {
                        best + SCORE_MATCH + self.bonus[j]
                    }
                };
            }
            std::mem::swap(&mut self.prev, &mut self.cur);
        }
        let best = self.prev.iter().copied().max().unwrap_or(NONE);
        (best > NONE).then_some(i64::from(best))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn score(query: &str, path: &str) -> Option<i64> {
        FuzzyQuery::new(query).unwrap().score(path)
    }

    #[test]
    fn ranks_name_boundary_and_consecutive_matches_higher() {
        let main = score("mainrs", "src/main.rs").unwrap();
        let rules = score("mainrs", "src/domain/rules.rs").unwrap();
        assert!(main > rules, "{main} vs {rules}");
        assert!(score("MAIN", "src/main.rs").is_some());
        assert_eq!(score("xyz", "src/main.rs"), None);
        assert_eq!(score("sm", "ms"), None);
        // In the file name beats in a directory.
        assert!(score("lib", "src/lib.rs") > score("lib", "lib/mod.rs"));
        // A word boundary beats the middle of a word.
        assert!(score("fb", "foo_bar") > score("fb", "fooxbar"));
        assert!(score("fb", "fooBar") > score("fb", "foobar"));
        // Adjacent beats scattered.
        assert!(score("abc", "x/abc") > score("abc", "x/a_b_c"));
        assert!(FuzzyQuery::new("  ").is_err());
        assert!(FuzzyQuery::new(&"a".repeat(300)).is_err());
        // Long paths and odd characters do not panic.
        assert!(score("a", &"ä/".repeat(3000)).is_none());
        assert!(score("ä", "Ä").is_some());
    }
}
