//! "Did you mean": the names closest to one that was not found.

/// Up to `max` names from `candidates` closest to `wanted`: within a small edit distance, or
/// containing it (or contained in it), nearest first.
pub fn closest<'a>(
    wanted: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    max: usize,
) -> Vec<String> {
    let wanted_lower = wanted.to_lowercase();
    let limit = (wanted.chars().count() / 3).max(2);
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter_map(|c| {
            let lower = c.to_lowercase();
            let d = edit_distance(&wanted_lower, &lower);
            let related = wanted_lower.len() >= 3
                && (lower.contains(&wanted_lower) || wanted_lower.contains(&lower));
            (d <= limit || related).then_some((d, c))
        })
        .collect();
    scored.sort();
    scored
        .into_iter()
        .take(max)
        .map(|(_, c)| c.to_string())
        .collect()
}

/// Levenshtein distance over chars.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_near_and_containing_names() {
        let names = ["calculator", "datetime", "text", "json_ops", "crypto"];
        assert_eq!(closest("calculater", names, 3), vec!["calculator"]);
        assert_eq!(closest("json", names, 3), vec!["json_ops"]);
        assert_eq!(closest("date", names, 3), vec!["datetime"]);
        assert!(closest("zzzzzz", names, 3).is_empty());
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
