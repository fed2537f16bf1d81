//! The plugin's settings (`[browser]` in the config), their defaults and their checks:
//! declared once, here, and read by the host's config loader as a registered
//! [`Section`].

use serde::{Deserialize, Serialize};
use toolshed_kit::section::{Section, SectionError};

/// How sessions keep cookies and storage apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", try_from = "String")]
pub enum Profile {
    /// Each session in a browser context of its own.
    #[default]
    Session,
    /// An owner's sessions share one context (a login carries over between them).
    Owner,
}

impl TryFrom<String> for Profile {
    type Error = String;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        match value.as_str() {
            "session" => Ok(Self::Session),
            "owner" => Ok(Self::Owner),
            other => Err(format!(
                "profile = `{other}` is not one of `session`, `owner`"
            )),
        }
    }
}

/// The plugin's settings (`[browser]` in the config).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// The Chromium binary (`None`: found on the machine).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub executable: Option<String>,
    /// How sessions keep cookies and storage apart: `session` (each session its own
    /// cookies and storage) or `owner` (an owner's sessions share them).
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

impl Section for Settings {
    const NAME: &'static str = "browser";
    const WIDENING: &'static [(&'static str, &'static str)] = &[
        (
            "browser.evaluate",
            "lets agents run any JavaScript in browser pages",
        ),
        (
            "browser.executable",
            "chooses the program run as the browser",
        ),
    ];
    const STARTER: &'static str = include_str!("starter.toml");

    fn check(&self) -> Result<(), SectionError> {
        let invalid = |message: String| SectionError::new("browser", message);
        for (name, value) in [
            ("max_sessions_per_owner", self.max_sessions_per_owner as u64),
            ("max_sessions", self.max_sessions as u64),
            ("max_memory_mb", self.max_memory_mb),
            ("idle_timeout_secs", self.idle_timeout_secs),
            ("max_screenshot_bytes", self.max_screenshot_bytes),
            ("navigation_timeout_ms", self.navigation_timeout_ms),
        ] {
            if value == 0 {
                return Err(invalid(format!("[browser] {name} must be at least 1")));
            }
        }
        if !(100..=8192).contains(&self.width) || !(100..=8192).contains(&self.height) {
            return Err(invalid(format!(
                "[browser] width and height must be 100 to 8192 pixels (they are {} and {})",
                self.width, self.height
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `[browser]` refuses at load, naming the setting.
    #[test]
    fn settings_that_cannot_work_are_named() {
        let read = |toml: &str| -> Result<Settings, String> {
            let settings: Settings = toml::from_str(toml).map_err(|e| e.to_string())?;
            settings.check().map_err(|e| e.message)?;
            Ok(settings)
        };
        for (toml, expected) in [
            ("profile = \"tab\"\n", "`session`, `owner`"),
            ("max_sessions = 0\n", "max_sessions must be at least 1"),
            ("idle_timeout_secs = 0\n", "idle_timeout_secs"),
            ("width = 20\n", "100 to 8192"),
        ] {
            let err = read(toml).unwrap_err();
            assert!(err.contains(expected), "{toml}: {err}");
        }
        let settings =
            read("profile = \"owner\"\nmax_sessions_per_owner = 2\nevaluate = true\n").unwrap();
        assert_eq!(settings.profile, Profile::Owner);
        assert_eq!(settings.max_sessions_per_owner, 2);
        assert!(settings.evaluate);
        assert_eq!(read("").unwrap(), Settings::default());
    }
}
