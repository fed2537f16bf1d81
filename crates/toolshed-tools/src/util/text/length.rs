//! Measuring text (`count`) and shortening it (`truncate`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolshed_core::{ToolError, ToolOutput};

use super::{shorten, to_usize};

/// What `truncate` counts.
///
/// The variants carry plain comments, not doc comments: a documented variant would turn the
/// generated schema's `enum` into a `oneOf`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(super) enum Unit {
    // Unicode scalar values; the ellipsis counts toward the limit.
    #[default]
    Chars,
    // Whitespace-separated words; the ellipsis is appended to the last word kept.
    Words,
}

impl Unit {
    fn as_str(self) -> &'static str {
        match self {
            Self::Chars => "chars",
            Self::Words => "words",
        }
    }
}

/// Characters, words, lines and bytes of `text`.
pub(super) fn count(text: &str) -> ToolOutput {
    let chars = text.chars().count();
    let words = text.split_whitespace().count();
    // `lines` does not count a final line terminator as starting another line, and finds
    // no lines in empty text.
    let lines = text.lines().count();
    let bytes = text.len();
    ToolOutput::text_and_structured(
        format!("chars: {chars}\nwords: {words}\nlines: {lines}\nbytes: {bytes}"),
        json!({"chars": chars, "words": words, "lines": lines, "bytes": bytes}),
    )
}

/// `text` cut to at most `max_length` units, with `ellipsis` marking the cut.
pub(super) fn truncate(
    text: &str,
    max_length: u64,
    ellipsis: &str,
    unit: Unit,
) -> Result<ToolOutput, ToolError> {
    if max_length == 0 {
        return Err(ToolError::invalid_at(
            "/max_length",
            "`max_length` is 0; give at least 1",
        ));
    }
    let max = to_usize(max_length);
    let (result, original_length, length) = match unit {
        Unit::Chars => truncate_chars(text, max, ellipsis)?,
        Unit::Words => truncate_words(text, max, ellipsis),
    };
    let truncated = result != text;
    let structured = json!({
        "text": result,
        "truncated": truncated,
        "length": length,
        "original_length": original_length,
        "unit": unit.as_str(),
    });
    Ok(ToolOutput::text_and_structured(result, structured))
}

/// The cut text, the original length and the new length, in characters.
fn truncate_chars(
    text: &str,
    max: usize,
    ellipsis: &str,
) -> Result<(String, usize, usize), ToolError> {
    let chars: Vec<char> = text.chars().collect();
    let total = chars.len();
    if total <= max {
        return Ok((text.to_string(), total, total));
    }
    let ellipsis_len = ellipsis.chars().count();
    if ellipsis_len > max {
        return Err(ToolError::invalid_at(
            "/ellipsis",
            format!(
                "the ellipsis `{}` is {ellipsis_len} characters, more than max_length {max}; \
                 use a shorter ellipsis (\"\" for none) or a larger max_length",
                shorten(ellipsis)
            ),
        ));
    }
    let mut cut = max - ellipsis_len;
    // Never leave a combining mark, variation selector or emoji joiner without the
    // character it belongs to: step back to the start of that cluster.
    while cut > 0 && (is_continuation(chars[cut]) || chars[cut - 1] == ZERO_WIDTH_JOINER) {
        cut -= 1;
    }
    let kept: String = chars[..cut].iter().collect();
    let mut result = kept.trim_end().to_string();
    result.push_str(ellipsis);
    let length = result.chars().count();
    Ok((result, total, length))
}

/// The cut text, the original length and the new length, in words. The ellipsis is
/// appended to the last word kept and is not counted.
fn truncate_words(text: &str, max: usize, ellipsis: &str) -> (String, usize, usize) {
    let total = text.split_whitespace().count();
    if total <= max {
        return (text.to_string(), total, total);
    }
    let mut words = 0;
    let mut end = 0;
    let mut in_word = false;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            if in_word {
                words += 1;
                end = i;
                if words == max {
                    break;
                }
            }
            in_word = false;
        } else {
            in_word = true;
        }
    }
    // `total > max`, so the max-th word is always followed by whitespace and `end` is set.
    let mut result = text.get(..end).unwrap_or(text).to_string();
    result.push_str(ellipsis);
    (result, total, max)
}

const ZERO_WIDTH_JOINER: char = '\u{200D}';

/// Characters that continue the cluster before them rather than start one.
fn is_continuation(c: char) -> bool {
    matches!(
        u32::from(c),
        0x0300..=0x036F         // combining diacritical marks
            | 0x1AB0..=0x1AFF   // combining diacritical marks extended
            | 0x1DC0..=0x1DFF   // combining diacritical marks supplement
            | 0x20D0..=0x20FF   // combining marks for symbols
            | 0xFE00..=0xFE0F   // variation selectors
            | 0xFE20..=0xFE2F   // combining half marks
            | 0x200D            // zero-width joiner
            | 0x1F3FB..=0x1F3FF // emoji skin-tone modifiers
            | 0xE0020..=0xE007F // emoji tag sequences
    )
}
