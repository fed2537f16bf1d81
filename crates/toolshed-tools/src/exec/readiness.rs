//! Whether a command session is ready for input: its output ends with a prompt (a shell's
//! `$ `, Python's `>>> `, a `Password: ` or `[y/N] ` question), it went quiet, it is still
//! busy, or it exited. `write_stdin` waits for a prompt rather than for the first short
//! silence, and says which of these ended the wait.

use std::time::Duration;

use serde_json::{Value, json};
use toolshed_ops::process::Stream;

use super::sessions::Session;

/// How long a terminal's output must stay quiet, with no prompt in sight, before a
/// `write_stdin` stops waiting for one.
pub(super) const QUIET_WITHOUT_PROMPT: Duration = Duration::from_millis(500);

/// The most bytes of the output's end looked at for a prompt.
const TAIL_BYTES: u64 = 512;

/// The longest line taken for a prompt.
const MAX_PROMPT_CHARS: usize = 200;

/// What ended a wait for a session's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Readiness {
    /// Its output ends with this prompt: it waits for input.
    Ready(String),
    /// Its output went quiet without a prompt (a program that prints none, or one still
    /// thinking).
    Quiet,
    /// The wait's window passed while it was still producing output, or before it said
    /// anything.
    Busy,
    /// It exited.
    Exited,
}

impl Readiness {
    /// The `terminal` field of a reply: `state` (`ready`, `quiet`, `busy`, `exited`) and
    /// the prompt when one was seen.
    pub(super) fn to_json(&self) -> Value {
        match self {
            Self::Ready(prompt) => json!({"state": "ready", "prompt": prompt}),
            Self::Quiet => json!({"state": "quiet"}),
            Self::Busy => json!({"state": "busy"}),
            Self::Exited => json!({"state": "exited"}),
        }
    }
}

/// The prompt the session's output ends with, if it ends with one.
pub(super) fn prompt_of(session: &Session) -> Option<String> {
    let total = session.process.output_len(Stream::Combined);
    let tail = session.process.read(
        Stream::Combined,
        total.saturating_sub(TAIL_BYTES),
        TAIL_BYTES as usize,
    );
    prompt_in(&String::from_utf8_lossy(&tail.bytes))
}

/// The prompt `text` ends with: its last line, without terminal escapes, when it ends
/// with a space after one of `$ # > % : ? ]` (or is `(name) `, as debuggers write, or
/// Python's `... `).
pub(super) fn prompt_in(text: &str) -> Option<String> {
    let plain = strip_escapes(text);
    let line = plain.rsplit(['\n', '\r']).next().unwrap_or("");
    if !line.ends_with(' ') {
        return None;
    }
    let trimmed = line.trim();
    if trimmed.is_empty() || trimmed.chars().count() > MAX_PROMPT_CHARS {
        return None;
    }
    let last = trimmed.chars().last()?;
    let prompt = matches!(last, '$' | '#' | '>' | '%' | ':' | '?' | ']')
        || trimmed == "..."
        || (trimmed.starts_with('(') && last == ')' && !trimmed.contains(' '));
    prompt.then(|| line.to_string())
}

/// `text` without terminal escape sequences (CSI `ESC [ … letter`, OSC `ESC ] … BEL` or
/// `ESC \`, and two-byte escapes).
fn strip_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('[') => {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\u{7}' {
                        break;
                    }
                    if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                        chars.next();
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_are_told_from_output() {
        for (text, prompt) in [
            ("ls\r\na b\r\nuser@host:~/src$ ", Some("user@host:~/src$ ")),
            (
                "\u{1b}[01;32mroot@box\u{1b}[00m:\u{1b}[01;34m/\u{1b}[00m# ",
                Some("root@box:/# "),
            ),
            ("Python 3.11\n>>> ", Some(">>> ")),
            (">>> def f():\n... ", Some("... ")),
            ("Password: ", Some("Password: ")),
            ("Continue? [y/N] ", Some("Continue? [y/N] ")),
            ("(Pdb) ", Some("(Pdb) ")),
            ("\u{1b}]0;title\u{7}bash-5.2$ ", Some("bash-5.2$ ")),
            ("building...\n", None),
            ("50% done", None),
            ("total: 3\n", None),
            ("", None),
        ] {
            assert_eq!(prompt_in(text).as_deref(), prompt, "{text:?}");
        }
    }
}
