//! Case conversion and the word splitting behind it.
//!
//! Identifier cases (snake, kebab, camel, pascal, constant) rebuild the text from its
//! words, so punctuation disappears. Title and sentence case are for prose and keep every
//! space and punctuation mark, changing only letters' case; a lone identifier such as
//! `parseHTTPResponse` or `user_id` is an exception, split into words first, because
//! "Parsehttpresponse" is never what anyone wants.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use toolshed_core::ToolOutput;

/// The case to convert to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(super) enum Case {
    Upper,
    Lower,
    Title,
    Sentence,
    Snake,
    Kebab,
    Camel,
    Pascal,
    Constant,
}

/// `text` converted to `to`, as tool output.
pub(super) fn convert(text: &str, to: Case) -> ToolOutput {
    let converted = convert_text(text, to);
    ToolOutput::text_and_structured(converted.clone(), json!({ "text": converted }))
}

fn convert_text(text: &str, to: Case) -> String {
    match to {
        Case::Upper => text.to_uppercase(),
        Case::Lower => text.to_lowercase(),
        Case::Title if is_identifier(text) => join_capitalized(&split_words(text), " "),
        Case::Sentence if is_identifier(text) => {
            let words: Vec<String> = split_words(text).iter().map(|w| w.to_lowercase()).collect();
            capitalize(&words.join(" "))
        }
        Case::Title => title_prose(text),
        Case::Sentence => sentence_prose(text),
        Case::Snake => join_lower(&split_words(text), "_"),
        Case::Kebab => join_lower(&split_words(text), "-"),
        Case::Constant => split_words(text)
            .iter()
            .map(|w| w.to_uppercase())
            .collect::<Vec<_>>()
            .join("_"),
        Case::Pascal => join_capitalized(&split_words(text), ""),
        Case::Camel => {
            let words = split_words(text);
            let mut out = String::new();
            for (i, word) in words.iter().enumerate() {
                if i == 0 {
                    out.push_str(&word.to_lowercase());
                } else {
                    out.push_str(&capitalize(word));
                }
            }
            out
        }
    }
}

/// The words of `text`: runs of letters and digits, split further at camelCase humps
/// (`fooBar`), before the last capital of an acronym that starts a word (`HTTPServer` →
/// `HTTP`, `Server`), and at a capital after a digit (`HTML5Parser` → `HTML5`, `Parser`).
/// Digits otherwise stay with their word (`base64Encode` → `base64`, `Encode`), and an
/// apostrophe inside a word is dropped (`don't` → `dont`).
pub(super) fn split_words(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous: Option<char> = None;
    for (i, &c) in chars.iter().enumerate() {
        let next = chars.get(i + 1).copied();
        if is_apostrophe(c)
            && previous.is_some_and(char::is_alphanumeric)
            && next.is_some_and(char::is_alphanumeric)
        {
            continue;
        }
        if !c.is_alphanumeric() {
            flush(&mut current, &mut words);
            previous = None;
            continue;
        }
        if let Some(p) = previous {
            let hump = c.is_uppercase() && (p.is_lowercase() || p.is_numeric());
            let acronym_end =
                c.is_uppercase() && p.is_uppercase() && next.is_some_and(char::is_lowercase);
            if hump || acronym_end {
                flush(&mut current, &mut words);
            }
        }
        current.push(c);
        previous = Some(c);
    }
    flush(&mut current, &mut words);
    words
}

fn flush(current: &mut String, words: &mut Vec<String>) {
    if !current.is_empty() {
        words.push(std::mem::take(current));
    }
}

fn is_apostrophe(c: char) -> bool {
    matches!(c, '\'' | '’' | 'ʼ')
}

/// A single identifier rather than prose: no whitespace, and snake_case or camelCase.
fn is_identifier(text: &str) -> bool {
    if text.is_empty() || text.chars().any(char::is_whitespace) {
        return false;
    }
    let mut previous_lower = false;
    for c in text.chars() {
        if c == '_' || (previous_lower && c.is_uppercase()) {
            return true;
        }
        previous_lower = c.is_lowercase();
    }
    false
}

/// `word` with its first character upper case and the rest lower case.
fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first
            .to_uppercase()
            .chain(chars.flat_map(char::to_lowercase))
            .collect(),
        None => String::new(),
    }
}

fn join_capitalized(words: &[String], separator: &str) -> String {
    words
        .iter()
        .map(|w| capitalize(w))
        .collect::<Vec<_>>()
        .join(separator)
}

fn join_lower(words: &[String], separator: &str) -> String {
    words
        .iter()
        .map(|w| w.to_lowercase())
        .collect::<Vec<_>>()
        .join(separator)
}

/// Every word capitalized, everything else kept. A word starts at a letter or digit that
/// follows neither a letter, a digit, nor an apostrophe inside a word (`don't`, not `Don'T`).
fn title_prose(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_word = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() {
            if in_word {
                out.extend(c.to_lowercase());
            } else {
                out.extend(c.to_uppercase());
            }
            in_word = true;
        } else {
            out.push(c);
            let joins_word = is_apostrophe(c) && chars.peek().is_some_and(|n| n.is_alphanumeric());
            in_word = in_word && joins_word;
        }
    }
    out
}

/// Everything lower case except the first letter of each sentence: the first in the text
/// and the first after `.`, `!` or `?` plus whitespace (closing quotes and brackets may sit
/// between the two). `3.14` and `e.g.x` do not end a sentence.
fn sentence_prose(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut capitalize_next = true;
    let mut after_terminator = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if capitalize_next {
                out.extend(c.to_uppercase());
            } else {
                out.extend(c.to_lowercase());
            }
            capitalize_next = false;
            after_terminator = false;
            continue;
        }
        out.push(c);
        if matches!(c, '.' | '!' | '?' | '…') {
            after_terminator = true;
        } else if c.is_whitespace() {
            if after_terminator {
                capitalize_next = true;
            }
        } else if !matches!(c, '"' | '\'' | ')' | ']' | '”' | '’' | '»') {
            after_terminator = false;
        }
    }
    out
}
