//! The plugin's settings (`[browser]` in the config) and their defaults.

/// How sessions keep cookies and storage apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Profile {
    /// Each session in a browser context of its own.
    #[default]
    Session,
    /// An owner's sessions share one context (a login carries over between them).
    Owner,
}

/// The plugin's settings (`[browser]` in the config).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The Chromium binary (`None`: found on the machine).
    pub executable: Option<String>,
    /// How sessions keep cookies and storage apart.
    pub profile: Profile,
    /// The most sessions one owner may have open.
    pub max_sessions_per_owner: usize,
    /// The most sessions open at once, all owners together.
    pub max_sessions: usize,
    /// No new session while the browser's processes use more memory than this (MiB).
    pub max_memory_mb: u64,
    /// A session unused this long is closed; the browser stops when none is left.
    pub idle_timeout_secs: u64,
    /// The viewport's width in CSS pixels.
    pub width: u32,
    /// The viewport's height in CSS pixels.
    pub height: u32,
    /// Whether `browser_evaluate` (any JavaScript in the page) may be called.
    pub evaluate: bool,
    /// The largest screenshot returned (PNG bytes); a larger one is taken again smaller.
    pub max_screenshot_bytes: u64,
    /// How long a navigation may take before its result is returned anyway.
    pub navigation_timeout_ms: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            executable: None,
            profile: Profile::Session,
            max_sessions_per_owner: 4,
            max_sessions: 20,
            max_memory_mb: 2048,
            idle_timeout_secs: 600,
            width: 1280,
            height: 800,
            evaluate: false,
            max_screenshot_bytes: 4 * 1024 * 1024,
            navigation_timeout_ms: 30_000,
        }
    }
}
