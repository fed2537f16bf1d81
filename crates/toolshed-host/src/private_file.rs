//! The one way toolshed creates a file that holds a secret (the admin token, the secrets
//! key): whole, private from its first byte, and exactly once when several processes start
//! at the same moment.

use std::io::Write;
use std::path::Path;

/// Creates `path` holding `bytes`, mode 0600, unless it exists: the content is written to
/// a private temporary file beside it (a name no other process can guess), flushed, then
/// hard-linked into place, so a process starting at the same moment either wins the link
/// or finds a complete file. `Ok(true)`: this call created it; `Ok(false)`: it was there
/// already (read it). The caller checks an existing file's permissions as it must.
pub fn create_once(path: &Path, bytes: &[u8]) -> std::io::Result<bool> {
    let nonce = toolshed_core::secret::random_hex(8).map_err(std::io::Error::other)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = path.with_file_name(format!(".{name}.{}.{nonce}.tmp", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options
        .open(&temp)
        .and_then(|mut file| file.write_all(bytes).and_then(|()| file.sync_all()));
    let linked = written.and_then(|()| std::fs::hard_link(&temp, path));
    let _ = std::fs::remove_file(&temp);
    match linked {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_once_private_and_whole() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret");
        assert!(create_once(&path, b"first").unwrap());
        assert!(!create_once(&path, b"second").unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // No temporary file is left beside it.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
