//! Character references: `&amp;`, `&#8217;`, `&#x2019;` and the named ones real pages use.
//!
//! The full HTML table has 2,231 names; pages in the wild use a few dozen. An unknown name
//! is left as written, which a reader still understands.

/// Named references recognized, by name (without `&` and `;`).
const NAMED: &[(&str, char)] = &[
    ("amp", '&'),
    ("lt", '<'),
    ("gt", '>'),
    ("quot", '"'),
    ("apos", '\''),
    ("nbsp", '\u{a0}'),
    ("copy", '©'),
    ("reg", '®'),
    ("trade", '™'),
    ("mdash", '—'),
    ("ndash", '–'),
    ("hellip", '…'),
    ("lsquo", '‘'),
    ("rsquo", '’'),
    ("ldquo", '“'),
    ("rdquo", '”'),
    ("sbquo", '‚'),
    ("bdquo", '„'),
    ("laquo", '«'),
    ("raquo", '»'),
    ("lsaquo", '‹'),
    ("rsaquo", '›'),
    ("bull", '•'),
    ("middot", '·'),
    ("times", '×'),
    ("divide", '÷'),
    ("minus", '−'),
    ("plusmn", '±'),
    ("deg", '°'),
    ("micro", 'µ'),
    ("para", '¶'),
    ("sect", '§'),
    ("euro", '€'),
    ("pound", '£'),
    ("yen", '¥'),
    ("cent", '¢'),
    ("larr", '←'),
    ("rarr", '→'),
    ("uarr", '↑'),
    ("darr", '↓'),
    ("harr", '↔'),
    ("le", '≤'),
    ("ge", '≥'),
    ("ne", '≠'),
    ("asymp", '≈'),
    ("infin", '∞'),
    ("frac12", '½'),
    ("frac14", '¼'),
    ("frac34", '¾'),
    ("sup2", '²'),
    ("sup3", '³'),
    ("shy", '\u{ad}'),
    ("zwj", '\u{200d}'),
    ("zwnj", '\u{200c}'),
    ("thinsp", '\u{2009}'),
    ("ensp", '\u{2002}'),
    ("emsp", '\u{2003}'),
    ("iexcl", '¡'),
    ("iquest", '¿'),
    ("auml", 'ä'),
    ("ouml", 'ö'),
    ("uuml", 'ü'),
    ("Auml", 'Ä'),
    ("Ouml", 'Ö'),
    ("Uuml", 'Ü'),
    ("szlig", 'ß'),
    ("eacute", 'é'),
    ("egrave", 'è'),
    ("ecirc", 'ê'),
    ("aacute", 'á'),
    ("agrave", 'à'),
    ("acirc", 'â'),
    ("iacute", 'í'),
    ("oacute", 'ó'),
    ("uacute", 'ú'),
    ("ntilde", 'ñ'),
    ("ccedil", 'ç'),
    ("Eacute", 'É'),
    ("aring", 'å'),
    ("oslash", 'ø'),
    ("aelig", 'æ'),
];

/// `s` with its character references replaced by the characters they stand for.
pub fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        match decode_one(after) {
            Some((c, used)) => {
                out.push(c);
                rest = &after[used..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The character a reference at the start of `s` (just after the `&`) stands for, and how
/// many bytes of `s` it used.
fn decode_one(s: &str) -> Option<(char, usize)> {
    let end = s
        .char_indices()
        .take(33)
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '#'))
        .map_or(s.len().min(33), |(i, _)| i);
    let body = &s[..end];
    let with_semicolon = s[end..].starts_with(';');
    let used = end + usize::from(with_semicolon);
    if let Some(num) = body.strip_prefix('#') {
        let code = match num.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => num.parse::<u32>().ok()?,
        };
        let c = match code {
            0 => '\u{fffd}',
            // The windows-1252 characters pages write as `&#146;` and friends.
            128..=159 => windows_1252(code as u8).unwrap_or('\u{fffd}'),
            _ => char::from_u32(code).unwrap_or('\u{fffd}'),
        };
        return Some((c, used));
    }
    // Named references need their `;`, except the few browsers accept bare.
    if !with_semicolon && !matches!(body, "amp" | "lt" | "gt" | "quot" | "nbsp") {
        return None;
    }
    NAMED
        .iter()
        .find(|(name, _)| *name == body)
        .map(|&(_, c)| (c, used))
}

/// The windows-1252 character at 0x80..=0x9F, where it differs from Latin-1.
pub fn windows_1252(byte: u8) -> Option<char> {
    const HIGH: [char; 32] = [
        '€', '\u{81}', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\u{8d}', 'Ž',
        '\u{8f}', '\u{90}', '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\u{9d}',
        'ž', 'Ÿ',
    ];
    (0x80..=0x9f)
        .contains(&byte)
        .then(|| HIGH[usize::from(byte - 0x80)])
}
