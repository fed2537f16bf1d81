//! What a memory may hold: namespaces as safe relative names, tags bounded and
//! normalized, and tags as stored (one text column) and read back.

use super::*;

pub(super) fn checked_namespace(namespace: Option<&str>) -> Result<String> {
    let Some(ns) = namespace.map(str::trim).filter(|ns| !ns.is_empty()) else {
        return Ok(String::new());
    };
    // Segments that start with a letter or digit: never `..`, never absolute, should a
    // namespace become a directory (the Markdown view).
    let ok = ns.len() <= MAX_NAMESPACE_LEN
        && ns
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
        && ns
            .split('/')
            .all(|segment| segment.starts_with(|c: char| c.is_ascii_alphanumeric()));
    if !ok {
        return Err(MemoryError::Invalid(format!(
            "namespace `{}` is not valid: use 1 to {MAX_NAMESPACE_LEN} letters, digits and - _ . /, each part starting with a letter or digit (`project-x`, `team/infra`)",
            ns.chars().take(80).collect::<String>()
        )));
    }
    Ok(ns.to_string())
}

pub(super) fn checked_tags(tags: &[String]) -> Result<Vec<String>> {
    if tags.len() > MAX_TAGS {
        return Err(MemoryError::Invalid(format!(
            "{} tags given; a memory has at most {MAX_TAGS}",
            tags.len()
        )));
    }
    let mut out: Vec<String> = Vec::with_capacity(tags.len());
    for tag in tags {
        let tag = tag.trim().trim_start_matches('#').to_lowercase();
        let ok = !tag.is_empty()
            && tag.len() <= MAX_TAG_LEN
            && tag
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
        if !ok {
            return Err(MemoryError::Invalid(format!(
                "tag `{}` is not valid: use 1 to {MAX_TAG_LEN} letters, digits and - _ . : (no spaces)",
                tag.chars().take(80).collect::<String>()
            )));
        }
        if !out.contains(&tag) {
            out.push(tag);
        }
    }
    Ok(out)
}

/// Tags as stored: ` a b ` (so that ` a ` finds a whole tag).
pub(super) fn stored_tags(tags: &[String]) -> String {
    if tags.is_empty() {
        " ".into()
    } else {
        format!(" {} ", tags.join(" "))
    }
}

pub(super) fn tag_list(stored: &str) -> Vec<String> {
    stored.split_whitespace().map(str::to_string).collect()
}
