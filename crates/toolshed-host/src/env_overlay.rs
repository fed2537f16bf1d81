//! The workspace's `.env` files, layered under the process environment: what commands
//! see and what plugins' env contracts are checked against.
//!
//! Layers, later winning: `<workspace>/.env`, `.env.agent`, the current agent program
//! version's `.env` (`agent_program_versions/<CURRENT>/.env`, Fenix's layout),
//! `.env.toolshed`, then the environment toolshed was started with. A call's own `env` argument (`exec_command`)
//! wins over all of them. Commands always see the files (an agent sets any variable for
//! its commands anyway); toolshed itself — plugins' env contracts, the web tools' keys
//! and provider URLs — reads them only in a workspace the user's own config trusts
//! (`trusted_workspaces`), since an agent can write these files and a provider URL decides
//! where toolshed sends requests. Values are never listed: [`EnvOverlay::sources`] names each
//! variable and where it came from, nothing more. Variables with secret-looking names
//! (`*_TOKEN`, `*_KEY`…) still reach commands only through `[exec] env_allow`, as from
//! the process environment.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// The files read, in order (later wins), besides the current agent program version's
/// `.env` (Fenix's layout), which comes after `.env.agent` ([`env_files`]).
pub const ENV_FILES: [&str; 3] = [".env", ".env.agent", ".env.toolshed"];

/// Where Fenix's layout keeps the agent program's versions; `CURRENT` in it names the one
/// in use, whose `.env` is a layer.
pub const PROGRAM_VERSIONS: &str = "agent_program_versions";

/// The `.env` files of `workspace`, in the order they are layered: `.env`, `.env.agent`,
/// the current program version's `.env` (`agent_program_versions/<CURRENT>/.env`), then
/// `.env.toolshed`.
pub fn env_files(workspace: &Path) -> Vec<PathBuf> {
    let mut files = vec![workspace.join(ENV_FILES[0]), workspace.join(ENV_FILES[1])];
    let versions = workspace.join(PROGRAM_VERSIONS);
    if let Ok(current) = std::fs::read_to_string(versions.join("CURRENT")) {
        let current = current.trim();
        let plain = !current.is_empty()
            && current.len() <= 128
            && current != "."
            && current != ".."
            && current
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
        if plain {
            files.push(versions.join(current).join(".env"));
        }
    }
    files.push(workspace.join(ENV_FILES[2]));
    files
}

/// The largest `.env` file read.
pub const MAX_ENV_FILE_BYTES: u64 = 256 * 1024;

/// The most variables one file may set.
pub const MAX_ENV_VARS: usize = 1000;

/// Where a variable's value comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnvSource {
    /// The variable.
    pub name: String,
    /// `process` or the file (`/work/.env`).
    pub source: String,
    /// Files that also set it but lost to a later layer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub overridden: Vec<String>,
}

/// The variables of the workspace's `.env` files.
#[derive(Debug, Clone, Default)]
pub struct EnvOverlay {
    /// Name → (value, file), the later file's value kept.
    vars: BTreeMap<String, (String, PathBuf)>,
    /// Name → the files whose value a later file replaced.
    replaced: BTreeMap<String, Vec<PathBuf>>,
    /// Lines that could not be read, as `file:line: problem`.
    pub problems: Vec<String>,
    /// Whether toolshed itself reads the files (the workspace is trusted); commands see
    /// them either way.
    pub trusted: bool,
}

impl EnvOverlay {
    /// Reads the `.env` files of `workspace` (missing ones are skipped); `trusted`: the
    /// user's config trusts the workspace, so toolshed itself reads them too.
    pub fn load(workspace: &Path, trusted: bool) -> Self {
        let mut overlay = Self {
            trusted,
            ..Self::default()
        };
        for path in env_files(workspace) {
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            if !meta.is_file() {
                continue;
            }
            if meta.len() > MAX_ENV_FILE_BYTES {
                overlay.problems.push(format!(
                    "{}: is {} bytes; .env files are read up to {MAX_ENV_FILE_BYTES} bytes, so it is ignored",
                    path.display(),
                    meta.len()
                ));
                continue;
            }
            let text = match std::fs::read_to_string(&path) {
                Ok(text) => text,
                Err(e) => {
                    overlay
                        .problems
                        .push(format!("{}: cannot read: {e}", path.display()));
                    continue;
                }
            };
            let (vars, problems) = parse(&text);
            overlay.problems.extend(
                problems
                    .into_iter()
                    .map(|(line, p)| format!("{}:{line}: {p}", path.display())),
            );
            for (name, value) in vars {
                if let Some((_, earlier)) = overlay.vars.insert(name.clone(), (value, path.clone()))
                {
                    overlay.replaced.entry(name).or_default().push(earlier);
                }
            }
        }
        overlay
    }

    /// The files' variables (name → value) as toolshed itself reads them: none unless
    /// the workspace is trusted.
    pub fn vars(&self) -> BTreeMap<String, String> {
        if !self.trusted {
            return BTreeMap::new();
        }
        self.vars
            .iter()
            .map(|(k, (v, _))| (k.clone(), v.clone()))
            .collect()
    }

    /// Whether no file set anything.
    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }

    /// The value of `name` as toolshed itself reads it: the process environment's, else
    /// (in a trusted workspace) the files'.
    pub fn get(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().or_else(|| {
            self.trusted
                .then(|| self.vars.get(name).map(|(v, _)| v.clone()))
                .flatten()
        })
    }

    /// The process environment with the files' variables it does not set: the base of
    /// every command's environment.
    pub fn base_env(&self) -> Vec<(String, String)> {
        let mut env: BTreeMap<String, String> = self
            .vars
            .iter()
            .map(|(k, (v, _))| (k.clone(), v.clone()))
            .collect();
        env.extend(
            std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
        );
        env.into_iter().collect()
    }

    /// Each variable the files set, with the layer its value comes from (the process
    /// environment when it sets it too) and the files it overrode. No values.
    pub fn sources(&self) -> Vec<EnvSource> {
        self.vars
            .iter()
            .map(|(name, (_, file))| {
                let mut overridden: Vec<String> = self
                    .replaced
                    .get(name)
                    .map(|files| files.iter().map(|f| f.display().to_string()).collect())
                    .unwrap_or_default();
                let source = if std::env::var_os(name).is_some() {
                    overridden.push(file.display().to_string());
                    "process".to_string()
                } else {
                    file.display().to_string()
                };
                EnvSource {
                    name: name.clone(),
                    source,
                    overridden,
                }
            })
            .collect()
    }
}

/// Whether `name` is a variable name: `A-Z`, `a-z`, `0-9`, `_`, not starting with a digit.
pub fn is_variable_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A line that could not be read: its number (from 1) and the problem.
pub type LineProblem = (usize, String);

/// Parses dotenv text: `NAME=value`, `export NAME=value`, `#` comments, values bare
/// (trailing ` # comment` dropped), in single quotes (literal) or double quotes (`\n`,
/// `\t`, `\"`, `\\` escapes, may span lines). Returns the variables and, per bad line,
/// its number and the problem.
pub fn parse(text: &str) -> (Vec<(String, String)>, Vec<LineProblem>) {
    let mut vars = Vec::new();
    let mut problems = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((i, raw)) = lines.next() {
        let number = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").map_or(line, str::trim_start);
        let Some((name, rest)) = line.split_once('=') else {
            problems.push((number, "not NAME=value".into()));
            continue;
        };
        let name = name.trim();
        if !is_variable_name(name) {
            problems.push((
                number,
                format!(
                    "`{}` is not a variable name (letters, digits, `_`)",
                    name.chars().take(40).collect::<String>()
                ),
            ));
            continue;
        }
        let rest = rest.trim_start();
        let value = if let Some(body) = rest.strip_prefix('\'') {
            match body.find('\'') {
                Some(end) => body[..end].to_string(),
                None => {
                    problems.push((number, "a single quote is not closed".into()));
                    continue;
                }
            }
        } else if let Some(body) = rest.strip_prefix('"') {
            let mut value = String::new();
            let mut text = body.to_string();
            let mut closed = false;
            loop {
                let mut chars = text.chars();
                while let Some(c) = chars.next() {
                    match c {
                        '"' => {
                            closed = true;
                            break;
                        }
                        '\\' => match chars.next() {
                            Some('n') => value.push('\n'),
                            Some('t') => value.push('\t'),
                            Some('r') => value.push('\r'),
                            Some(other) => value.push(other),
                            None => value.push('\\'),
                        },
                        other => value.push(other),
                    }
                }
                if closed {
                    break;
                }
                match lines.next() {
                    Some((_, next)) => {
                        value.push('\n');
                        text = next.to_string();
                    }
                    None => break,
                }
            }
            if !closed {
                problems.push((number, "a double quote is not closed".into()));
                continue;
            }
            value
        } else {
            let bare = match rest.find(" #") {
                Some(at) => &rest[..at],
                None => rest,
            };
            bare.trim_end().to_string()
        };
        if vars.len() >= MAX_ENV_VARS {
            problems.push((
                number,
                format!("more than {MAX_ENV_VARS} variables; the rest are ignored"),
            ));
            break;
        }
        vars.push((name.to_string(), value));
    }
    (vars, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_dotenv_forms_people_write() {
        let (vars, problems) = parse(
            "# comment\nA=1\nexport B = two words # trailing\nC='single # kept'\nD=\"line\\nnext \\\"q\\\"\"\nE=\"multi\nline\"\n9X=bad\nnot a line\nF=\n",
        );
        let get = |n: &str| vars.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        assert_eq!(get("A"), Some("1"));
        assert_eq!(get("B"), Some("two words"));
        assert_eq!(get("C"), Some("single # kept"));
        assert_eq!(get("D"), Some("line\nnext \"q\""));
        assert_eq!(get("E"), Some("multi\nline"));
        assert_eq!(get("F"), Some(""));
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert_eq!(problems[0].0, 8);
    }

    #[test]
    fn the_later_file_wins_and_the_process_environment_over_both() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".env"),
            "TS_OVERLAY_A=from-env\nTS_OVERLAY_B=b\nPATH=/nowhere\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join(".env.toolshed"),
            "TS_OVERLAY_A=from-toolshed\n",
        )
        .unwrap();
        let overlay = EnvOverlay::load(dir.path(), true);
        assert_eq!(
            overlay.get("TS_OVERLAY_A").as_deref(),
            Some("from-toolshed")
        );
        assert_eq!(overlay.get("TS_OVERLAY_B").as_deref(), Some("b"));
        assert_ne!(
            overlay.get("PATH").as_deref(),
            Some("/nowhere"),
            "the process environment wins"
        );
        let base: BTreeMap<String, String> = overlay.base_env().into_iter().collect();
        assert_eq!(base["TS_OVERLAY_A"], "from-toolshed");
        assert_ne!(base["PATH"], "/nowhere");
        let sources = overlay.sources();
        let a = sources.iter().find(|s| s.name == "TS_OVERLAY_A").unwrap();
        assert!(
            a.source.ends_with(".env.toolshed") && a.overridden[0].ends_with(".env"),
            "{a:?}"
        );
        let path = sources.iter().find(|s| s.name == "PATH").unwrap();
        assert_eq!(path.source, "process");

        // Untrusted: commands still see the files, toolshed itself does not.
        let untrusted = EnvOverlay::load(dir.path(), false);
        assert_eq!(untrusted.get("TS_OVERLAY_B"), None);
        assert!(untrusted.vars().is_empty());
        let base: BTreeMap<String, String> = untrusted.base_env().into_iter().collect();
        assert_eq!(base["TS_OVERLAY_B"], "b");
    }
}
