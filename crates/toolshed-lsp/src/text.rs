//! Positions as a model counts them (1-based lines, columns in characters) and as a
//! language server does (0-based lines, columns in UTF-16 code units or UTF-8 bytes).

/// How a server counts columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// UTF-16 code units: the protocol's default.
    Utf16,
    /// Bytes of UTF-8, where the server offers it.
    Utf8,
}

impl Encoding {
    /// From the `positionEncoding` a server chose (`None`: the default, UTF-16).
    pub(crate) fn from_negotiated(kind: Option<&str>) -> Self {
        match kind {
            Some("utf-8") => Encoding::Utf8,
            _ => Encoding::Utf16,
        }
    }

    fn width(self, c: char) -> u32 {
        match self {
            Encoding::Utf16 => c.len_utf16() as u32,
            Encoding::Utf8 => c.len_utf8() as u32,
        }
    }
}

/// Line `line` (0-based) of `text`, without its line ending.
pub(crate) fn line_of(text: &str, line: u32) -> Option<&str> {
    text.split('\n')
        .nth(line as usize)
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
}

/// The server's column of the 1-based character column `column` of `line_text` (a column
/// past the end stays at the end).
pub(crate) fn to_server(line_text: &str, column: u32, encoding: Encoding) -> u32 {
    line_text
        .chars()
        .take(column.saturating_sub(1) as usize)
        .map(|c| encoding.width(c))
        .sum()
}

/// The 1-based character column of the server's column `unit` of `line_text`.
pub(crate) fn from_server(line_text: &str, unit: u32, encoding: Encoding) -> u32 {
    let mut seen = 0u32;
    let mut chars = 0u32;
    for c in line_text.chars() {
        if seen >= unit {
            break;
        }
        seen += encoding.width(c);
        chars += 1;
    }
    chars + 1
}

/// The byte offset in `text` of the server position (`line`, `unit`), or `None` when the
/// line does not exist or the column is past its end (the server saw another text).
pub(crate) fn byte_offset(text: &str, line: u32, unit: u32, encoding: Encoding) -> Option<usize> {
    let mut start = 0usize;
    for _ in 0..line {
        start += text[start..].find('\n')? + 1;
    }
    let rest = &text[start..];
    let end = rest.find('\n').unwrap_or(rest.len());
    let line_text = rest[..end].strip_suffix('\r').unwrap_or(&rest[..end]);
    let mut seen = 0u32;
    for (i, c) in line_text.char_indices() {
        if seen >= unit {
            return (seen == unit).then_some(start + i);
        }
        seen += encoding.width(c);
    }
    (seen == unit).then_some(start + line_text.len())
}

/// The identifier (letters, digits, `_`) around the 1-based character `column` of `line`.
pub(crate) fn word_at(line: &str, column: u32) -> &str {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let chars: Vec<(usize, char)> = line.char_indices().collect();
    let at = (column.saturating_sub(1) as usize).min(chars.len());
    let mut start = at;
    while start > 0 && word(chars[start - 1].1) {
        start -= 1;
    }
    let mut end = at;
    while end < chars.len() && word(chars[end].1) {
        end += 1;
    }
    let byte = |i: usize| chars.get(i).map_or(line.len(), |(b, _)| *b);
    &line[byte(start)..byte(end)]
}

/// Where `symbol` stands as a whole word in `text`: the 0-based line and 1-based character
/// column of each occurrence, in order.
pub(crate) fn occurrences(text: &str, symbol: &str) -> Vec<(u32, u32)> {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut found = Vec::new();
    if symbol.is_empty() {
        return found;
    }
    for (n, line) in text.split('\n').enumerate() {
        let mut from = 0;
        while let Some(at) = line[from..].find(symbol) {
            let start = from + at;
            let end = start + symbol.len();
            let before = line[..start].chars().next_back();
            let after = line[end..].chars().next();
            if !before.is_some_and(word) && !after.is_some_and(word) {
                found.push((n as u32, line[..start].chars().count() as u32 + 1));
            }
            from = end;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_count_characters_for_the_model_and_units_for_the_server() {
        // "é" is one UTF-16 unit and two bytes; "𝄞" two units and four bytes.
        let line = "é𝄞x = 1";
        assert_eq!(to_server(line, 1, Encoding::Utf16), 0);
        assert_eq!(to_server(line, 3, Encoding::Utf16), 3);
        assert_eq!(to_server(line, 3, Encoding::Utf8), 6);
        assert_eq!(from_server(line, 3, Encoding::Utf16), 3);
        assert_eq!(from_server(line, 6, Encoding::Utf8), 3);
        assert_eq!(to_server(line, 99, Encoding::Utf16), 8);
        for col in 1..=8 {
            for enc in [Encoding::Utf8, Encoding::Utf16] {
                assert_eq!(from_server(line, to_server(line, col, enc), enc), col);
            }
        }
    }

    #[test]
    fn byte_offsets_lines_and_words() {
        let text = "ab\r\né𝄞x\nlast";
        assert_eq!(byte_offset(text, 1, 3, Encoding::Utf16), Some(4 + 2 + 4));
        assert_eq!(byte_offset(text, 1, 6, Encoding::Utf8), Some(4 + 6));
        assert_eq!(
            byte_offset(text, 0, 9, Encoding::Utf16),
            None,
            "past the line's end"
        );
        assert_eq!(byte_offset(text, 0, 2, Encoding::Utf16), Some(2));
        assert_eq!(
            byte_offset(text, 1, 1, Encoding::Utf8),
            None,
            "inside a character"
        );
        assert_eq!(word_at("let area_of = 2;", 6), "area_of");
        // Just after a name counts as on it, as a server counts it.
        assert_eq!(word_at("let area_of = 2;", 4), "let");
        assert_eq!(word_at("a  b", 3), "");
        assert_eq!(word_at("é𝄞x", 3), "x");
        assert_eq!(word_at("éa b", 1), "éa");
        assert_eq!(byte_offset(text, 2, 4, Encoding::Utf16), Some(text.len()));
        assert_eq!(byte_offset(text, 3, 0, Encoding::Utf16), None);
        assert_eq!(line_of(text, 0), Some("ab"));
        assert_eq!(line_of(text, 2), Some("last"));
        assert_eq!(
            occurrences("fn area(r: f64) {}\nlet a = area(2.0); areas();", "area"),
            vec![(0, 4), (1, 9)]
        );
    }
}
