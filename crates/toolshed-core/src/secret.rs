//! The one copy of the small primitives that guard secrets: comparing a presented secret
//! with the expected one in constant time, and making a random token. Every token, session,
//! login code, CSRF value and id that must not be guessed comes from [`random_hex`]; every
//! comparison with a secret goes through [`constant_time_eq`] (clippy's `disallowed-methods`
//! keeps other random sources out of the project, see clippy.toml).

/// Whether `a` and `b` are equal, taking the same time wherever the first difference is,
/// so that response timing does not leak a secret a byte at a time. (Lengths are public.)
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let difference = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(difference) == 0
}

/// `bytes` bytes from the operating system's random source, as lowercase hex; an error
/// when the source fails (then nothing is made: never a guessable token).
pub fn random_hex(bytes: usize) -> Result<String, RandomSourceFailed> {
    let mut buf = vec![0u8; bytes];
    #[allow(clippy::disallowed_methods)] // the one place that asks the random source
    getrandom::fill(&mut buf).map_err(|source| RandomSourceFailed { source })?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// The operating system's random source failed, so no secret was made.
#[derive(Debug, thiserror::Error)]
#[error("the system random source failed: {source}")]
pub struct RandomSourceFailed {
    /// The source's own error.
    pub source: getrandom::Error,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_only_when_every_byte_is() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret!"));
        assert!(constant_time_eq(b"", b""));
    }

    #[test]
    fn random_hex_is_fresh_hex_of_the_asked_length() {
        let a = random_hex(16).unwrap();
        assert_eq!(a.len(), 32);
        assert!(
            a.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        assert_ne!(a, random_hex(16).unwrap());
    }
}
