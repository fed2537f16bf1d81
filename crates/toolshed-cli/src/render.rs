//! Output for people: aligned tables and one-line summaries, written to standard output
//! through [`out!`] and [`outln!`].
//!
//! A reader that goes away early (`toolshed tools list --json | head`) is normal: the rest
//! of the output is dropped, the command finishes its work (audit rows, shutdown) and exits
//! as it would have, without a word — as `rg` and `ls` do. `println!` would panic instead.
//! Any other write failure (a full disk) is reported once, and the command exits 1.

use std::io::Write as _;
use std::sync::atomic::{AtomicU8, Ordering};

use serde::Serialize;

use crate::Failure;

/// Standard output is writable.
const OPEN: u8 = 0;
/// The reader closed the pipe: further output is dropped quietly.
const GONE: u8 = 1;
/// A write failed for another reason (reported once).
const FAILED: u8 = 2;

static STDOUT: AtomicU8 = AtomicU8::new(OPEN);

/// Writes formatted text to standard output (see the module's docs for failures).
pub(crate) fn write_out(args: std::fmt::Arguments<'_>) {
    if STDOUT.load(Ordering::Relaxed) != OPEN {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            STDOUT.store(GONE, Ordering::Relaxed);
        } else {
            STDOUT.store(FAILED, Ordering::Relaxed);
            eprintln!("error: cannot write to standard output: {e}");
        }
    }
}

/// Whether a write to standard output failed for a reason other than a closed pipe.
pub(crate) fn stdout_failed() -> bool {
    STDOUT.load(Ordering::Relaxed) == FAILED
}

/// `print!` that never panics: see [`write_out`].
macro_rules! out {
    ($($arg:tt)*) => { $crate::render::write_out(format_args!($($arg)*)) };
}

/// `println!` that never panics: see [`write_out`].
macro_rules! outln {
    () => { $crate::render::write_out(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::render::write_out(format_args!("{}\n", format_args!($($arg)*))) };
}

/// Prints `value` as pretty JSON.
pub(crate) fn print_json<T: Serialize>(value: &T) -> Result<(), Failure> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| Failure::Runtime(format!("cannot encode JSON output: {e}")))?;
    outln!("{text}");
    Ok(())
}

/// Formats rows as columns padded to the widest cell; the last column is not padded.
pub(crate) fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let mut out = String::new();
    let header: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    for row in std::iter::once(&header).chain(rows) {
        let last = row.len().saturating_sub(1);
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i == last {
                line.push_str(cell);
            } else {
                let pad = widths[i].saturating_sub(cell.chars().count());
                line.push_str(cell);
                line.push_str(&" ".repeat(pad + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The first sentence of `text` when it fits in `max` chars, else its first line cut at a
/// word boundary with an ellipsis. A line that ends by introducing a list ("Operations:")
/// is not shown as if it said something.
pub(crate) fn summary(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    let sentence = line
        .char_indices()
        .find(|&(i, c)| c == '.' && line[i + 1..].starts_with(' '))
        .map_or(line, |(i, _)| &line[..=i]);
    let sentence = sentence.trim_end_matches(':');
    if sentence.chars().count() <= max {
        return sentence.to_string();
    }
    let cut: String = sentence.chars().take(max.saturating_sub(1)).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(head, _)| head);
    format!("{}…", cut.trim_end_matches([',', ';', ':']))
}

#[cfg(test)]
mod tests {
    use super::summary;

    #[test]
    fn a_summary_is_the_first_sentence_or_cut_between_words() {
        assert_eq!(
            summary("Hash, HMAC and encode bytes. Operations:\n- hash", 70),
            "Hash, HMAC and encode bytes."
        );
        assert_eq!(
            summary("Work with JSON. `operation`:", 70),
            "Work with JSON."
        );
        assert_eq!(
            summary("Random values. Set `operation`:", 70),
            "Random values."
        );
        assert_eq!(summary("one two three four", 12), "one two…");
    }
}
