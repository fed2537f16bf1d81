//! `file:` URIs: the ones toolshed sends servers, and the paths of the ones they send back.

use std::path::{Path, PathBuf};

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

/// What a URI's path may hold unescaped.
const PATH_SET: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'/')
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// The `file:` URI of an absolute path.
pub(crate) fn uri_of(path: &Path) -> String {
    format!(
        "file://{}",
        utf8_percent_encode(&path.to_string_lossy(), PATH_SET)
    )
}

/// A server's URI as toolshed spells it (servers escape paths differently).
pub(crate) fn normalize(uri: &str) -> String {
    path_of(uri).map_or_else(|| uri.to_string(), |p| uri_of(&p))
}

/// The absolute path of a `file:` URI.
pub(crate) fn path_of(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    Some(PathBuf::from(
        percent_decode_str(rest).decode_utf8().ok()?.into_owned(),
    ))
}
