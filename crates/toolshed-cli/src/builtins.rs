//! Every built-in plugin, registered in this one place: the core family (`toolshed-tools`),
//! code mode (`toolshed-js`), memory (in the host), and the families a build may leave out,
//! each a cargo feature of this binary (`browser`, `lsp`, `mail`, `download`; all on by
//! default). `cargo build --no-default-features --features core` builds the smallest host.

use std::path::Path;
use std::sync::Arc;

use toolshed_host::HostBuilder;
use toolshed_host::config::Config;

/// Where the skills plugin finds the registry once the host is open (plugins' own skills).
pub(crate) type RegistryCell = Arc<std::sync::OnceLock<std::sync::Weak<toolshed_host::Registry>>>;

/// `builder` with every built-in plugin of this build, set up from `config`; and the cell to
/// fill with the host's registry once it is open.
pub(crate) fn register(
    builder: HostBuilder,
    config: &Config,
    workspace: &Path,
    data_dir: &Path,
) -> (HostBuilder, RegistryCell) {
    let web = toolshed_tools::web::Settings {
        keyless_fallback: config.web.keyless_fallback(),
    };
    let skills = skill_roots(workspace, data_dir);
    let registry: RegistryCell = Arc::default();
    let plugin_skills = plugin_skill_roots(registry.clone());
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
    #[cfg(feature = "browser")]
    {
        let browser = browser_settings(&config.browser);
        builder =
            builder.plugins(move |services| vec![toolshed_browser::plugin(services, browser)]);
    }
    builder = builder
        .plugins(|services| vec![toolshed_js::code_plugin(services)])
        .plugins(move |_| {
            vec![toolshed_tools::skills::plugin_with(
                skills.clone(),
                Some(plugin_skills.clone()),
            )]
        });
    #[cfg(feature = "lsp")]
    {
        let lsp = lsp_settings(workspace, &config.lsp);
        builder =
            builder.plugins(move |services| vec![toolshed_lsp::plugin(services, lsp.clone())]);
    }
    (builder.memory(), registry)
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
}

/// The `skills/` folders of the plugins running (or degraded) now, for `system.skills`.
fn plugin_skill_roots(
    registry: Arc<std::sync::OnceLock<std::sync::Weak<toolshed_host::Registry>>>,
) -> toolshed_tools::skills::MoreRoots {
    Arc::new(move || {
        let Some(registry) = registry.get().and_then(std::sync::Weak::upgrade) else {
            return Vec::new();
        };
        registry
            .plugins()
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

/// `[lsp]` as the code-intelligence plugin takes it.
#[cfg(feature = "lsp")]
fn lsp_settings(
    workspace: &std::path::Path,
    config: &toolshed_host::config::LspConfig,
) -> toolshed_lsp::Settings {
    use toolshed_lsp::{LanguageOverride, Settings, languages_with};
    let overrides = config
        .servers
        .iter()
        .map(|(name, s)| {
            let o = LanguageOverride {
                command: s.command.clone(),
                extensions: s.extensions.clone(),
                markers: s.markers.clone(),
                settings: s.settings.clone(),
                initialization_options: s.initialization_options.clone(),
            };
            (name.clone(), o)
        })
        .collect();
    let mut settings = Settings::new(workspace.to_path_buf());
    settings.languages = languages_with(&overrides);
    settings.idle_timeout = std::time::Duration::from_secs(config.idle_timeout_secs);
    settings.request_timeout = std::time::Duration::from_secs(config.request_timeout_secs);
    settings.max_servers = usize::try_from(config.max_servers).unwrap_or(usize::MAX);
    settings
}

/// `[browser]` as the browser plugin takes it (the config checked the values at load).
#[cfg(feature = "browser")]
fn browser_settings(config: &toolshed_host::config::BrowserConfig) -> toolshed_browser::Settings {
    use toolshed_browser::{Profile, Settings};
    let count = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    Settings {
        executable: config.executable.clone(),
        profile: if config.profile == "owner" {
            Profile::Owner
        } else {
            Profile::Session
        },
        max_sessions_per_owner: count(config.max_sessions_per_owner),
        max_sessions: count(config.max_sessions),
        max_memory_mb: config.max_memory_mb,
        idle_timeout_secs: config.idle_timeout_secs,
        width: config.width,
        height: config.height,
        evaluate: config.evaluate,
        max_screenshot_bytes: config.max_screenshot_bytes,
        navigation_timeout_ms: config.navigation_timeout_ms,
    }
}

#[cfg(test)]
mod tests {
    /// `[browser]` is declared in the host's config and the browser crate takes its own
    /// settings: what an empty section gives is what the plugin defaults to, so the two
    /// declarations cannot drift apart unnoticed.
    #[cfg(feature = "browser")]
    #[test]
    fn an_empty_browser_section_gives_the_plugins_defaults() {
        assert_eq!(
            super::browser_settings(&toolshed_host::config::BrowserConfig::default()),
            toolshed_browser::Settings::default()
        );
    }

    /// The same for `[lsp]`.
    #[cfg(feature = "lsp")]
    #[test]
    fn an_empty_lsp_section_gives_the_plugins_defaults() {
        let workspace = std::path::Path::new("/ws");
        assert_eq!(
            super::lsp_settings(workspace, &toolshed_host::config::LspConfig::default()),
            toolshed_lsp::Settings::new(workspace.to_path_buf())
        );
    }
}
