//! Plugin secrets at rest: sealed with ChaCha20-Poly1305 under a key of their own.
//!
//! The key is 32 random bytes in `secret.key` beside the state database (mode 0600, made
//! on first use); a copy of the database alone reveals no secret, and commands never see
//! either file (the data dir is hidden by the command sandbox). Each value is sealed with
//! a fresh nonce and bound to its slot (plugin id and key), so a sealed value moved to
//! another slot does not open. A stored value reads `sealed:v1:<hex of nonce‖ciphertext>`.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};

/// How a sealed value starts.
pub(crate) const PREFIX: &str = "sealed:v1:";
const KEY_LEN: usize = 32;

/// Seals and opens secret values.
pub(crate) struct SecretBox {
    key: LessSafeKey,
    rng: SystemRandom,
    /// A key of its own for signing what round-trips through clients (MCP's
    /// `requestState`), derived from the sealing key: the same on every replica that
    /// shares `secret.key`, and never the sealing key itself.
    signing: [u8; KEY_LEN],
}

impl std::fmt::Debug for SecretBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretBox")
    }
}

impl SecretBox {
    /// The box of the key in `path`, made (0600) when missing. An error names the file.
    // The AEAD key and its nonces come from ring's generator, which the cipher is built on.
    #[allow(clippy::disallowed_methods)]
    pub(crate) fn open_or_create(path: &Path) -> Result<Self, String> {
        let err = |e: &dyn std::fmt::Display| format!("the secrets key {}: {e}", path.display());
        let rng = SystemRandom::new();
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mut key = [0u8; KEY_LEN];
                rng.fill(&mut key).map_err(|_| err(&"no random bytes"))?;
                if crate::private_file::create_once(path, &key).map_err(|e| err(&e))? {
                    key.to_vec()
                } else {
                    // Another process made it first: use theirs.
                    std::fs::read(path).map_err(|e| err(&e))?
                }
            }
            Err(e) => return Err(err(&e)),
        };
        if bytes.len() != KEY_LEN {
            return Err(err(&format!(
                "holds {} bytes, not {KEY_LEN}; restore it from a backup (without it the stored \
                 secrets cannot be read), or delete it and set the secrets again",
                bytes.len()
            )));
        }
        let mode = std::fs::metadata(path)
            .map_err(|e| err(&e))?
            .permissions()
            .mode();
        if mode & 0o077 != 0 {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| err(&e))?;
        }
        Self::from_bytes(&bytes, rng).map_err(|e| err(&e))
    }

    /// A box with a key that lives only as long as it (an in-memory store).
    #[allow(clippy::disallowed_methods)] // as open_or_create: the cipher's own generator
    pub(crate) fn ephemeral() -> Self {
        let rng = SystemRandom::new();
        let mut key = [0u8; KEY_LEN];
        // The system's random source does not fail on Linux; a zero key would only weaken
        // an in-memory store that never leaves the process.
        let _ = rng.fill(&mut key);
        Self::from_bytes(&key, rng).unwrap_or_else(|_| unreachable!("a 32-byte key is valid"))
    }

    fn from_bytes(bytes: &[u8], rng: SystemRandom) -> Result<Self, &'static str> {
        let unbound = UnboundKey::new(&CHACHA20_POLY1305, bytes).map_err(|_| "not a key")?;
        let derived = ring::hmac::sign(
            &ring::hmac::Key::new(ring::hmac::HMAC_SHA256, bytes),
            b"toolshed signing key for state that round-trips through clients, v1",
        );
        let mut signing = [0u8; KEY_LEN];
        signing.copy_from_slice(&derived.as_ref()[..KEY_LEN]);
        Ok(Self {
            key: LessSafeKey::new(unbound),
            rng,
            signing,
        })
    }

    /// The key that signs state handed to clients and checked when it comes back.
    pub(crate) fn signing_key(&self) -> &[u8] {
        &self.signing
    }

    /// `plaintext` sealed for `slot`.
    pub(crate) fn seal(&self, slot: &str, plaintext: &str) -> Result<String, String> {
        let mut nonce = [0u8; NONCE_LEN];
        self.rng
            .fill(&mut nonce)
            .map_err(|_| "no random bytes for a nonce".to_string())?;
        let mut sealed = plaintext.as_bytes().to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(slot.as_bytes()),
                &mut sealed,
            )
            .map_err(|_| "sealing failed".to_string())?;
        let mut out = String::with_capacity(PREFIX.len() + 2 * (NONCE_LEN + sealed.len()));
        out.push_str(PREFIX);
        for byte in nonce.iter().chain(&sealed) {
            out.push_str(&format!("{byte:02x}"));
        }
        Ok(out)
    }

    /// The plaintext of a value sealed for `slot`; `None` when it does not open (another
    /// key, another slot, or damaged).
    pub(crate) fn open(&self, slot: &str, stored: &str) -> Option<String> {
        let hex = stored.strip_prefix(PREFIX)?;
        if hex.len() % 2 != 0 {
            return None;
        }
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
            .collect::<Option<_>>()?;
        if bytes.len() < NONCE_LEN {
            return None;
        }
        let (nonce, sealed) = bytes.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut sealed = sealed.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(slot.as_bytes()), &mut sealed)
            .ok()?;
        String::from_utf8(plain.to_vec()).ok()
    }
}

/// The slot a value is bound to.
pub(crate) fn slot(plugin_id: &str, key: &str) -> String {
    format!("{plugin_id}\0{key}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_values_open_only_in_their_slot_and_unchanged() {
        let b = SecretBox::ephemeral();
        let sealed = b.seal(&slot("p", "token"), "\"s3cret\"").unwrap();
        assert!(
            sealed.starts_with(PREFIX) && !sealed.contains("s3cret"),
            "{sealed}"
        );
        assert_eq!(
            b.open(&slot("p", "token"), &sealed).as_deref(),
            Some("\"s3cret\"")
        );
        assert_eq!(
            b.open(&slot("p", "other"), &sealed),
            None,
            "bound to its slot"
        );
        assert_eq!(b.open(&slot("q", "token"), &sealed), None);
        let mut damaged = sealed.clone();
        damaged.replace_range(damaged.len() - 2.., "00");
        assert_eq!(b.open(&slot("p", "token"), &damaged), None);
        assert_ne!(
            sealed,
            b.seal(&slot("p", "token"), "\"s3cret\"").unwrap(),
            "fresh nonces"
        );
        assert_eq!(
            SecretBox::ephemeral().open(&slot("p", "token"), &sealed),
            None,
            "another key"
        );
    }

    #[test]
    fn the_key_file_is_made_private_once_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret.key");
        let sealed = SecretBox::open_or_create(&path)
            .unwrap()
            .seal("s", "v")
            .unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let again = SecretBox::open_or_create(&path).unwrap();
        assert_eq!(again.open("s", &sealed).as_deref(), Some("v"));
        std::fs::write(&path, b"short").unwrap();
        let e = SecretBox::open_or_create(&path).unwrap_err();
        assert!(
            e.contains("secret.key") && e.contains("holds 5 bytes"),
            "{e}"
        );
    }
}
