//! Turning what a child printed into text a model can read.
//!
//! Output is bytes: maybe not UTF-8, maybe full of terminal control sequences (colours,
//! cursor movement, window titles) that cost tokens and can hide text. [`clean`] decodes
//! lossily, removes escape sequences and other control characters (keeping newlines and
//! tabs), and applies carriage returns the way a terminal shows them: `50%\r100%` is
//! `100%`.

/// The readable text of `bytes`.
pub fn clean(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::with_capacity(text.len());
    let mut line = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => skip_escape(&mut chars),
            // CSI and OSC introducers of the 8-bit forms.
            '\u{9b}' => skip_until_final(&mut chars),
            '\u{9d}' => skip_string(&mut chars),
            '\n' => {
                out.push_str(&line);
                out.push('\n');
                line.clear();
            }
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    continue;
                }
                // The cursor returns to the start of the line: what follows overwrites it.
                line.clear();
            }
            '\t' => line.push('\t'),
            '\u{8}' => {
                line.pop();
            }
            c if c.is_control() => {}
            c => line.push(c),
        }
    }
    out.push_str(&line);
    out
}

fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.next() {
        Some('[') => skip_until_final(chars),
        Some(']' | 'P' | 'X' | '^' | '_') => skip_string(chars),
        // Two-byte sequences with an intermediate (`ESC ( B`, `ESC # 8`).
        Some('(' | ')' | '*' | '+' | '#' | '%' | ' ') => {
            chars.next();
        }
        _ => {}
    }
}

/// A CSI sequence: parameter and intermediate bytes, then one final byte in `@`..=`~`.
fn skip_until_final(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if ('@'..='~').contains(&c) {
            return;
        }
    }
}

/// An OSC, DCS or similar string: ends at BEL or at `ESC \`.
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => return,
            '\u{1b}' if chars.peek() == Some(&'\\') => {
                chars.next();
                return;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::clean;

    #[test]
    fn colours_titles_and_cursor_moves_are_removed() {
        let raw = b"\x1b[1;31merror\x1b[0m: \x1b]0;title\x07bad\x1b[2K\x1b(B!\n";
        assert_eq!(clean(raw), "error: bad!\n");
    }

    #[test]
    fn carriage_returns_overwrite_like_a_terminal() {
        assert_eq!(clean(b"10%\r50%\r100%\ndone\r\n"), "100%\ndone\n");
        assert_eq!(clean(b"abc\x08d"), "abd");
    }

    #[test]
    fn invalid_utf8_becomes_replacement_characters() {
        assert_eq!(clean(b"ok \xff\xfe end"), "ok \u{fffd}\u{fffd} end");
    }

    #[test]
    fn other_controls_are_dropped_but_tabs_kept() {
        assert_eq!(clean(b"a\x00b\x07c\td"), "abc\td");
    }
}
