//! URL slugs: lowercase ASCII words joined by a separator.

use serde_json::json;
use toolshed_core::{ToolError, ToolOutput};

use super::{shorten, to_usize};

/// Longest separator accepted, in characters.
const MAX_SEPARATOR_CHARS: usize = 16;

/// `text` as a slug: letters and digits lowercased, Latin accents folded to ASCII
/// (é → e, ß → ss), apostrophes and other letters dropped, everything else separating
/// words. With `max_length`, whole words are kept while they fit; a first word longer
/// than the limit is cut.
pub(super) fn slugify(
    text: &str,
    separator: Option<&str>,
    max_length: Option<u64>,
) -> Result<ToolOutput, ToolError> {
    let separator = separator.unwrap_or("-");
    let separator_len = separator.chars().count();
    if separator_len > MAX_SEPARATOR_CHARS {
        return Err(ToolError::invalid_at(
            "/separator",
            format!(
                "the separator `{}` is {separator_len} characters, over the limit of \
                 {MAX_SEPARATOR_CHARS}; use a short one such as `-` or `_`",
                shorten(separator)
            ),
        ));
    }
    if max_length == Some(0) {
        return Err(ToolError::invalid_at(
            "/max_length",
            "`max_length` is 0; give at least 1, or leave it out for no limit",
        ));
    }
    let max = max_length.map(to_usize);

    let mut slug = String::new();
    let mut length = 0;
    let mut truncated = false;
    for word in slug_words(text) {
        let added = if slug.is_empty() {
            word.len()
        } else {
            separator_len + word.len()
        };
        if let Some(max) = max
            && length + added > max
        {
            if slug.is_empty() {
                // Words are ASCII, so a byte index is a character index.
                slug = word.get(..max).unwrap_or(&word).to_string();
            }
            truncated = true;
            break;
        }
        if !slug.is_empty() {
            slug.push_str(separator);
        }
        slug.push_str(&word);
        length += added;
    }
    let text_out = if slug.is_empty() {
        "(empty slug: the text has no letters or digits that fold to ASCII)".to_string()
    } else {
        slug.clone()
    };
    Ok(ToolOutput::text_and_structured(
        text_out,
        json!({"text": slug, "truncated": truncated}),
    ))
}

/// The ASCII words of `text`.
fn slug_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            current.push(c);
        } else if let Some(folded) = fold(c) {
            current.push_str(folded);
        } else if is_dropped(c) {
            // Not a separator: "don't" is "dont", "日本go" is "go".
        } else if !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// Characters removed without separating words: apostrophes, combining accents (from
/// decomposed text such as `e` + U+0301), and letters or digits with no ASCII form.
fn is_dropped(c: char) -> bool {
    matches!(c, '\'' | '’' | 'ʼ' | '\u{0300}'..='\u{036F}') || c.is_alphanumeric()
}

/// The ASCII spelling of a lowercase Latin letter with a diacritic, or a ligature.
fn fold(c: char) -> Option<&'static str> {
    Some(match c {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ā' | 'ă' | 'ą' => "a",
        'æ' => "ae",
        'ç' | 'ć' | 'ĉ' | 'ċ' | 'č' => "c",
        'ď' | 'đ' | 'ð' => "d",
        'è' | 'é' | 'ê' | 'ë' | 'ē' | 'ĕ' | 'ė' | 'ę' | 'ě' => "e",
        'ĝ' | 'ğ' | 'ġ' | 'ģ' => "g",
        'ĥ' | 'ħ' => "h",
        'ì' | 'í' | 'î' | 'ï' | 'ĩ' | 'ī' | 'ĭ' | 'į' | 'ı' => "i",
        'ĳ' => "ij",
        'ĵ' => "j",
        'ķ' => "k",
        'ĺ' | 'ļ' | 'ľ' | 'ŀ' | 'ł' => "l",
        'ñ' | 'ń' | 'ņ' | 'ň' => "n",
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'ō' | 'ŏ' | 'ő' => "o",
        'œ' => "oe",
        'ŕ' | 'ŗ' | 'ř' => "r",
        'ś' | 'ŝ' | 'ş' | 'š' | 'ș' => "s",
        'ß' => "ss",
        'ţ' | 'ť' | 'ŧ' | 'ț' => "t",
        'þ' => "th",
        'ù' | 'ú' | 'û' | 'ü' | 'ũ' | 'ū' | 'ŭ' | 'ů' | 'ű' | 'ų' => "u",
        'ŵ' => "w",
        'ý' | 'ÿ' | 'ŷ' => "y",
        'ź' | 'ż' | 'ž' => "z",
        _ => return None,
    })
}
