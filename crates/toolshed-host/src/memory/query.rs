//! A memory search as an FTS5 expression that cannot be a syntax error: every word and
//! phrase is quoted, so nothing a caller types (`"`, `*`, `NEAR(`, `) OR 1=1 --`) reaches
//! FTS5 as an operator but what this grammar offers:
//!
//! - words, all of which must match (`deploy staging`);
//! - `"a phrase"` (an unclosed quote runs to the end);
//! - `prefix*` (at least two characters before the `*`);
//! - `OR` between two terms (`redis OR memcached`);
//! - `-word` leaves out memories with that word.

/// The longest query taken.
pub const MAX_QUERY_LEN: usize = 1000;
/// The most terms in one query.
const MAX_TERMS: usize = 32;

#[derive(Debug, PartialEq)]
enum Term {
    Word {
        text: String,
        prefix: bool,
        not: bool,
    },
    Phrase(String),
    Or,
}

fn quoted(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

/// Whether `text` has something the tokenizer keeps (a letter or digit).
fn has_word(text: &str) -> bool {
    text.chars().any(char::is_alphanumeric)
}

fn terms(input: &str) -> Vec<Term> {
    let mut terms = Vec::new();
    let mut chars = input.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        if c == '"' {
            chars.next();
            let mut phrase = String::new();
            for c in chars.by_ref() {
                if c == '"' {
                    break;
                }
                phrase.push(c);
            }
            terms.push(Term::Phrase(phrase));
            continue;
        }
        let mut word = String::new();
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() || c == '"' {
                break;
            }
            word.push(c);
            chars.next();
        }
        if word == "OR" {
            terms.push(Term::Or);
            continue;
        }
        let not = word.len() > 1 && word.starts_with('-');
        let body = if not { &word[1..] } else { &word[..] };
        let prefix = body.ends_with('*');
        let text = body.trim_end_matches('*').to_string();
        let prefix = prefix && text.chars().filter(|c| c.is_alphanumeric()).count() >= 2;
        terms.push(Term::Word { text, prefix, not });
    }
    terms
}

/// How one engine's query language joins terms.
struct Operators {
    /// Between the two sides of `OR` (the pair is then parenthesized).
    or: &'static str,
    /// Between the terms that must all match.
    and: &'static str,
    /// Before a term that must not match.
    not: &'static str,
}

/// Why a search's query gives nothing to search with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// Longer than [`MAX_QUERY_LEN`].
    #[error("the query is {bytes} bytes; a search takes at most {MAX_QUERY_LEN}")]
    TooLong {
        /// Its length in bytes.
        bytes: usize,
    },
    /// More terms than a search takes (32).
    #[error("the query has more than {MAX_TERMS} terms; search for the few words that matter")]
    TooManyTerms,
    /// Only punctuation, or only words left out.
    #[error(
        "the query {query:?} has no word to search for (a leading `-` only leaves words out): \
         give at least one word, \"a phrase\" or a prefix*"
    )]
    NoWord {
        /// The query's first 100 characters.
        query: String,
    },
}

/// The terms of `input` rendered by `render` (a term, and whether it is left out) and
/// joined with `ops`; or why there is nothing to search for. The one place the grammar is
/// applied, for both engines.
fn combine(
    input: &str,
    ops: &Operators,
    mut render: impl FnMut(Term) -> Option<(String, bool)>,
) -> Result<String, QueryError> {
    if input.len() > MAX_QUERY_LEN {
        return Err(QueryError::TooLong { bytes: input.len() });
    }
    let mut positive: Vec<String> = Vec::new();
    let mut negative: Vec<String> = Vec::new();
    let mut pending_or = false;
    let mut count = 0;
    for term in terms(input) {
        if term == Term::Or {
            pending_or = !positive.is_empty();
            continue;
        }
        // Only punctuation: nothing the index holds.
        let Some((expr, not)) = render(term) else {
            continue;
        };
        count += 1;
        if count > MAX_TERMS {
            return Err(QueryError::TooManyTerms);
        }
        if not {
            negative.push(expr);
        } else if pending_or && let Some(last) = positive.last_mut() {
            *last = format!("({last}{}{expr})", ops.or);
            pending_or = false;
        } else {
            positive.push(expr);
        }
    }
    if positive.is_empty() {
        return Err(QueryError::NoWord {
            query: input.chars().take(100).collect(),
        });
    }
    let mut expr = positive.join(ops.and);
    for not in negative {
        expr = format!("{expr}{}{not}", ops.not);
    }
    Ok(expr)
}

/// The FTS5 expression for `input`, or why there is nothing to search for.
pub fn fts_query(input: &str) -> Result<String, QueryError> {
    let ops = Operators {
        or: " OR ",
        and: " AND ",
        not: " NOT ",
    };
    combine(input, &ops, |term| match term {
        Term::Phrase(text) if has_word(&text) => Some((quoted(text.trim()), false)),
        Term::Word { text, prefix, not } if has_word(&text) => {
            let mut expr = quoted(&text);
            if prefix {
                expr.push('*');
            }
            Some((expr, not))
        }
        _ => None,
    })
}

/// The same search for Postgres: a `tsquery` expression whose terms are parameters
/// numbered from `first` (their values returned in order). Words are matched as
/// `plainto_tsquery` matches them (stemmed, stop words dropped), a phrase as
/// `phraseto_tsquery`, a prefix as `'word':*`; `OR` is `||`, a leading `-` is `!!`.
pub(super) fn ts_query(input: &str, first: usize) -> Result<(String, Vec<String>), QueryError> {
    let ops = Operators {
        or: " || ",
        and: " && ",
        not: " && !!",
    };
    let mut values: Vec<String> = Vec::new();
    let mut param = |value: String| {
        values.push(value);
        format!("?{}", first + values.len() - 1)
    };
    let expr = combine(input, &ops, |term| match term {
        Term::Phrase(text) if has_word(&text) => Some((
            format!(
                "phraseto_tsquery('english', {})",
                param(text.trim().to_string())
            ),
            false,
        )),
        Term::Word { text, prefix, not } if has_word(&text) => {
            let plain = text.chars().all(|c| c.is_alphanumeric() || c == '_');
            let expr = if prefix && plain {
                format!(
                    "to_tsquery('english', {})",
                    param(format!("'{}':*", text.to_lowercase()))
                )
            } else {
                format!("plainto_tsquery('english', {})", param(text))
            };
            Some((expr, not))
        }
        _ => None,
    })?;
    Ok((format!("({expr})"), values))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_phrases_prefixes_or_and_not() {
        assert_eq!(
            fts_query("deploy staging").unwrap(),
            "\"deploy\" AND \"staging\""
        );
        assert_eq!(
            fts_query("\"blue green\" dep*").unwrap(),
            "\"blue green\" AND \"dep\"*"
        );
        assert_eq!(
            fts_query("redis OR memcached cache").unwrap(),
            "(\"redis\" OR \"memcached\") AND \"cache\""
        );
        assert_eq!(
            fts_query("cache -redis").unwrap(),
            "\"cache\" NOT \"redis\""
        );
    }

    #[test]
    fn postgres_queries_take_every_term_as_a_parameter() {
        let (expr, values) =
            ts_query("\"blue green\" dep* redis OR memcached -x1 it's", 6).unwrap();
        assert_eq!(
            expr,
            "(phraseto_tsquery('english', ?6) && to_tsquery('english', ?7) && \
             (plainto_tsquery('english', ?8) || plainto_tsquery('english', ?9)) && \
             plainto_tsquery('english', ?11) && !!plainto_tsquery('english', ?10))"
        );
        assert_eq!(
            values,
            ["blue green", "'dep':*", "redis", "memcached", "x1", "it's"]
        );
        assert!(
            ts_query("-x", 1)
                .unwrap_err()
                .to_string()
                .contains("no word to search for")
        );
    }

    #[test]
    fn hostile_input_becomes_quoted_words_or_a_clear_error() {
        assert_eq!(fts_query("NEAR(a b)").unwrap(), "\"NEAR(a\" AND \"b)\"");
        assert_eq!(
            fts_query("x\" OR 1=1 --").unwrap(),
            "\"x\" AND \"OR 1=1 --\""
        );
        assert_eq!(
            fts_query("'; DROP TABLE memories; --").unwrap(),
            "\"DROP\" AND \"TABLE\" AND \"memories;\""
        );
        for nothing in ["", "   ", "\"", "*", "-x", "OR", "()", "\"\""] {
            let err = fts_query(nothing).unwrap_err().to_string();
            assert!(err.contains("no word to search for"), "{nothing:?}: {err}");
        }
        assert_eq!(fts_query(&"a ".repeat(40)), Err(QueryError::TooManyTerms));
        assert!(
            fts_query(&"a".repeat(2000))
                .unwrap_err()
                .to_string()
                .contains("bytes")
        );
        // A one-letter prefix would match half the index: it is a plain word.
        assert_eq!(fts_query("a*").unwrap(), "\"a\"");
    }
}
