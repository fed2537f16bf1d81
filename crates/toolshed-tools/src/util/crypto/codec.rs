//! Byte encodings: base64, base64url, hex and URL percent-encoding.
//!
//! The decoders report the position (1-based, in characters of the input as given) and the
//! character that is wrong, because the caller is usually a model that has to fix one
//! character of a long string and cannot count bytes.

use base64::Engine;
use base64::engine::general_purpose::{
    STANDARD, STANDARD_PAD_INDIFFERENT, URL_SAFE_NO_PAD, URL_SAFE_PAD_INDIFFERENT,
};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_encode};

/// Everything but the RFC 3986 unreserved characters (`A-Z a-z 0-9 - . _ ~`) is encoded,
/// so the result is safe as any single URL component (path segment, query key or value).
const URL_COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Which base64 alphabet a decoder expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Alphabet {
    /// `+` and `/` (RFC 4648 §4).
    Standard,
    /// `-` and `_` (RFC 4648 §5).
    UrlSafe,
    /// Either: `-`/`_` are read as `+`/`/`. Used where the caller only said "base64".
    Either,
}

/// Lowercase hex of `bytes`.
pub(super) fn encode_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

/// Standard base64 with `=` padding.
pub(super) fn encode_base64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// URL-safe base64 without padding (the JWT form).
pub(super) fn encode_base64url(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Percent-encodes `bytes` as one URL component.
pub(super) fn encode_url(bytes: &[u8]) -> String {
    percent_encode(bytes, URL_COMPONENT).to_string()
}

/// Decodes hex; ASCII whitespace between digits is ignored, either case is accepted.
pub(super) fn decode_hex(input: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(input.len() / 2);
    let mut high: Option<u8> = None;
    let mut digits = 0usize;
    for (position, c) in input.chars().enumerate() {
        if c.is_ascii_whitespace() {
            continue;
        }
        let Some(value) = c.to_digit(16) else {
            let hint = if c == 'x' && digits == 1 {
                "; drop the `0x` prefix"
            } else {
                ""
            };
            return Err(format!(
                "invalid hex character {} at position {} (1-based); hex uses only 0-9 and a-f{hint}",
                show_char(c),
                position + 1
            ));
        };
        digits += 1;
        // `to_digit(16)` is below 16, so the cast cannot truncate.
        let value = value as u8;
        match high.take() {
            None => high = Some(value),
            Some(h) => out.push(h << 4 | value),
        }
    }
    if high.is_some() {
        return Err(format!(
            "the input has {digits} hex digits, an odd number; hex needs two digits per byte, \
             so a digit is missing or extra"
        ));
    }
    Ok(out)
}

/// Decodes base64 with or without `=` padding; ASCII whitespace (line breaks) is ignored.
pub(super) fn decode_base64(input: &str, alphabet: Alphabet) -> Result<Vec<u8>, String> {
    let name = match alphabet {
        Alphabet::UrlSafe => "base64url",
        Alphabet::Standard | Alphabet::Either => "base64",
    };
    // The original byte offset of every kept byte, so errors point into the input as given.
    let mut kept = Vec::with_capacity(input.len());
    let mut offsets = Vec::with_capacity(input.len());
    for (offset, b) in input.bytes().enumerate() {
        if b.is_ascii_whitespace() {
            continue;
        }
        let b = match (alphabet, b) {
            (Alphabet::Either, b'-') => b'+',
            (Alphabet::Either, b'_') => b'/',
            _ => b,
        };
        kept.push(b);
        offsets.push(offset);
    }
    let engine = match alphabet {
        Alphabet::UrlSafe => &URL_SAFE_PAD_INDIFFERENT,
        Alphabet::Standard | Alphabet::Either => &STANDARD_PAD_INDIFFERENT,
    };
    engine.decode(&kept).map_err(|e| {
        let at = |offset: usize| {
            let original = offsets.get(offset).copied().unwrap_or(input.len());
            describe_position(input, original)
        };
        match e {
            base64::DecodeError::InvalidByte(offset, byte) => {
                let (position, c) = at(offset);
                let c = c.unwrap_or(char::from(byte));
                let hint = match (alphabet, c) {
                    (_, '=') => "; padding `=` may only appear at the very end",
                    (Alphabet::Standard, '-' | '_') => {
                        "; `-` and `_` belong to base64url, use encoding `base64url`"
                    }
                    (Alphabet::UrlSafe, '+' | '/') => {
                        "; `+` and `/` belong to standard base64, use encoding `base64`"
                    }
                    _ => "",
                };
                format!(
                    "invalid {name} character {} at position {position} (1-based){hint}",
                    show_char(c)
                )
            }
            base64::DecodeError::InvalidLength(symbols) => format!(
                "the input has {symbols} {name} symbols, which leaves a single symbol in the \
                 last group of four; the input is truncated or has one character too many"
            ),
            base64::DecodeError::InvalidLastSymbol { offset, symbol, .. } => {
                let (position, c) = at(offset);
                let c = c.unwrap_or(char::from(symbol));
                format!(
                    "the last {name} symbol {} at position {position} (1-based) carries bits \
                     that do not fit in a byte; the input is truncated or corrupted",
                    show_char(c)
                )
            }
            base64::DecodeError::InvalidPadding => format!(
                "the {name} padding is malformed: use no `=` at all, or exactly enough `=` to \
                 make the length a multiple of 4"
            ),
        }
    })
}

/// Decodes `%XX` escapes strictly; every other character, `+` included, stays as it is.
pub(super) fn decode_url(input: &str) -> Result<Vec<u8>, String> {
    let bytes = input.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b != b'%' {
            out.push(b);
            i += 1;
            continue;
        }
        let hex = |j: usize| bytes.get(j).and_then(|b| char::from(*b).to_digit(16));
        match (hex(i + 1), hex(i + 2)) {
            (Some(h), Some(l)) => {
                // Both digits are below 16, so the value fits in a byte.
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            _ => {
                let (position, _) = describe_position(input, i);
                let found: String = input[i..].chars().take(3).collect();
                return Err(format!(
                    "`%` at position {position} (1-based) is not followed by two hex digits \
                     (found `{found}`); write a literal percent sign as `%25`"
                ));
            }
        }
    }
    Ok(out)
}

/// The 1-based character position of byte `offset` in `input`, and the character there.
fn describe_position(input: &str, offset: usize) -> (usize, Option<char>) {
    match (input.get(..offset), input.get(offset..)) {
        (Some(before), Some(rest)) => (before.chars().count() + 1, rest.chars().next()),
        // Not on a character boundary: fall back to the byte offset.
        _ => (offset + 1, None),
    }
}

/// A character quoted for an error message, with control characters made visible.
fn show_char(c: char) -> String {
    if c.is_control() || c.is_whitespace() {
        format!("U+{:04X}", u32::from(c))
    } else {
        format!("`{c}`")
    }
}
