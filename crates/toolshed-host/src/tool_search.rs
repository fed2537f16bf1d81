//! Finding tools by what they do: a BM25 ranking over each tool's name, title, group and
//! description, for clients that list only a small core and search for the rest
//! (`tool_search` in discovery mode, `GET /api/v1/tools/search`).
//!
//! The index is built from the tools a caller may see at the moment it searches — a few
//! hundred at most, tokenized in well under a millisecond — so it is never stale and never
//! shows a caller what it may not use. Words are lowercased and split at everything but
//! letters and digits (`workspace_edit` is `workspace` and `edit`), common English words
//! are left out, and a light stemmer folds plurals and `-ing`/`-ed` forms together. Name
//! words weigh three times, title and group words twice, description words once; a few
//! everyday words are widened to the words tools use for them ("tests" also means
//! "command", "change" also "edit").

use std::collections::HashMap;

use toolshed_core::ToolSpec;

use crate::registry::ToolEntry;

/// The most results one search returns.
pub const MAX_SEARCH_RESULTS: usize = 50;

/// BM25's term-frequency saturation and length normalization.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Words that say nothing about what a tool does.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "any", "are", "as", "at", "be", "by", "can", "do", "for", "from", "how", "i",
    "in", "into", "is", "it", "its", "me", "my", "of", "on", "one", "or", "some", "that", "the",
    "this", "to", "tool", "use", "what", "which", "with", "you", "your",
];

/// Everyday words and the words tools use for the same thing.
const WIDEN: &[(&str, &[&str])] = &[
    ("test", &["command", "run"]),
    ("build", &["command", "run"]),
    ("compile", &["command", "run"]),
    ("execute", &["run", "command"]),
    ("change", &["edit", "replace"]),
    ("modify", &["edit", "replace"]),
    ("update", &["edit", "write"]),
    ("create", &["write", "mkdir"]),
    ("save", &["write"]),
    ("open", &["read"]),
    ("show", &["read", "list"]),
    ("look", &["search", "find"]),
    ("locate", &["find", "search"]),
    ("download", &["fetch"]),
    ("browse", &["fetch", "web"]),
    ("url", &["fetch", "http"]),
    ("api", &["http", "request"]),
    ("remove", &["delete"]),
    ("rename", &["move"]),
    ("folder", &["directory", "dir"]),
    ("directory", &["dir"]),
    ("server", &["process", "background"]),
    ("time", &["datetime"]),
    ("date", &["datetime"]),
    ("defined", &["definition"]),
    ("declared", &["definition"]),
    ("function", &["symbol"]),
    ("compute", &["arithmetic", "evaluate"]),
    ("calculate", &["arithmetic", "evaluate"]),
    ("math", &["arithmetic"]),
];

/// `text` as search words.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| stem(&w.to_lowercase()))
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
}

/// A light stemmer: folds `files`/`file`, `matches`/`match`, `running`/`run`,
/// `replace`/`replaced`/`replacing`.
fn stem(word: &str) -> String {
    let stemmed = suffixless(word);
    // replace, replacing and replaced all become `replac`.
    match stemmed.strip_suffix('e') {
        Some(rest) if rest.len() >= 4 => rest.to_string(),
        _ => stemmed,
    }
}

fn suffixless(word: &str) -> String {
    let cut = |suffix: &str| word.strip_suffix(suffix).filter(|rest| rest.len() >= 3);
    if let Some(rest) = cut("ies") {
        return format!("{rest}y");
    }
    if let Some(rest) = cut("ing").or_else(|| cut("ed")) {
        // running → run, edited → edit.
        let bytes = rest.as_bytes();
        let doubled = bytes.len() >= 2 && bytes[bytes.len() - 1] == bytes[bytes.len() - 2];
        return if doubled {
            rest[..rest.len() - 1].to_string()
        } else {
            rest.to_string()
        };
    }
    if let Some(rest) = cut("es").filter(|r| r.ends_with(['s', 'x', 'z', 'h'])) {
        return rest.to_string();
    }
    if let Some(rest) = cut("s").filter(|r| !r.ends_with('s')) {
        return rest.to_string();
    }
    word.to_string()
}

/// One tool's words, weighted by where they stand.
fn document(spec: &ToolSpec) -> HashMap<String, f64> {
    let mut terms = HashMap::new();
    let mut add = |text: &str, weight: f64| {
        for word in words(text) {
            *terms.entry(word).or_insert(0.0) += weight;
        }
    };
    add(&spec.name, 3.0);
    if let Some(title) = &spec.title {
        add(title, 2.0);
    }
    add(&spec.group, 2.0);
    add(&spec.description, 1.0);
    terms
}

/// The query's words, each everyday word widened to the words tools use.
fn query_words(query: &str) -> Vec<String> {
    let mut all: Vec<String> = Vec::new();
    for word in words(query) {
        if let Some((_, more)) = WIDEN.iter().find(|(w, _)| stem(w) == word) {
            all.extend(more.iter().map(|m| stem(m)));
        }
        all.push(word);
    }
    all.sort();
    all.dedup();
    all
}

/// The tools of `entries` that match `query`, best first, at most `limit`, with their
/// scores. A query with no usable word matches nothing.
pub fn search(entries: &[ToolEntry], query: &str, limit: usize) -> Vec<(ToolEntry, f64)> {
    let terms = query_words(query);
    if terms.is_empty() || entries.is_empty() {
        return Vec::new();
    }
    let documents: Vec<HashMap<String, f64>> = entries.iter().map(|e| document(e.spec())).collect();
    let length = |d: &HashMap<String, f64>| d.values().sum::<f64>();
    let average = documents.iter().map(length).sum::<f64>() / documents.len() as f64;
    let count = documents.len() as f64;
    // Each term's inverse document frequency, once per search.
    let idf: Vec<f64> = terms
        .iter()
        .map(|term| {
            let holding = documents.iter().filter(|d| d.contains_key(term)).count() as f64;
            ((count - holding + 0.5) / (holding + 0.5) + 1.0).ln()
        })
        .collect();
    let mut scored: Vec<(usize, f64)> = documents
        .iter()
        .enumerate()
        .filter_map(|(i, doc)| {
            let len = length(doc);
            let score: f64 = terms
                .iter()
                .zip(&idf)
                .filter_map(|(term, idf)| {
                    let tf = *doc.get(term)?;
                    Some(idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / average)))
                })
                .sum();
            (score > 0.0).then_some((i, score))
        })
        .collect();
    scored.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then_with(|| entries[a.0].spec().name.cmp(&entries[b.0].spec().name))
    });
    scored
        .into_iter()
        .take(limit.min(MAX_SEARCH_RESULTS))
        .map(|(i, score)| (entries[i].clone(), score))
        .collect()
}

/// One search result as the doors give it: name, group, plugin, summary, input schema and
/// score.
pub fn found_json(entry: &ToolEntry, score: f64) -> serde_json::Value {
    let spec = entry.spec();
    serde_json::json!({
        "name": spec.name,
        "group": spec.group,
        "plugin": entry.plugin_id,
        "summary": summary(&spec.description, 160),
        "input_schema": spec.input_schema,
        "score": (score * 1000.0).round() / 1000.0,
    })
}

/// The first sentence of a description, at most `max` characters: what a search result
/// shows of a tool.
pub fn summary(description: &str, max: usize) -> String {
    let first = description
        .split_inclusive(". ")
        .next()
        .unwrap_or(description)
        .trim()
        .trim_end_matches('.');
    if first.chars().count() <= max {
        return first.to_string();
    }
    let cut: String = first.chars().take(max.saturating_sub(1)).collect();
    format!("{}…", cut.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_stemmed_and_stop_words_dropped() {
        let got: Vec<String> = words("Replacing the texts in files, running tests").collect();
        assert_eq!(got, ["replac", "text", "file", "run", "test"]);
        assert_eq!(stem("replace"), stem("replaced"));
        assert_eq!(stem("matches"), "match");
        assert_eq!(stem("directories"), "directory");
        assert_eq!(stem("edited"), "edit");
        assert_eq!(stem("process"), "process");
        let widened = query_words("run tests");
        assert!(widened.contains(&"command".to_string()), "{widened:?}");
    }

    #[test]
    fn summaries_are_the_first_sentence() {
        assert_eq!(summary("Read a file. Then more.", 80), "Read a file");
        assert_eq!(summary("abcdefghij", 5), "abcd…");
    }
}
