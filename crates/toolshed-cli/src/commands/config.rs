//! `toolshed config init|show`: a starter config, and the settings in force with where each
//! came from. Neither opens the host.

use std::path::PathBuf;

use serde_json::json;
use toolshed_host::config::{ConfigSources, user_config_dir};

use crate::Failure;
use crate::cli::{ConfigCommand, GlobalArgs};
use crate::render::print_json;

/// The widest setting line the sources are aligned after; longer lines are not padded.
const SETTING_COLUMN: usize = 48;

/// Runs one config command.
pub(crate) fn run(global: &GlobalArgs, command: ConfigCommand) -> Result<(), Failure> {
    match command {
        ConfigCommand::Init { path, force } => init(path, force),
        ConfigCommand::Show { json } => show(global, json),
    }
}

fn init(path: Option<PathBuf>, force: bool) -> Result<(), Failure> {
    let path = match path {
        Some(path) => path,
        None => user_config_dir()
            .map(|dir| dir.join("config.toml"))
            .ok_or_else(|| {
                Failure::Usage(
                    "cannot tell where your config goes: HOME is not set; pass --path FILE".into(),
                )
            })?,
    };
    if path.exists() && !force {
        return Err(Failure::Usage(format!(
            "{} exists already; edit it, or pass --force to replace it with the starter",
            path.display()
        )));
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| Failure::Runtime(format!("cannot create {}: {e}", dir.display())))?;
    }
    // Written whole to a temporary file beside it, then renamed: never half a config.
    let tmp = path.with_extension("toml.tmp");
    let starter = crate::builtins::sections(ConfigSources::default()).starter();
    std::fs::write(&tmp, starter)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            Failure::Runtime(format!("cannot write {}: {e}", path.display()))
        })?;
    outln!(
        "wrote {}: every setting is commented out at its default; uncomment what you change \
         (`toolshed config show` prints what is in force)",
        path.display()
    );
    Ok(())
}

fn show(global: &GlobalArgs, json: bool) -> Result<(), Failure> {
    // Reading config needs no workspace choice: the current directory's toolshed.toml is
    // what would apply there.
    let workspace = match global.workspace() {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(|e| {
            Failure::Usage(format!(
                "cannot read the current directory ({e}); pass --workspace DIR"
            ))
        })?,
    };
    let loaded = crate::builtins::config_sources(&workspace, global.config.clone())
        .load()
        .map_err(|e| Failure::Usage(e.to_string()))?;
    let settings = loaded.settings();
    let env = toolshed_host::env_overlay::EnvOverlay::load(&workspace, loaded.workspace_trusted);
    if json {
        return print_json(&json!({
            "layers": loaded.layers,
            "settings": settings,
            "ignored": loaded.workspace_ignored,
            "unknown_keys": loaded.unknown_keys,
            "env": env.sources(),
            "env_read_by_toolshed": env.trusted,
            "env_problems": env.problems,
        }));
    }
    if loaded.layers.is_empty() {
        outln!("no config file or TOOLSHED_ variable is set: every setting is its default");
    } else {
        outln!("layers, later ones winning: {}", loaded.layers.join(", "));
    }
    // `key = value` lines, as in a config file, each with the layer that set it.
    let home = std::env::var("HOME").ok().filter(|h| h.len() > 1);
    let lines: Vec<(String, String)> = settings
        .iter()
        .map(|s| {
            let source = match &home {
                Some(home) if s.source.starts_with(home.as_str()) => {
                    format!("~{}", &s.source[home.len()..])
                }
                _ => s.source.clone(),
            };
            (format!("{} = {}", s.key, s.value), source)
        })
        .collect();
    let width = lines
        .iter()
        .map(|(line, _)| line.chars().count())
        .filter(|w| *w <= SETTING_COLUMN)
        .max()
        .unwrap_or(0);
    for (line, source) in lines {
        outln!("{line:<width$}  # {source}");
    }
    for ignored in &loaded.workspace_ignored {
        outln!(
            "ignored: `{}` in {} ({}; the workspace is not trusted)",
            ignored.key,
            ignored.source,
            ignored.why
        );
    }
    for unknown in &loaded.unknown_keys {
        outln!("unknown: `{}` in {} (ignored)", unknown.key, unknown.source);
    }
    // The workspace's .env files: which variable comes from where (never a value).
    let sources = env.sources();
    if !sources.is_empty() {
        outln!("");
        outln!("environment for commands (.env < .env.toolshed < process):");
        if !env.trusted {
            outln!(
                "  (commands only: toolshed itself reads these files in a workspace your own config trusts — trusted_workspaces)"
            );
        }
        for s in sources {
            let over = if s.overridden.is_empty() {
                String::new()
            } else {
                format!(" (over {})", s.overridden.join(", "))
            };
            outln!("  {}  # {}{over}", s.name, s.source);
        }
    }
    for problem in &env.problems {
        outln!("env: {problem}");
    }
    Ok(())
}
