//! The bearer token that guards the HTTP door.
//!
//! The token lives in `<data-dir>/token`, readable by its owner only (mode 0600). The
//! first start generates it (32 random bytes from the OS, hex); later starts read it, so a
//! client configured once keeps working. Anyone who can read the file can call every tool
//! the server exposes, so it is never logged and never put into an error.

use std::fmt;
use std::path::{Path, PathBuf};

/// The file name of the token inside the data dir.
pub const TOKEN_FILE: &str = "token";

/// How many random bytes a generated token carries (it is written as twice as many hex
/// digits).
const TOKEN_BYTES: usize = 32;

/// A token read from a file shorter than this is refused: it could be guessed.
const MIN_TOKEN_CHARS: usize = 32;

/// Why the token could not be loaded or created.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// Reading or writing the token file failed.
    #[error("cannot {action} the token file {}: {source}", path.display())]
    Io {
        /// What was being done: `read`, `write`, `inspect`, ...
        action: &'static str,
        /// The token file.
        path: PathBuf,
        /// The error, as the system gave it.
        source: std::io::Error,
    },
    /// The operating system could not supply random bytes.
    #[error("cannot generate a token: {0}")]
    Random(#[source] toolshed_core::secret::RandomSourceFailed),
    /// The file exists but does not hold a usable token.
    #[error(
        "the token file {} does not hold a usable token (at least {MIN_TOKEN_CHARS} visible ASCII characters, no spaces); delete it and a new one is generated on the next start",
        path.display()
    )]
    Malformed {
        /// The token file.
        path: PathBuf,
    },
    /// Other users may read the file, so the token may already be known to them.
    #[error(
        "the token file {} is readable by other users (mode {mode:o}); delete it to generate a new token, or run `chmod 600 {}` if nobody else could have read it",
        path.display(),
        path.display()
    )]
    Exposed {
        /// The token file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
}

/// The secret an HTTP client must present as `Authorization: Bearer <token>`. Its
/// `Debug` output is redacted.
#[derive(Clone)]
pub struct BearerToken(String);

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}

impl BearerToken {
    /// A token from a known value (tests and embedders); `None` when it is too short or
    /// holds spaces or control characters.
    pub fn new(value: impl Into<String>) -> Option<Self> {
        let value = value.into();
        let usable = value.len() >= MIN_TOKEN_CHARS && value.bytes().all(|b| b.is_ascii_graphic());
        usable.then_some(Self(value))
    }

    /// Reads `<data_dir>/token`, generating it (mode 0600) when it does not exist yet.
    /// Blocking: call it from `spawn_blocking` on an async runtime.
    pub fn load_or_create(data_dir: &Path) -> Result<Self, TokenError> {
        let path = data_dir.join(TOKEN_FILE);
        match Self::read(&path) {
            Err(TokenError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            }
            other => return other,
        }
        std::fs::create_dir_all(data_dir).map_err(|source| TokenError::Io {
            action: "create the directory of",
            path: path.clone(),
            source,
        })?;
        let token = toolshed_core::secret::random_hex(TOKEN_BYTES).map_err(TokenError::Random)?;
        // A second server starting at the same moment either wins or reads a whole file.
        match toolshed_host::private_file::create_once(&path, format!("{token}\n").as_bytes()) {
            Ok(true) => Ok(Self(token)),
            Ok(false) => Self::read(&path),
            Err(source) => Err(TokenError::Io {
                action: "create",
                path,
                source,
            }),
        }
    }

    fn read(path: &Path) -> Result<Self, TokenError> {
        let text = std::fs::read_to_string(path).map_err(|source| TokenError::Io {
            action: "read",
            path: path.to_path_buf(),
            source,
        })?;
        check_private(path)?;
        Self::new(text.trim()).ok_or_else(|| TokenError::Malformed {
            path: path.to_path_buf(),
        })
    }

    /// The token itself, for `toolshed token` to print.
    pub fn reveal(&self) -> &str {
        &self.0
    }

    /// Whether `presented` is this token. Takes the same time wherever the first
    /// difference is, so response timing does not leak the token a byte at a time.
    pub fn matches(&self, presented: &[u8]) -> bool {
        toolshed_core::secret::constant_time_eq(self.0.as_bytes(), presented)
    }
}

#[cfg(unix)]
fn check_private(path: &Path) -> Result<(), TokenError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)
        .map_err(|source| TokenError::Io {
            action: "inspect",
            path: path.to_path_buf(),
            source,
        })?
        .permissions()
        .mode()
        & 0o777;
    if mode & 0o077 != 0 {
        return Err(TokenError::Exposed {
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_path: &Path) -> Result<(), TokenError> {
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn first_start_generates_a_private_hex_token_and_later_starts_read_it() {
        let dir = tempfile::tempdir().unwrap();
        let first = BearerToken::load_or_create(dir.path()).unwrap();
        assert_eq!(first.reveal().len(), 64);
        assert!(first.reveal().bytes().all(|b| b.is_ascii_hexdigit()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(TOKEN_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let again = BearerToken::load_or_create(dir.path()).unwrap();
        assert_eq!(first.reveal(), again.reveal());
        let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "only the token file is left behind");
    }

    #[cfg(unix)]
    #[test]
    fn a_token_file_others_can_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        BearerToken::load_or_create(dir.path()).unwrap();
        let path = dir.path().join(TOKEN_FILE);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let error = BearerToken::load_or_create(dir.path()).unwrap_err();
        assert!(matches!(error, TokenError::Exposed { mode: 0o644, .. }));
    }

    #[test]
    fn matching_needs_every_byte() {
        let token = BearerToken::new("a".repeat(64)).unwrap();
        assert!(token.matches("a".repeat(64).as_bytes()));
        assert!(!token.matches(format!("{}b", "a".repeat(63)).as_bytes()));
        assert!(!token.matches("a".repeat(63).as_bytes()));
        assert!(!token.matches(b""));
        assert!(format!("{token:?}").contains("redacted"));
    }
}
