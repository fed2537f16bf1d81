//! The environment a child gets: the host's, cleaned of secrets, made agent-friendly.

use std::collections::BTreeMap;

/// Parts of a variable name (compared case-insensitively) that mark it secret.
pub const SECRET_MARKERS: [&str; 4] = ["TOKEN", "KEY", "SECRET", "PASSWORD"];

/// Variables every child gets, so that tools behave for a reader that is not a terminal
/// user: no colours, no pager, no prompt that would wait for an answer nobody gives.
/// `TERM` is set separately (`dumb`, or `xterm-256color` with a terminal).
pub const FIXED_ENV: [(&str, &str); 6] = [
    ("NO_COLOR", "1"),
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("DEBIAN_FRONTEND", "noninteractive"),
    ("CLICOLOR", "0"),
];

/// Whether a variable name looks like it holds a secret.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_MARKERS.iter().any(|m| upper.contains(m))
}

/// The `PATH` a child gets when toolshed itself has none.
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The environment of a child: `base` (the host's) without secret-looking names unless
/// listed in `allow` (exact names), then [`FIXED_ENV`] and `TERM`, then `explicit` (what the
/// caller set for this child, kept whatever its names).
pub fn clean_env<I>(
    base: I,
    allow: &[String],
    tty: bool,
    explicit: &BTreeMap<String, String>,
) -> BTreeMap<String, String>
where
    I: IntoIterator<Item = (String, String)>,
{
    let mut env: BTreeMap<String, String> = base
        .into_iter()
        .filter(|(name, _)| !is_secret_name(name) || allow.iter().any(|a| a == name))
        .collect();
    for (name, value) in FIXED_ENV {
        env.insert(name.into(), value.into());
    }
    env.insert(
        "TERM".into(),
        if tty { "xterm-256color" } else { "dumb" }.into(),
    );
    env.remove("COLORTERM");
    if env.get("PATH").is_none_or(|p| p.is_empty()) {
        // Started with no PATH (a service manager, a test harness): programs are still
        // found where every Unix keeps them.
        env.insert("PATH".into(), DEFAULT_PATH.into());
    }
    for (name, value) in explicit {
        env.insert(name.clone(), value.clone());
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_empty_path_gets_the_standard_one() {
        let env = clean_env(Vec::new(), &[], false, &BTreeMap::new());
        assert_eq!(env["PATH"], DEFAULT_PATH);
        let env = clean_env(
            vec![("PATH".into(), String::new())],
            &[],
            false,
            &BTreeMap::new(),
        );
        assert_eq!(env["PATH"], DEFAULT_PATH);
        let env = clean_env(
            vec![("PATH".into(), "/opt/bin".into())],
            &[],
            false,
            &BTreeMap::new(),
        );
        assert_eq!(env["PATH"], "/opt/bin");
    }

    fn base() -> Vec<(String, String)> {
        [
            ("PATH", "/usr/bin"),
            ("GITHUB_TOKEN", "t"),
            ("aws_secret_access_key", "s"),
            ("DB_PASSWORD", "p"),
            ("SSH_AUTH_SOCK", "/tmp/agent"),
            ("MY_API_KEY", "k"),
            ("TERM", "xterm"),
            ("COLORTERM", "truecolor"),
        ]
        .into_iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
    }

    #[test]
    fn drops_secret_names_unless_allowed() {
        let env = clean_env(base(), &["MY_API_KEY".into()], false, &BTreeMap::new());
        assert_eq!(env.get("PATH").map(String::as_str), Some("/usr/bin"));
        assert_eq!(
            env.get("SSH_AUTH_SOCK").map(String::as_str),
            Some("/tmp/agent")
        );
        assert_eq!(env.get("MY_API_KEY").map(String::as_str), Some("k"));
        for gone in [
            "GITHUB_TOKEN",
            "aws_secret_access_key",
            "DB_PASSWORD",
            "COLORTERM",
        ] {
            assert!(!env.contains_key(gone), "{gone} kept");
        }
        assert_eq!(env.get("TERM").map(String::as_str), Some("dumb"));
        assert_eq!(env.get("NO_COLOR").map(String::as_str), Some("1"));
    }

    #[test]
    fn a_terminal_gets_xterm_and_explicit_values_win() {
        let explicit = BTreeMap::from([
            ("PAGER".to_string(), "less".to_string()),
            ("SERVICE_TOKEN".to_string(), "mine".to_string()),
        ]);
        let env = clean_env(base(), &[], true, &explicit);
        assert_eq!(env.get("TERM").map(String::as_str), Some("xterm-256color"));
        assert_eq!(env.get("PAGER").map(String::as_str), Some("less"));
        assert_eq!(env.get("SERVICE_TOKEN").map(String::as_str), Some("mine"));
    }
}
