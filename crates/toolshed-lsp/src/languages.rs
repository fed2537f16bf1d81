//! The languages and their servers: the defaults, `[lsp.NAME]` overrides, and the
//! settings the plugin works with.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

/// A language and the server that knows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Language {
    /// Its name, as in `[lsp.NAME]`.
    pub name: String,
    /// The server's command line.
    pub command: Vec<String>,
    /// The file extensions it serves, without the dot.
    pub extensions: Vec<String>,
    /// Files that mark a project's root.
    pub markers: Vec<String>,
    /// How to install the server, for the `unconfigured` answer.
    pub install: String,
    /// `settings` (answered to `workspace/configuration`) and `initialization_options`.
    pub settings: Map<String, Value>,
}

impl Language {
    fn new(
        name: &str,
        command: &[&str],
        extensions: &[&str],
        markers: &[&str],
        install: &str,
    ) -> Self {
        let owned = |list: &[&str]| list.iter().map(|s| (*s).to_string()).collect();
        Self {
            name: name.into(),
            command: owned(command),
            extensions: owned(extensions),
            markers: owned(markers),
            install: install.into(),
            settings: Map::new(),
        }
    }

    /// The answer when its server is not installed.
    pub(crate) fn missing(&self, program: &str) -> String {
        format!(
            "the {} language server `{program}` is not installed (not found on PATH); install it — {} — or set `[lsp.{}] command`",
            self.name, self.install, self.name
        )
    }

    /// The protocol's language id of a file.
    pub(crate) fn language_id(&self, path: &Path) -> String {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        match (self.name.as_str(), ext) {
            ("typescript", "tsx") => "typescriptreact".into(),
            ("typescript", "js" | "mjs" | "cjs") => "javascript".into(),
            ("typescript", "jsx") => "javascriptreact".into(),
            ("c", "cpp" | "cc" | "cxx" | "hpp" | "hh") => "cpp".into(),
            (name, _) => name.into(),
        }
    }

    pub(crate) fn serves(&self, path: &Path) -> bool {
        path.extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| self.extensions.iter().any(|x| x.eq_ignore_ascii_case(e)))
    }
}

/// The languages known without configuration.
pub fn default_languages() -> Vec<Language> {
    vec![
        Language::new(
            "rust",
            &["rust-analyzer"],
            &["rs"],
            &["Cargo.toml"],
            "`rustup component add rust-analyzer`",
        ),
        Language::new(
            "python",
            &["pyright-langserver", "--stdio"],
            &["py", "pyi"],
            &[
                "pyproject.toml",
                "pyrightconfig.json",
                "setup.py",
                "setup.cfg",
                "requirements.txt",
            ],
            "`pip install pyright` (it needs node) or `npm install -g pyright`; or use pylsp: `[lsp.python] command = [\"pylsp\"]`",
        ),
        Language::new(
            "typescript",
            &["typescript-language-server", "--stdio"],
            &["ts", "tsx", "mts", "cts", "js", "jsx", "mjs", "cjs"],
            &["tsconfig.json", "jsconfig.json", "package.json"],
            "`npm install -g typescript-language-server typescript@5`",
        ),
        Language::new(
            "go",
            &["gopls"],
            &["go"],
            &["go.mod"],
            "the Go toolchain's gopls (Debian: `apt-get install gopls`)",
        ),
        Language::new(
            "c",
            &["clangd"],
            &["c", "h", "cc", "cpp", "cxx", "hpp", "hh"],
            &["compile_commands.json", "CMakeLists.txt", "Makefile"],
            "clangd (Debian: `apt-get install clangd`)",
        ),
    ]
}

/// What the plugin works with.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The workspace's absolute path.
    pub workspace: PathBuf,
    /// The languages, in the order an extension is looked up.
    pub languages: Vec<Language>,
    /// A server unused this long is stopped.
    pub idle_timeout: Duration,
    /// The longest a request to a server may take.
    pub request_timeout: Duration,
    /// The most servers running at once; starting one more stops the least recently used.
    pub max_servers: usize,
    /// The workspace is on another machine (`ssh://`, `docker://`): `workspace` is its path
    /// there, the servers are found and run there (through the workspace's processes), and
    /// nothing of this machine is looked at or watched.
    pub remote: bool,
}

impl Settings {
    /// The defaults for `workspace`.
    pub fn new(workspace: PathBuf) -> Self {
        Self {
            workspace,
            languages: default_languages(),
            idle_timeout: Duration::from_secs(600),
            request_timeout: Duration::from_secs(60),
            max_servers: 8,
            remote: false,
        }
    }
}

/// Language servers by name, as `[lsp.NAME]` entries override and extend the defaults.
pub fn languages_with(overrides: &BTreeMap<String, LanguageOverride>) -> Vec<Language> {
    let mut languages = default_languages();
    for (name, o) in overrides {
        let at = languages.iter().position(|l| &l.name == name);
        let mut language = match at {
            Some(i) => languages[i].clone(),
            None => Language::new(name, &[], &[], &[], "the server its `command` names"),
        };
        if let Some(c) = &o.command {
            language.command.clone_from(c);
        }
        if let Some(e) = &o.extensions {
            language.extensions = e
                .iter()
                .map(|x| x.trim_start_matches('.').to_string())
                .collect();
        }
        if let Some(m) = &o.markers {
            language.markers.clone_from(m);
        }
        if let Some(s) = &o.settings {
            language.settings.insert("settings".into(), s.clone());
        }
        if let Some(s) = &o.initialization_options {
            language
                .settings
                .insert("initialization_options".into(), s.clone());
        }
        match at {
            Some(i) => languages[i] = language,
            None => languages.push(language),
        }
    }
    languages.retain(|l| !l.command.is_empty());
    languages
}

/// One `[lsp.NAME]` entry: what it changes of a built-in language, or a new one.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LanguageOverride {
    /// The server's command line (`[]` turns the language off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// The file extensions it serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Vec<String>>,
    /// Files that mark a project's root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub markers: Option<Vec<String>>,
    /// The server's settings, answered to its `workspace/configuration` requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<Value>,
    /// Sent with `initialize`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initialization_options: Option<Value>,
}
