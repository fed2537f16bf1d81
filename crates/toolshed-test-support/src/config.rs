//! The starter config (`toolshed config init`) as a test reads it.

/// `starter` with every commented-out table header and setting (`#[table]`, `#key = value`)
/// uncommented, and its prose left commented: what the file says when a user turns every
/// setting on at its default.
pub fn uncommented(starter: &str) -> String {
    starter
        .lines()
        .map(|line| match line.strip_prefix('#') {
            Some(rest)
                if rest.starts_with('[')
                    || rest.split_once(" = ").is_some_and(|(k, _)| {
                        !k.is_empty() && k.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                    }) =>
            {
                rest
            }
            _ => line,
        })
        .map(|line| format!("{line}\n"))
        .collect()
}
