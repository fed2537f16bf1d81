//! Small helpers every floor of the host may use, with no home above them: digests, the
//! tag of this process, times a person reads, the host of a URL. This module imports
//! nothing of the crate (docs/architecture.md, "Floors inside the host").

use serde_json::Value;

/// Lower-case hexadecimal of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    s
}

/// Feeds `value`, serialized as `Value::to_string` spells it, into `hasher` while it is
/// written: no copy of a large value is made.
pub(crate) fn hash_json(hasher: &mut sha2::Sha256, value: &Value) {
    use sha2::Digest as _;
    struct Hashing<'a>(&'a mut sha2::Sha256);
    impl std::io::Write for Hashing<'_> {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.update(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    // Writing to a hasher cannot fail.
    let _ = serde_json::to_writer(Hashing(hasher), value);
}

/// `<pid>-<start of this call, ns, hex>`: a name for a file of this process that no other
/// process, here or in another PID namespace, picks at the same time.
pub(crate) fn process_tag() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{}-{nanos:x}", std::process::id())
}

/// `ms` (since the Unix epoch) as a local time a person reads: `2026-12-02 09:15:04`.
pub fn local_time(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms).map_or_else(
        |_| ms.to_string(),
        |t| {
            t.to_zoned_datetime(jiff::tz::TimeZone::system())
                .strftime("%Y-%m-%d %H:%M:%S")
                .to_string()
        },
    )
}

/// A point in time for `since`: a duration back from now (`90s`, `15m`, `2h`, `7d`), an
/// RFC 3339 time (`2026-12-01T09:00:00Z`) or milliseconds since the Unix epoch.
pub fn parse_since(text: &str, now_ms: i64) -> Result<i64, NotATime> {
    let text = text.trim();
    let unit_ms = match text.chars().last() {
        Some('s') => Some(1_000),
        Some('m') => Some(60_000),
        Some('h') => Some(3_600_000),
        Some('d') => Some(86_400_000),
        _ => None,
    };
    if let Some(unit_ms) = unit_ms
        && let Ok(n) = text[..text.len() - 1].parse::<i64>()
        && n >= 0
    {
        return Ok(now_ms.saturating_sub(n.saturating_mul(unit_ms)));
    }
    if let Ok(ms) = text.parse::<i64>()
        && ms >= 0
    {
        return Ok(ms);
    }
    text.parse::<jiff::Timestamp>()
        .map(|t| t.as_millisecond())
        .map_err(|_| NotATime {
            argument: "since".into(),
            text: text.to_string(),
        })
}

/// A `since` (or another time argument) that [`parse_since`] cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{argument} `{text}` is not a time: give a duration back from now (`30m`, `2h`, `7d`), an \
     RFC 3339 time (`2026-12-01T09:00:00Z`) or milliseconds since 1970"
)]
pub struct NotATime {
    /// The argument's name, as the message shows it (`since`).
    pub argument: String,
    /// What it was given.
    pub text: String,
}

impl NotATime {
    /// The same refusal for the argument `name` (`ttl`, `before`).
    pub fn for_argument(self, name: &str) -> Self {
        Self {
            argument: name.to_string(),
            ..self
        }
    }
}

/// The `host:port` of an `http` or `https` URL (the port its scheme implies when it names
/// none), or why `url` is not one.
pub fn http_host(url: &str) -> Result<String, NotAnHttpUrl> {
    let parsed = url::Url::parse(url).map_err(|source| NotAnHttpUrl::Unparsed {
        url: url.to_string(),
        source,
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(NotAnHttpUrl::Scheme(url.to_string()));
    }
    match (parsed.host_str(), parsed.port_or_known_default()) {
        (Some(host), Some(port)) => Ok(format!("{host}:{port}")),
        _ => Err(NotAnHttpUrl::NoHost(url.to_string())),
    }
}

/// Why a URL is not an `http` or `https` one with a host.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotAnHttpUrl {
    /// Not a URL at all.
    #[error("`{url}` is not a URL: {source}")]
    Unparsed {
        /// The text given.
        url: String,
        /// The URL parser's refusal.
        source: url::ParseError,
    },
    /// Another scheme.
    #[error("`{0}` is not an http or https URL")]
    Scheme(String),
    /// No host to connect to.
    #[error("`{0}` names no host")]
    NoHost(String),
}
