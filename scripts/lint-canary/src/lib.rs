//! What a new copy of the checks clippy.toml forbids looks like: each must be refused.

/// A second "is this file inside that directory" check by canonicalize.
pub fn inside(dir: &std::path::Path, file: &std::path::Path) -> bool {
    match (std::fs::canonicalize(file), dir.canonicalize()) {
        (Ok(file), Ok(dir)) => file.starts_with(dir),
        _ => false,
    }
}
