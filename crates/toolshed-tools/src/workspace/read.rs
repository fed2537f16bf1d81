//! `workspace_read`: text with line numbers, images as images, binaries refused.

use std::fmt::Write as _;

use base64::Engine;
use serde_json::json;
use toolshed_core::{Content, ToolError, ToolOutput};

use super::Env;
use super::spec::ReadArgs;

/// The largest text file read.
pub(super) const MAX_TEXT_BYTES: u64 = 16 * 1024 * 1024;
/// The largest image returned.
pub(super) const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;
/// The most output bytes of one call that names a `limit`: under the host's default
/// per-call ceiling (100,000 bytes), so that the reply says how to read on (`offset=N`)
/// rather than being cut by the pipeline.
pub(super) const OUTPUT_CAP: usize = 96 * 1024;
/// The most output bytes of one call that names no `limit`: about 12k tokens, what a
/// model can take in one turn without crowding out its work (a big log read whole was
/// 40k tokens). The reply says how to read on.
pub(super) const DEFAULT_OUTPUT_CAP: usize = 50 * 1024;
/// Longer lines are cut.
pub(super) const LINE_CAP: usize = 2000;
/// Lines returned when no limit is given.
pub(super) const DEFAULT_LIMIT: usize = 2000;

/// The MIME type of an image format toolshed returns as an image.
pub(super) fn image_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// A guess at what a binary file is, for the refusal message.
fn binary_kind(bytes: &[u8]) -> &'static str {
    let magic: &[(&[u8], &str)] = &[
        (b"%PDF", "a PDF document"),
        (
            b"PK\x03\x04",
            "a ZIP archive (or an Office document, JAR, …)",
        ),
        (&[0x1f, 0x8b], "gzip-compressed data"),
        (b"\x7fELF", "an ELF executable or library"),
        (b"SQLite format 3\0", "an SQLite database"),
        (&[0x28, 0xb5, 0x2f, 0xfd], "zstd-compressed data"),
    ];
    magic
        .iter()
        .find(|(m, _)| bytes.starts_with(m))
        .map(|(_, k)| *k)
        .unwrap_or("binary data")
}

/// Whether `bytes` is text toolshed shows: UTF-8 without NUL bytes.
pub(super) fn is_text(bytes: &[u8]) -> bool {
    !bytes[..bytes.len().min(8192)].contains(&0) && std::str::from_utf8(bytes).is_ok()
}

/// Appends `line` to `out`, cut at [`LINE_CAP`] characters.
fn push_cut_line(out: &mut String, line: &str) {
    // No more bytes than the cap means no more characters: nothing to count.
    if line.len() <= LINE_CAP {
        out.push_str(line);
        return;
    }
    match line.char_indices().nth(LINE_CAP) {
        None => out.push_str(line),
        Some((at, _)) => {
            out.push_str(&line[..at]);
            out.push_str("… [line cut at ");
            out.push_str(&LINE_CAP.to_string());
            out.push_str(" characters]");
        }
    }
}

/// Appends `n` right-aligned in `width` columns and a tab (`{n:>width$}\t`), without the
/// formatting machinery: once per line shown, it cost more than the line itself.
fn push_line_number(out: &mut String, n: usize, width: usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let pad = width.saturating_sub(digits.len() - at);
    out.extend(std::iter::repeat_n(' ', pad));
    for &d in &digits[at..] {
        out.push(char::from(d));
    }
    out.push('\t');
}

pub(super) fn run(env: &Env, args: serde_json::Value) -> Result<ToolOutput, ToolError> {
    let args: ReadArgs = crate::args::parse(args)?;
    let contents = env.files.read(&args.path, MAX_TEXT_BYTES + 1)?;
    let bytes = &contents.bytes;
    if let Some(mime) = image_type(bytes) {
        if contents.size > MAX_IMAGE_BYTES {
            return Err(ToolError::failed(format!(
                "`{}` is a {mime} image of {} bytes; images are returned up to {MAX_IMAGE_BYTES} bytes",
                args.path, contents.size
            )));
        }
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        return Ok(ToolOutput {
            content: vec![
                Content::Text {
                    text: format!("`{}`: {mime}, {} bytes", args.path, contents.size),
                },
                Content::Image {
                    data,
                    mime_type: mime.into(),
                },
            ],
            structured: None,
            is_error: false,
        });
    }
    if contents.size > MAX_TEXT_BYTES {
        return Err(ToolError::failed(format!(
            "`{}` is {} bytes; workspace_read reads text files up to {MAX_TEXT_BYTES} bytes. Use workspace_grep to find the lines you need",
            args.path, contents.size
        )));
    }
    if !is_text(bytes) {
        return Err(ToolError::failed(format!(
            "`{}` is a binary file ({} bytes, {}); workspace_read returns text and images only",
            args.path,
            contents.size,
            binary_kind(bytes)
        )));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| ToolError::Internal(e.to_string()))?;
    let real = match &contents.real_path {
        Some(real) => real.clone(),
        None => env.files.realpath(&args.path)?,
    };
    super::ledger::record(env.ledger.as_ref(), &env.owner, &real, bytes);

    let lines: Vec<&str> = text.lines().collect();
    let total = lines.len();
    let offset = args.offset;
    let (limit, cap) = match args.limit {
        Some(limit) => (limit, OUTPUT_CAP),
        None => (DEFAULT_LIMIT, DEFAULT_OUTPUT_CAP),
    };
    if total == 0 {
        return Ok(ToolOutput::text_and_structured(
            format!("`{}` is empty (0 lines)", args.path),
            json!({"path": args.path, "total_lines": 0, "truncated": false}),
        ));
    }
    if offset > total {
        return Err(ToolError::invalid_at(
            "/offset",
            format!(
                "offset {offset} is past the end of `{}`, which has {total} lines",
                args.path
            ),
        ));
    }
    let width = total.to_string().len().max(6);
    // One buffer for the whole output, each line written into it in place: a string per
    // line cost more than reading the file.
    let shown: usize = lines
        .iter()
        .skip(offset - 1)
        .take(limit)
        .map(|l| l.len() + width + 2)
        .sum();
    let mut out = String::with_capacity(shown.min(cap) + 128);
    let mut last = offset - 1;
    for (i, line) in lines.iter().enumerate().skip(offset - 1).take(limit) {
        let start = out.len();
        push_line_number(&mut out, i + 1, width);
        push_cut_line(&mut out, line);
        out.push('\n');
        if out.len() > cap && last >= offset {
            out.truncate(start);
            break;
        }
        last = i + 1;
    }
    let truncated = last < total;
    if truncated {
        let _ = writeln!(
            out,
            "[truncated — lines {offset}-{last} of {total} shown; continue with offset={}{}]",
            last + 1,
            if args.limit.is_none() {
                ", or find the lines you need with workspace_grep"
            } else {
                ""
            }
        );
    }
    Ok(ToolOutput::text_and_structured(
        out,
        json!({
            "path": args.path,
            "total_lines": total,
            "start_line": offset,
            "end_line": last,
            "truncated": truncated,
            "next_offset": if truncated { Some(last + 1) } else { None },
        }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_numbers_are_written_as_the_formatter_writes_them() {
        for width in [0, 1, 6, 7, 12] {
            for n in [0, 1, 9, 10, 99, 100, 123_456, 9_999_999, usize::MAX] {
                let mut out = String::from("x");
                push_line_number(&mut out, n, width);
                assert_eq!(out, format!("x{n:>width$}\t"), "{n} in {width}");
            }
        }
    }
}
