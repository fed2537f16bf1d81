//! Translations for `t(key, vars)` and `t(key, fallback)`, from an optional `lang.json` in
//! the plugin directory.
//!
//! The file maps language tags to string tables: `{"en": {"hi": "Hello {name}"}, "zh":
//! {...}}`. A key is looked up in the chosen language, then in English, then in the other
//! languages the plugin ships, then the fallback text the call gives (Agent Spaces' `t(key,
//! "English text")`), and only then is the key itself returned — so a missing translation
//! shows something readable rather than a raw key.

use std::path::Path;

use serde_json::{Map, Value};

/// The largest `lang.json` read.
const MAX_LANG_FILE: u64 = 1024 * 1024;

/// The language used when nothing else is set or the chosen one has no table.
const FALLBACK: &str = "en";

/// The primary language subtag of a locale string: `zh_CN.UTF-8` → `zh`, `en-US` → `en`.
/// `C` and `POSIX` (no language) give `None`.
pub(crate) fn language_of(locale: &str) -> Option<String> {
    let primary = locale
        .split(['_', '-', '.', '@'])
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    if primary.is_empty() || primary == "c" || primary == "posix" {
        None
    } else {
        Some(primary)
    }
}

/// The language picked from the environment: `TOOLSHED_LANG`, then `LANG`, else English.
pub(crate) fn language_from_env() -> String {
    ["TOOLSHED_LANG", "LANG"]
        .iter()
        .filter_map(|var| std::env::var(var).ok())
        .find_map(|value| language_of(&value))
        .unwrap_or_else(|| FALLBACK.to_string())
}

/// One plugin's string tables, the chosen language first.
#[derive(Debug, Clone, Default)]
pub(crate) struct Translations {
    chosen: Map<String, Value>,
    fallback: Map<String, Value>,
    /// The other languages' tables, by language tag.
    others: Vec<Map<String, Value>>,
    /// The languages the file has, but the chosen one.
    languages: Vec<String>,
    /// The file's text, to build the tables of another language from.
    source: Option<std::sync::Arc<str>>,
}

impl Translations {
    /// Reads `lang.json` from `dir` if it exists; `language` is a primary subtag.
    pub(crate) fn load(dir: &Path, language: &str) -> Result<Self, String> {
        let path = dir.join("lang.json");
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(format!("cannot read lang.json: {e}")),
        };
        if !meta.is_file() {
            return Err("lang.json must be a regular file".into());
        }
        if meta.len() > MAX_LANG_FILE {
            return Err(format!(
                "lang.json is {} bytes; the limit is {MAX_LANG_FILE}",
                meta.len()
            ));
        }
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("cannot read lang.json: {e}"))?;
        Self::parse(&text, language)
    }

    /// Builds the tables from the text of a `lang.json`.
    pub(crate) fn parse(text: &str, language: &str) -> Result<Self, String> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| format!("lang.json is not valid JSON: {e}"))?;
        let Value::Object(mut tables) = value else {
            return Err(
                "lang.json must be an object of language tables: {\"en\": {...}, \"zh\": {...}}"
                    .into(),
            );
        };
        let languages: Vec<String> = tables
            .keys()
            .filter(|l| l.as_str() != language)
            .cloned()
            .collect();
        let mut table = |lang: &str| match tables.remove(lang) {
            Some(Value::Object(t)) => Ok(t),
            None => Ok(Map::new()),
            Some(_) => Err(format!("lang.json: `{lang}` must be an object of strings")),
        };
        let fallback = table(FALLBACK)?;
        let chosen = if language == FALLBACK {
            Map::new()
        } else {
            table(language)?
        };
        let mut others = Vec::new();
        for (lang, rest) in tables {
            match rest {
                Value::Object(t) => others.push(t),
                _ => return Err(format!("lang.json: `{lang}` must be an object of strings")),
            }
        }
        Ok(Self {
            chosen,
            fallback,
            others,
            languages,
            source: Some(text.into()),
        })
    }

    /// The other languages the plugin ships, each with its tables (that language chosen):
    /// for titles and descriptions in every language.
    pub(crate) fn other_languages(&self) -> Vec<(String, Translations)> {
        let Some(text) = &self.source else {
            return Vec::new();
        };
        self.languages
            .iter()
            .filter_map(|l| Some((l.clone(), Self::parse(text, l).ok()?)))
            .collect()
    }

    /// Every table, in the order a key is looked up: the chosen language, English, then
    /// the others (for a runtime that translates on its own side).
    pub(crate) fn tables(&self) -> Vec<Value> {
        std::iter::once(&self.chosen)
            .chain(std::iter::once(&self.fallback))
            .chain(&self.others)
            .map(|t| Value::Object(t.clone()))
            .collect()
    }

    /// The text for `key` with `{name}` placeholders replaced from `vars`; `text` when no
    /// table has the key.
    pub(crate) fn translate(
        &self,
        key: &str,
        text: Option<&str>,
        vars: Option<&Map<String, Value>>,
    ) -> String {
        let template = lookup(&self.chosen, key)
            .or_else(|| lookup(&self.fallback, key))
            .or_else(|| self.others.iter().find_map(|t| lookup(t, key)))
            .or(text)
            .unwrap_or(key);
        match vars {
            Some(vars) if !vars.is_empty() => substitute(template, vars),
            _ => template.to_string(),
        }
    }
}

/// A string at `key`, or at the dotted path `a.b.c` through nested tables.
fn lookup<'a>(table: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    if let Some(Value::String(s)) = table.get(key) {
        return Some(s);
    }
    let mut parts = key.split('.');
    let mut current = table.get(parts.next()?)?;
    for part in parts {
        current = current.as_object()?.get(part)?;
    }
    current.as_str()
}

fn substitute(template: &str, vars: &Map<String, Value>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) if vars.contains_key(&after[..close]) => {
                match &vars[&after[..close]] {
                    Value::String(s) => out.push_str(s),
                    other => out.push_str(&other.to_string()),
                }
                rest = &after[close + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn falls_back_to_english_then_to_the_key() {
        let text = r#"{"en": {"hi": "Hello {name}", "only_en": "E", "nested": {"a": "N"}},
                       "zh": {"hi": "你好 {name}"}}"#;
        let zh = Translations::parse(text, "zh").unwrap();
        let vars = json!({"name": "Ada", "n": 3});
        let vars = vars.as_object();
        assert_eq!(zh.translate("hi", None, vars), "你好 Ada");
        assert_eq!(zh.translate("only_en", None, None), "E");
        assert_eq!(zh.translate("nested.a", None, None), "N");
        assert_eq!(zh.translate("missing {n}", None, vars), "missing 3");
        assert_eq!(zh.translate("{unclosed", None, vars), "{unclosed");
        let fr = Translations::parse(text, "fr").unwrap();
        assert_eq!(fr.translate("hi", None, vars), "Hello Ada");
        assert!(Translations::parse("[1]", "en").is_err());
    }

    #[test]
    fn a_key_missing_everywhere_takes_the_fallback_text_never_shows_raw() {
        // Failed before: `t("action.send.label", "Send")` answered the key itself, and a
        // key only the Chinese table has was not found in English.
        let text = r#"{"en": {"a": "A"}, "zh": {"only_zh": "中"}}"#;
        let en = Translations::parse(text, "en").unwrap();
        assert_eq!(
            en.translate("action.send.label", Some("Send"), None),
            "Send"
        );
        assert_eq!(en.translate("only_zh", Some("fallback"), None), "中");
        assert_eq!(en.translate("a", Some("fallback"), None), "A");
        assert_eq!(
            en.translate(
                "message.done",
                Some("Sent {n}"),
                json!({"n": 2}).as_object()
            ),
            "Sent 2"
        );
        assert_eq!(en.translate("no.fallback", None, None), "no.fallback");
    }

    #[test]
    fn picks_the_primary_language_subtag() {
        assert_eq!(language_of("zh_CN.UTF-8").as_deref(), Some("zh"));
        assert_eq!(language_of("en-US").as_deref(), Some("en"));
        assert_eq!(language_of("C.UTF-8"), None);
        assert_eq!(language_of(""), None);
    }
}
