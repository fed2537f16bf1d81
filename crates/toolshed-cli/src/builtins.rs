//! Every built-in plugin, registered in this one place: the core family (`toolshed-tools`),
//! code mode (`toolshed-js`), memory (in the host), and the families a build may leave out,
//! each a cargo feature of this binary (`browser`, `lsp`, `mail`, `download`; all on by
//! default). `cargo build --no-default-features --features core` builds the smallest host.

use std::path::Path;
use std::sync::Arc;

use toolshed_host::HostBuilder;
use toolshed_host::config::{Config, ConfigSources};

/// `sources` with the config section of every family of this build that owns one
/// (`[browser]`, `[lsp]`): what the loader reads, checks, narrows and shows for them.
pub(crate) fn sections(sources: ConfigSources) -> ConfigSources {
    #[cfg(feature = "browser")]
    let sources = sources.with_section::<toolshed_browser::Settings>();
    #[cfg(feature = "lsp")]
    let sources = sources.with_section::<toolshed_lsp::LspConfig>();
    sources
}

/// The configuration sources `toolshed` reads for `workspace`: the standard layers, with
/// the sections of this build's families registered.
pub(crate) fn config_sources(
    workspace: &Path,
    explicit_file: Option<std::path::PathBuf>,
) -> ConfigSources {
    sections(ConfigSources::standard(workspace, explicit_file))
}

/// Where the skills plugin finds the plugins once the host is open (plugins' own skills).
pub(crate) type PluginsCell = toolshed_host::plugins_manage::PluginsCell;

/// `builder` with every built-in plugin of this build, set up from `config`; and the cell to
/// fill with the host's plugins once it is open.
pub(crate) fn register(
    builder: HostBuilder,
    config: &Config,
    workspace: &Path,
    data_dir: &Path,
    remote_root: Option<&Path>,
    further_roots: &[std::path::PathBuf],
) -> (HostBuilder, PluginsCell) {
    // Only the language servers need the workspace's path on its own machine.
    #[cfg(not(feature = "lsp"))]
    let _ = remote_root;
    let web = toolshed_tools::web::Settings {
        keyless_fallback: config.web.keyless_fallback(),
    };
    let skills = skill_roots(workspace, data_dir);
    // As the sandbox names it: the folders granted to a skill's script are inside it.
    #[allow(clippy::disallowed_methods)]
    let skills_workspace =
        std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    // The workspace's further roots by name, as its file tools name them (`@lib/…`): a
    // skill's script may be granted folders of them too. A bad root stops the host later,
    // with the builder's message.
    let skills_roots: Vec<(String, std::path::PathBuf)> = if further_roots.is_empty() {
        Vec::new()
    } else {
        toolshed_host::workspace_roots::named(&skills_workspace, further_roots)
            .map(|mut all| all.split_off(1))
            .unwrap_or_default()
    };
    let plugins: PluginsCell = Arc::default();
    let plugin_skills = plugin_skill_roots(plugins.clone());
    // The order is the plugin list's: the core family, downloads, mail, asking the user,
    // the browser, code mode, skills, the language servers, memory.
    let mut builder =
        builder.plugins(move |services| toolshed_tools::working_plugins(services, web));
    #[cfg(feature = "download")]
    {
        builder = builder.plugins(|services| vec![toolshed_download::plugin(services)]);
    }
    #[cfg(feature = "mail")]
    {
        builder = builder.plugins(|services| vec![toolshed_mail::plugin(services)]);
    }
    builder = builder.plugins(|_| vec![toolshed_tools::ask::plugin()]);
    {
        let plugins = plugins.clone();
        builder = builder.plugins(move |_| vec![toolshed_host::plugins_manage::plugin(plugins)]);
    }
    #[cfg(feature = "browser")]
    {
        let browser: toolshed_browser::Settings = config.section();
        builder =
            builder.plugins(move |services| vec![toolshed_browser::plugin(services, browser)]);
    }
    builder = builder
        .plugins(|services| vec![toolshed_js::code_plugin(services)])
        .plugins(move |services| {
            let runner = toolshed_tools::skills::ScriptRunner {
                process: services.ops.process.clone(),
                workspace: skills_workspace.clone(),
                roots: skills_roots.clone(),
            };
            vec![toolshed_tools::skills::plugin_with(
                skills.clone(),
                Some(plugin_skills.clone()),
                Some(runner),
            )]
        });
    #[cfg(feature = "lsp")]
    {
        let mut lsp =
            toolshed_lsp::Settings::from_config(workspace.to_path_buf(), &config.section());
        if let Some(root) = remote_root {
            lsp.workspace = root.to_path_buf();
            lsp.remote = true;
        }
        builder =
            builder.plugins(move |services| vec![toolshed_lsp::plugin(services, lsp.clone())]);
    }
    (builder.memory().agents(), plugins)
}

/// Where skills are found, in the order a name is looked up: the workspace's own, the
/// `.claude/skills` other agents keep there (read as they are), the user's.
fn skill_roots(
    workspace: &std::path::Path,
    data_dir: &std::path::Path,
) -> Vec<toolshed_tools::skills::SkillRoot> {
    use toolshed_tools::skills::SkillRoot;
    vec![
        SkillRoot {
            dir: workspace.join(".toolshed").join("skills"),
            source: "workspace".into(),
            in_workspace: Some(".toolshed/skills".into()),
        },
        SkillRoot {
            dir: workspace.join(".claude").join("skills"),
            source: "claude".into(),
            in_workspace: Some(".claude/skills".into()),
        },
        SkillRoot {
            dir: data_dir.join("skills"),
            source: "user".into(),
            in_workspace: None,
        },
    ]
    .into_iter()
    .chain(shipped_skills(data_dir))
    .collect()
}

/// The skills shipped with toolshed (`crates/toolshed-cli/skills/`), compiled in.
const SHIPPED_SKILLS: [(&str, &str); 3] = [
    (
        "toolshed-plugins",
        include_str!("../skills/toolshed-plugins/SKILL.md"),
    ),
    (
        "toolshed-sandbox",
        include_str!("../skills/toolshed-sandbox/SKILL.md"),
    ),
    (
        "toolshed-code-mode",
        include_str!("../skills/toolshed-code-mode/SKILL.md"),
    ),
];

/// The shipped skills as a root, last in the lookup (a skill of the same name anywhere
/// else is found first): written once per version under `<data dir>/shipped-skills/`, a
/// folder per skill. `None`, with a warning, when they cannot be written there.
fn shipped_skills(data_dir: &std::path::Path) -> Option<toolshed_tools::skills::SkillRoot> {
    let dir = data_dir
        .join("shipped-skills")
        .join(env!("CARGO_PKG_VERSION"));
    let write = || -> std::io::Result<()> {
        for (name, text) in SHIPPED_SKILLS {
            let file = dir.join(name).join("SKILL.md");
            if std::fs::read_to_string(&file).is_ok_and(|old| old == text) {
                continue;
            }
            std::fs::create_dir_all(dir.join(name))?;
            // Whole or not at all: a reader never sees half a file.
            let part = dir.join(name).join(".SKILL.md.part");
            std::fs::write(&part, text)?;
            std::fs::rename(&part, &file)?;
        }
        Ok(())
    };
    match write() {
        Ok(()) => Some(toolshed_tools::skills::SkillRoot {
            dir,
            source: "toolshed".into(),
            in_workspace: None,
        }),
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot write the shipped skills; they are not offered");
            None
        }
    }
}

/// The `skills/` folders of the plugins running (or degraded) now, for `system.skills`.
fn plugin_skill_roots(plugins: PluginsCell) -> toolshed_tools::skills::MoreRoots {
    Arc::new(move || {
        let Some(plugins) = plugins.get().and_then(toolshed_host::WeakPlugins::upgrade) else {
            return Vec::new();
        };
        plugins
            .list()
            .into_iter()
            .filter(|p| {
                matches!(
                    p.state,
                    toolshed_host::PluginState::Running | toolshed_host::PluginState::Degraded
                )
            })
            .filter_map(|p| {
                let dir = p.dir?.join("skills");
                dir.is_dir().then(|| toolshed_tools::skills::SkillRoot {
                    dir,
                    source: format!("plugin:{}", p.id),
                    in_workspace: None,
                })
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use toolshed_host::config::ConfigSources;

    /// Every line of the starter this build writes (`toolshed config init`), the
    /// registered sections' too, uncommented, is a known key with a valid value; as written
    /// it changes nothing.
    #[test]
    fn the_starter_names_only_real_settings() {
        let dir = tempfile::tempdir().unwrap();
        let sources = || {
            super::sections(ConfigSources {
                workspace: dir.path().to_path_buf(),
                explicit_file: Some(dir.path().join("user.toml")),
                ..ConfigSources::default()
            })
        };
        let starter = sources().starter();
        #[cfg(feature = "browser")]
        assert!(starter.contains("\n[browser]\n"), "{starter}");
        let uncommented = toolshed_test_support::config::uncommented(&starter);
        std::fs::write(dir.path().join("user.toml"), &uncommented).unwrap();
        let loaded = sources().load().unwrap();
        assert!(loaded.unknown_keys.is_empty(), "{:?}", loaded.unknown_keys);
        std::fs::write(dir.path().join("user.toml"), &starter).unwrap();
        let loaded = sources().load().unwrap();
        assert!(loaded.widening.is_empty(), "{:?}", loaded.widening);
        #[cfg(feature = "browser")]
        assert_eq!(
            loaded.config.section::<toolshed_browser::Settings>(),
            toolshed_browser::Settings::default()
        );
    }
}
