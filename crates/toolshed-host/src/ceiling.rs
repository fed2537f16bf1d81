//! The per-call output ceiling (`[limits] max_output_bytes`): whatever a tool and its
//! arguments ask for, a reply never holds more text than the ceiling. Tools cap their own
//! output first, with their own word on how to go on (an `offset`, a `start_index`, a
//! session to read from); this is the backstop for every tool, built-in, JavaScript or
//! mounted from an MCP server.
//!
//! A reply's size is what a door sends a model: its text blocks, its JSON blocks and its
//! structured result as JSON, and — for a reply that has only structured data — that data
//! again as the pretty text doors add for clients that show text alone. Images are not
//! counted: a model pays for them by their pixels, and the tools that return them cap them.
//!
//! Past the ceiling, the structured result is left out (the text carries the same, or the
//! data becomes that text when there was none), then the text is cut — at a line end where
//! one is near — and a last line says how big the reply was and how to ask for less.

use std::io::Write;

use toolshed_core::{Content, ToolOutput};

/// Counts bytes written, keeping none.
#[derive(Default)]
struct Counter(usize);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn compact_len(value: &serde_json::Value) -> usize {
    let mut counter = Counter::default();
    // Writing a `Value` to a sink that never fails cannot fail.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

fn pretty_len(value: &serde_json::Value) -> usize {
    let mut counter = Counter::default();
    let _ = serde_json::to_writer_pretty(&mut counter, value);
    counter.0
}

fn pretty(value: &serde_json::Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// The bytes of `output` a door sends a model (see the module docs).
pub(crate) fn reply_bytes(output: &ToolOutput) -> usize {
    let mut total = 0;
    let mut has_text = false;
    for block in &output.content {
        match block {
            Content::Text { text } => {
                has_text = true;
                total += text.len();
            }
            Content::Json { json: value } | Content::Mcp { block: value } => {
                has_text = true;
                total += pretty_len(value);
            }
            Content::Image { .. } => {}
        }
    }
    if let Some(structured) = &output.structured {
        total += compact_len(structured);
        if !has_text {
            total += pretty_len(structured);
        }
    }
    total
}

/// `output` within `max` bytes (see the module docs); unchanged when it fits.
pub(crate) fn enforce(mut output: ToolOutput, max: usize) -> ToolOutput {
    let before = reply_bytes(&output);
    if before <= max {
        return output;
    }
    // Text only from here: the structured result, or JSON blocks, as their text.
    let structured = output.structured.take();
    let has_text = output.content.iter().any(|b| {
        matches!(
            b,
            Content::Text { .. } | Content::Json { .. } | Content::Mcp { .. }
        )
    });
    let mut blocks: Vec<Content> = Vec::with_capacity(output.content.len() + 1);
    if !has_text && let Some(value) = &structured {
        blocks.push(Content::Text {
            text: pretty(value),
        });
    }
    for block in output.content {
        blocks.push(match block {
            Content::Json { json: value } | Content::Mcp { block: value } => Content::Text {
                text: pretty(&value),
            },
            other => other,
        });
    }
    let note = format!(
        "\n[cut by toolshed: this reply was {before} bytes and one call returns at most {max} \
         ([limits] max_output_bytes). Ask for less: a smaller limit or max_* argument, an \
         offset or page, a narrower pattern or path.]"
    );
    let mut budget = max.saturating_sub(note.len());
    let mut kept = Vec::with_capacity(blocks.len() + 1);
    for block in blocks {
        match block {
            Content::Text { text } if budget == 0 => drop(text),
            Content::Text { mut text } => {
                if text.len() > budget {
                    text.truncate(cut_point(&text, budget));
                }
                budget -= text.len();
                kept.push(Content::Text { text });
            }
            image => kept.push(image),
        }
    }
    kept.push(Content::Text {
        text: note.trim_start().to_string(),
    });
    output.content = kept;
    output
}

/// Where to cut `text` to keep at most `budget` bytes: after the last line end in the
/// second half of the budget, else at the last character boundary.
fn cut_point(text: &str, budget: usize) -> usize {
    let mut at = budget.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    match text[..at].rfind('\n') {
        Some(line_end) if line_end + 1 >= at / 2 => line_end + 1,
        _ => at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_reply_that_fits_is_left_alone() {
        let out = ToolOutput::text("hello");
        assert_eq!(enforce(out.clone(), 100), out);
        let structured = ToolOutput::structured(json!({"a": 1}));
        assert_eq!(enforce(structured.clone(), 100), structured);
    }

    #[test]
    fn long_text_is_cut_at_a_line_and_says_so() {
        let text: String = (0..2000).map(|i| format!("line {i}\n")).collect();
        let out = enforce(ToolOutput::text(text.clone()), 4096);
        assert!(reply_bytes(&out) <= 4096, "{}", reply_bytes(&out));
        let joined = out.text_joined();
        assert!(joined.starts_with("line 0\nline 1\n"), "{joined}");
        let note = joined.lines().last().unwrap();
        assert!(
            note.contains(&format!("this reply was {} bytes", text.len())),
            "{note}"
        );
        assert!(note.contains("[limits] max_output_bytes"), "{note}");
        // The kept text ends at a whole line.
        let kept = match &out.content[0] {
            Content::Text { text } => text,
            other => panic!("{other:?}"),
        };
        assert!(kept.ends_with('\n'), "{kept:?}");
    }

    #[test]
    fn structured_data_is_counted_twice_without_text_and_becomes_text_when_cut() {
        let big = json!({"items": (0..5000).collect::<Vec<_>>()});
        let out = ToolOutput::structured(big.clone());
        assert!(reply_bytes(&out) > compact_len(&big) * 2 - 1);
        let cut = enforce(out, 8192);
        assert!(cut.structured.is_none());
        assert!(reply_bytes(&cut) <= 8192, "{}", reply_bytes(&cut));
        assert!(cut.text_joined().starts_with("{\n  \"items\": [\n    0,"));
    }

    #[test]
    fn text_with_structured_drops_the_structured_copy_first() {
        let mut out = ToolOutput::text("x".repeat(3000));
        out.structured = Some(json!({"copy": "y".repeat(3000)}));
        let cut = enforce(out, 4096);
        assert!(cut.structured.is_none());
        assert!(cut.text_joined().starts_with(&"x".repeat(3000)));
        assert!(reply_bytes(&cut) <= 4096);
    }

    #[test]
    fn images_pass_and_multibyte_text_is_cut_on_a_boundary() {
        let mut out = ToolOutput::text("é".repeat(10_000));
        out.content.push(Content::Image {
            data: "A".repeat(50_000),
            mime_type: "image/png".into(),
        });
        let cut = enforce(out, 5000);
        assert!(reply_bytes(&cut) <= 5000);
        assert!(
            cut.content
                .iter()
                .any(|b| matches!(b, Content::Image { data, .. } if data.len() == 50_000))
        );
    }
}
