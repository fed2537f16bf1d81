//! `toolshed plugins list|enable|disable|install|uninstall|reload|logs|config|grant|revoke`.

use serde_json::json;
use toolshed_host::install::{self, InstallError};
use toolshed_host::registry::{GrantsInfo, Level, RegistryError};
use toolshed_host::{Host, config_fields};

use crate::Failure;
use crate::cli::InstallArgs;
use crate::render::{print_json, table};

/// Lists plugins and every discovery problem.
pub(crate) fn list(host: &Host, json: bool) -> Result<(), Failure> {
    let mut plugins = host.plugins().list();
    let language = std::env::var("TOOLSHED_LANG")
        .ok()
        .filter(|l| !l.trim().is_empty());
    // Names and descriptions in the language asked for, where manifests translate them.
    if let Some(lang) = language.clone() {
        for p in &mut plugins {
            let Some(manifest) = host.plugins().manifest(&p.id) else {
                continue;
            };
            if let Some(t) = manifest.translation(&lang) {
                if let Some(name) = &t.name {
                    p.name = name.clone();
                }
                if let Some(description) = &t.description {
                    p.description = description.clone();
                }
            }
        }
    }
    let diagnostics = host.plugins().diagnostics();
    if json {
        // Installed plugins carry where they came from (`plugins verify` checks their files).
        let listed: Vec<serde_json::Value> = plugins
            .iter()
            .map(|p| {
                let mut value = serde_json::to_value(p).unwrap_or_default();
                if let serde_json::Value::Object(map) = &mut value {
                    if let Some(manifest) = host.plugins().manifest(&p.id) {
                        map.extend(manifest.listing_fields(language.as_deref(), p.dir.as_deref()));
                    }
                    let provenance = host.plugins().provenance(&p.id).ok().flatten();
                    map.insert(
                        "provenance".into(),
                        serde_json::to_value(provenance).unwrap_or_default(),
                    );
                }
                value
            })
            .collect();
        return print_json(&json!({ "plugins": listed, "problems": diagnostics }));
    }
    let rows: Vec<Vec<String>> = plugins
        .iter()
        .map(|p| {
            vec![
                p.id.clone(),
                p.version.clone(),
                p.kind.as_str().to_string(),
                p.root.as_str().to_string(),
                p.state.as_str().to_string(),
                p.tools.join(", "),
            ]
        })
        .collect();
    out!(
        "{}",
        table(&["ID", "VERSION", "KIND", "ROOT", "STATE", "TOOLS"], &rows)
    );
    let reasons: Vec<_> = plugins
        .iter()
        .filter_map(|p| p.reason.as_ref().map(|r| (p, r)))
        .collect();
    if !reasons.is_empty() {
        outln!();
        for (p, reason) in reasons {
            outln!("{} ({}): {reason}", p.id, p.state.as_str());
        }
    }
    if !diagnostics.is_empty() {
        outln!("\nProblems:");
        for d in &diagnostics {
            let level = match d.level {
                Level::Error => "error",
                Level::Warning => "warning",
            };
            outln!("  {level}: {d}");
        }
    }
    Ok(())
}

/// Enables or disables a plugin.
pub(crate) async fn set_enabled(host: &Host, id: &str, enabled: bool) -> Result<(), Failure> {
    let info = host
        .plugins()
        .set_enabled(id, enabled)
        .await
        .map_err(|e| Failure::Runtime(e.to_string()))?;
    print_state(&info);
    Ok(())
}

/// Pauses or resumes a plugin.
pub(crate) async fn set_paused(host: &Host, id: &str, paused: bool) -> Result<(), Failure> {
    let info = host
        .plugins()
        .set_paused(id, paused)
        .await
        .map_err(|e| Failure::Runtime(e.to_string()))?;
    print_state(&info);
    Ok(())
}

fn print_state(info: &toolshed_host::registry::PluginInfo) {
    match &info.reason {
        Some(reason) => outln!("{}: {} ({reason})", info.id, info.state.as_str()),
        None => outln!("{}: {}", info.id, info.state.as_str()),
    }
}

/// Installs a plugin into the data dir, showing extraction progress on stderr.
pub(crate) async fn install(host: &Host, args: InstallArgs) -> Result<(), Failure> {
    let progress = std::sync::Arc::new(|line: String| eprintln!("{line}"));
    // Not a path or a URL but an id: from a store.
    let from_store = !toolshed_host::install::download::is_url(&args.source)
        && !std::path::Path::new(&args.source).exists()
        && toolshed_core::is_valid_plugin_id(&args.source);
    let lower = args.source.to_ascii_lowercase();
    let archive = [".zip", ".tar.gz", ".tgz"].iter().any(|suffix| {
        lower
            .split(['?', '#'])
            .next()
            .unwrap_or("")
            .ends_with(suffix)
    });
    let directory_url = toolshed_host::install::download::is_url(&args.source) && !archive;
    if args.md5.is_some() && !directory_url {
        return Err(Failure::Usage(
            "--md5 checks the files of a directory URL (https://…/plugins/name/); an archive takes --sha256, a local path neither".into(),
        ));
    }
    let outcome = if from_store {
        host.install_from_store(&args.source, args.force, progress)
            .await
    } else if directory_url {
        let Some(md5) = &args.md5 else {
            return Err(Failure::Usage(format!(
                "{} is a directory URL: give --md5 HEX (the plugin's folder digest, from its publisher or store index), so that what is installed is what was published",
                toolshed_host::install::download::redact(&args.source)
            )));
        };
        host.install_from_directory_url(&args.source, md5, args.force, progress)
            .await
    } else {
        let request = host.install_request(args.source, args.id, args.sha256, args.force);
        host.install_plugin(request, progress).await
    };
    let installed = match outcome {
        Ok(installed) => installed,
        Err(
            e @ (InstallError::Url { .. }
            | InstallError::Download { .. }
            | InstallError::Format { .. }
            | InstallError::ChecksumSyntax { .. }
            | InstallError::ChecksumOnDirectory { .. }
            | InstallError::NotInStore { .. }
            | InstallError::Md5Syntax { .. }
            | InstallError::BadId(_)),
        ) => return Err(Failure::Usage(e.to_string())),
        Err(e) => return Err(Failure::Runtime(e.to_string())),
    };
    if let Some(dir) = &installed.stripped {
        eprintln!("note: used the archive's single top-level directory `{dir}/` as the plugin");
    }
    outln!(
        "{} {}: {} into {}",
        installed.id,
        installed.version,
        if installed.replaced {
            "replaced"
        } else {
            "installed"
        },
        installed.dir.display()
    );
    eprintln!(
        "a running `toolshed mcp` or `toolshed serve` loads it within a second; `toolshed plugins list` shows its state"
    );
    Ok(())
}

/// Lists what the configured stores offer, filtered by `words` (all must appear in the
/// id, name, description or tags, case folded).
pub(crate) async fn search(host: &Host, words: &[String], json: bool) -> Result<(), Failure> {
    let offers = host.store_offers().await;
    if offers.is_empty() {
        return Err(Failure::Usage(
            "no plugin store is configured; add one as `[[plugins.stores]] url = \"https://…/plugins/\"` in the config".into(),
        ));
    }
    let words: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    let mut found = Vec::new();
    let mut problems = Vec::new();
    for (store, listed) in offers {
        match listed {
            Ok(entries) => {
                for entry in entries {
                    let text = format!(
                        "{} {} {} {}",
                        entry.id,
                        entry.name,
                        entry.description,
                        entry.tags.join(" ")
                    )
                    .to_lowercase();
                    if words.iter().all(|w| text.contains(w.as_str())) {
                        let installed = host.plugins().manifest(&entry.id).map(|m| m.version);
                        found.push((entry, installed));
                    }
                }
            }
            Err(why) => problems.push(format!("{store}: {why}")),
        }
    }
    for problem in &problems {
        eprintln!("warning: cannot read the store {problem}");
    }
    // Best rated first, then the most downloaded (stores that give neither: by id).
    found.sort_by(|(a, _), (b, _)| a.ranking(b));
    if json {
        let list: Vec<serde_json::Value> = found
            .iter()
            .map(|(entry, installed)| {
                let mut value = serde_json::to_value(entry).unwrap_or_default();
                if let serde_json::Value::Object(map) = &mut value {
                    map.insert("installed".into(), json!(installed));
                }
                value
            })
            .collect();
        return print_json(&json!({ "plugins": list, "problems": problems }));
    }
    let rows: Vec<Vec<String>> = found
        .iter()
        .map(|(entry, installed)| {
            let state = match installed {
                None => String::new(),
                Some(v) if v == &entry.version => "installed".into(),
                Some(v) => format!("{v} installed"),
            };
            let rating = match (entry.rating, entry.ratings) {
                (Some(r), Some(n)) => format!("{r:.1} ({n})"),
                (Some(r), None) => format!("{r:.1}"),
                _ => String::new(),
            };
            vec![
                entry.id.clone(),
                entry.version.clone(),
                entry.name.clone(),
                rating,
                entry.downloads.map(|d| d.to_string()).unwrap_or_default(),
                entry.tags.join(", "),
                state,
            ]
        })
        .collect();
    out!(
        "{}",
        table(
            &[
                "ID",
                "VERSION",
                "NAME",
                "RATING",
                "DOWNLOADS",
                "TAGS",
                "INSTALLED"
            ],
            &rows
        )
    );
    Ok(())
}

/// Installs a store plugin again when its store has a newer version.
pub(crate) async fn update(host: &Host, id: &str) -> Result<(), Failure> {
    let progress = std::sync::Arc::new(|line: String| eprintln!("{line}"));
    match host.update_from_store(id, progress).await {
        Ok(Some(installed)) => {
            outln!("{} {}: updated", installed.id, installed.version);
            Ok(())
        }
        Ok(None) => {
            outln!("{id}: up to date");
            Ok(())
        }
        Err(e @ InstallError::NotInStore { .. }) => Err(Failure::Usage(e.to_string())),
        Err(e) => Err(Failure::Runtime(e.to_string())),
    }
}

/// Uninstalls a plugin: files, state and config.
pub(crate) async fn uninstall(host: &Host, id: &str) -> Result<(), Failure> {
    // Not while an install runs: it may be replacing this very plugin. (No lock file means
    // no plugin root yet, and nothing to race with.)
    let root = host.user_plugin_root();
    let _lock = match install::InstallLock::try_acquire(&root) {
        Ok(None) => {
            return Err(Failure::Runtime(format!(
                "an install is running in {}; try again when it ends",
                root.display()
            )));
        }
        Ok(Some(lock)) => Some(lock),
        Err(_) => None,
    };
    let info = host
        .plugins()
        .uninstall(id)
        .await
        .map_err(|e| Failure::Runtime(e.to_string()))?;
    match &info.dir {
        Some(dir) => outln!("{}: uninstalled (removed {})", info.id, dir.display()),
        None => outln!("{}: uninstalled", info.id),
    }
    Ok(())
}

/// Asks plugins how they are now.
pub(crate) async fn health(host: &Host, id: Option<&str>, json: bool) -> Result<(), Failure> {
    let ids: Vec<String> = match id {
        Some(id) => vec![id.to_string()],
        None => host.plugins().list().into_iter().map(|p| p.id).collect(),
    };
    let mut rows = Vec::new();
    let mut unwell = 0;
    for id in ids {
        let Some((info, health)) = host.plugins().health_now(&id).await else {
            return Err(Failure::Runtime(format!(
                "no plugin `{id}`; `toolshed plugins list` shows them"
            )));
        };
        let (word, message) = toolshed_host::health_words(&health);
        if word != "ok" && info.state != toolshed_host::PluginState::Disabled {
            unwell += 1;
        }
        rows.push((info.id, info.state.as_str().to_string(), word, message));
    }
    if json {
        let list: Vec<serde_json::Value> = rows
            .iter()
            .map(|(id, state, health, message)| {
                json!({"id": id, "state": state, "health": health, "message": message})
            })
            .collect();
        print_json(&json!({ "plugins": list }))?;
    } else {
        let table_rows: Vec<Vec<String>> = rows
            .iter()
            .map(|(id, state, health, message)| {
                vec![
                    id.clone(),
                    state.clone(),
                    health.to_string(),
                    message.clone(),
                ]
            })
            .collect();
        out!("{}", table(&["ID", "STATE", "HEALTH", "WHY"], &table_rows));
    }
    if unwell == 0 {
        Ok(())
    } else {
        Err(Failure::Runtime(format!(
            "{unwell} enabled plugin(s) not healthy"
        )))
    }
}

/// Prints the manifest of a plugin directory as toolshed reads it, with what was done to
/// the fields of other systems' formats.
pub(crate) fn inspect(dir: &std::path::Path, json: bool) -> Result<(), Failure> {
    use toolshed_host::manifest::{MANIFEST_NAMES, find_manifest, inspect_manifest};
    let path = if dir.is_file() {
        dir.to_path_buf()
    } else {
        find_manifest(dir).ok_or_else(|| {
            Failure::Usage(format!(
                "{} holds no plugin manifest; looked for {}",
                dir.display(),
                MANIFEST_NAMES.join(", ")
            ))
        })?
    };
    let inspection = inspect_manifest(&path).map_err(|e| Failure::Runtime(e.to_string()))?;
    if json {
        return print_json(&serde_json::json!({
            "file": path,
            "dialect": inspection.dialect,
            "manifest": inspection.manifest,
            "fields": inspection.notes,
        }));
    }
    let m = &inspection.manifest;
    let dialect = match inspection.dialect {
        toolshed_host::manifest::Dialect::Toolshed => "toolshed's own fields",
        toolshed_host::manifest::Dialect::Foreign => "another system's format, mapped",
    };
    outln!("{}: {dialect}", path.display());
    outln!(
        "{} {} ({}, kind {})",
        m.id,
        m.version,
        m.name,
        m.kind.as_str()
    );
    let manifest = serde_json::to_string_pretty(m).map_err(|e| Failure::Runtime(e.to_string()))?;
    outln!("");
    outln!("# The manifest as toolshed reads it");
    outln!("{manifest}");
    if !inspection.notes.is_empty() {
        outln!("");
        outln!("# Fields of the file");
        let rows: Vec<Vec<String>> = inspection
            .notes
            .iter()
            .map(|n| {
                vec![
                    n.field.clone(),
                    match &n.to {
                        Some(to) => format!("{} → {to}", n.action),
                        None => n.action.to_string(),
                    },
                    n.why.clone(),
                ]
            })
            .collect();
        out!("{}", table(&["FIELD", "DONE", "WHY"], &rows));
    }
    Ok(())
}

/// Checks an installed plugin's files against what its install recorded.
pub(crate) async fn verify(host: &Host, id: &str, json: bool) -> Result<(), Failure> {
    let (provenance, drift) = host.verify_plugin(id).await.map_err(Failure::Runtime)?;
    if json {
        print_json(&serde_json::json!({
            "id": id, "provenance": provenance, "clean": drift.is_clean(), "drift": drift,
        }))?;
    } else {
        let installed = toolshed_host::local_time(provenance.installed_ms);
        outln!("{id}: installed {installed} from {}", provenance.source);
        if let Some(sha) = &provenance.sha256 {
            outln!("  archive sha256 {sha}");
        }
        outln!(
            "  files sha256 {} ({} files)",
            provenance.tree_sha256,
            provenance.files.len()
        );
        if drift.is_clean() {
            outln!("  every file is as installed");
        }
        for (what, files) in [
            ("changed", &drift.changed),
            ("added", &drift.added),
            ("removed", &drift.removed),
        ] {
            for file in files {
                outln!("  {what}: {file}");
            }
        }
    }
    if drift.is_clean() {
        Ok(())
    } else {
        Err(Failure::Runtime(format!(
            "{id}: {} changed, {} added, {} removed since it was installed; reinstall it (`toolshed plugins install SOURCE --force`) if that was not you",
            drift.changed.len(),
            drift.added.len(),
            drift.removed.len()
        )))
    }
}

/// Restarts a plugin.
pub(crate) async fn reload(host: &Host, id: &str) -> Result<(), Failure> {
    let info = host
        .plugins()
        .reload(id)
        .await
        .map_err(|e| Failure::Runtime(e.to_string()))?;
    match &info.reason {
        Some(reason) => outln!("{}: {} ({reason})", info.id, info.state.as_str()),
        None => outln!("{}: {}", info.id, info.state.as_str()),
    }
    Ok(())
}

/// Prints the end of a plugin's log (a mounted MCP server's stderr).
pub(crate) fn logs(host: &Host, id: &str, lines: usize) -> Result<(), Failure> {
    let plugins = host.plugins();
    let info = plugins
        .info(id)
        .or_else(|| plugins.info(&format!("mcp.{id}")))
        .ok_or_else(|| {
            Failure::Usage(format!(
                "there is no plugin `{id}`; `toolshed plugins list` shows the plugins there are"
            ))
        })?;
    let text = info
        .dir
        .as_deref()
        .and_then(|dir| toolshed_gateway::log::tail(dir, lines));
    match text {
        Some(text) => outln!("{text}"),
        None => eprintln!(
            "{} has no log yet: a mounted MCP server's log begins when it first starts",
            info.id
        ),
    }
    Ok(())
}

fn registry_failure(e: RegistryError) -> Failure {
    match e {
        RegistryError::UnknownPlugin { .. } | RegistryError::Invalid(_) => {
            Failure::Usage(e.to_string())
        }
        other => Failure::Runtime(other.to_string()),
    }
}

fn print_grants(id: &str, info: &GrantsInfo) {
    let asks = if info.declared.is_empty() && info.wildcards.is_empty() {
        "nothing".to_string()
    } else {
        info.declared
            .iter()
            .cloned()
            .chain(
                info.wildcards
                    .iter()
                    .map(|k| format!("{k}:* (any you grant)")),
            )
            .collect::<Vec<_>>()
            .join(", ")
    };
    outln!("{id} asks for: {asks}");
    if info.granted.is_empty() {
        outln!("{id} holds: nothing");
    } else {
        outln!("{id} holds: {}", info.granted.join(", "));
    }
}

/// Grants capabilities (all the manifest names when none are given), or lists them.
pub(crate) async fn grant(
    host: &Host,
    id: &str,
    grants: Vec<String>,
    list: bool,
) -> Result<(), Failure> {
    let plugins = host.plugins();
    let current = plugins.grants(id).await.map_err(registry_failure)?;
    if list {
        print_grants(id, &current);
        return Ok(());
    }
    let grants = if grants.is_empty() {
        if current.declared.is_empty() {
            return Err(Failure::Usage(format!(
                "plugin `{id}` names nothing to grant{}; pass grants such as `http:HOST`",
                if current.wildcards.is_empty() {
                    String::new()
                } else {
                    format!(" (it takes any {} you grant)", current.wildcards.join(", "))
                }
            )));
        }
        current.declared.clone()
    } else {
        grants
    };
    let info = plugins
        .change_grants(id, &grants, &[])
        .await
        .map_err(registry_failure)?;
    print_grants(id, &info);
    if let Some(plugin) = plugins.info(id)
        && let Some(reason) = &plugin.reason
    {
        outln!("{id}: {} ({reason})", plugin.state.as_str());
    }
    Ok(())
}

/// Takes grants back.
pub(crate) async fn revoke(
    host: &Host,
    id: &str,
    grants: Vec<String>,
    all: bool,
) -> Result<(), Failure> {
    let plugins = host.plugins();
    let grants = match (all, grants.is_empty()) {
        (true, true) => plugins.grants(id).await.map_err(registry_failure)?.granted,
        (false, false) => grants,
        (true, false) => {
            return Err(Failure::Usage(
                "pass either --all or the grants to take back, not both".into(),
            ));
        }
        (false, true) => {
            return Err(Failure::Usage(format!(
                "name the grants to take back, or pass --all; `toolshed plugins grant {id} --list` shows them"
            )));
        }
    };
    let info = plugins
        .change_grants(id, &[], &grants)
        .await
        .map_err(registry_failure)?;
    print_grants(id, &info);
    Ok(())
}

/// Lists, prints or sets a plugin's config. Secret values are never printed.
pub(crate) fn config(
    host: &Host,
    id: &str,
    key: Option<&str>,
    value: Option<&str>,
) -> Result<(), Failure> {
    let plugins = host.plugins();
    let manifest = plugins.manifest(id).ok_or_else(|| {
        Failure::Runtime(format!(
            "no plugin `{id}`; `toolshed plugins list` shows the installed plugins"
        ))
    })?;
    let stored = plugins
        .config_values(id)
        .map_err(|e| Failure::Runtime(e.to_string()))?;
    let Some(key) = key else {
        if manifest.config.is_empty() {
            outln!("plugin `{id}` has no config fields");
            return Ok(());
        }
        let rows: Vec<Vec<String>> = manifest
            .config
            .iter()
            .map(|f| {
                let value = if f.secret {
                    if stored.contains_key(&f.key) {
                        "(secret, set)".to_string()
                    } else {
                        "(secret, unset)".to_string()
                    }
                } else if let Some(v) = stored.get(&f.key) {
                    v.to_string()
                } else if let Some(d) = &f.default {
                    format!("{d} (default)")
                } else {
                    "(unset)".to_string()
                };
                vec![
                    f.key.clone(),
                    config_fields::type_name(f.field_type).to_string(),
                    value,
                    f.description.clone().unwrap_or_default(),
                ]
            })
            .collect();
        out!("{}", table(&["KEY", "TYPE", "VALUE", "DESCRIPTION"], &rows));
        return Ok(());
    };
    let Some(field) = manifest.config.iter().find(|f| f.key == key) else {
        let keys: Vec<&str> = manifest.config.iter().map(|f| f.key.as_str()).collect();
        return Err(Failure::Runtime(format!(
            "`{key}` is not a config field of `{id}` (fields: {}); `toolshed plugins config {id}` lists them",
            if keys.is_empty() {
                "none".to_string()
            } else {
                keys.join(", ")
            }
        )));
    };
    let Some(raw) = value else {
        if field.secret {
            let set = if stored.contains_key(key) {
                "set"
            } else {
                "unset"
            };
            return Err(Failure::Runtime(format!(
                "`{key}` is a secret; set or unset only (it is {set}), never printed"
            )));
        }
        return match stored.get(key).or(field.default.as_ref()) {
            Some(serde_json::Value::String(s)) => {
                outln!("{s}");
                Ok(())
            }
            Some(v) => {
                outln!("{v}");
                Ok(())
            }
            None => Err(Failure::Runtime(format!(
                "`{key}` of `{id}` is not set and has no default"
            ))),
        };
    };
    let raw = if raw == "-" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .map_err(|e| Failure::Runtime(format!("cannot read the value from stdin: {e}")))?;
        text.trim_end_matches(['\n', '\r']).to_string()
    } else {
        raw.to_string()
    };
    let parsed = config_fields::parse_cli_value(field, &raw);
    // The error names the field and the type it takes, never the value (it may be secret).
    config_fields::check(field, &parsed).map_err(|problem| {
        Failure::Usage(format!("config for `{id}` was not changed: {problem}"))
    })?;
    plugins
        .set_config_value(id, key, &parsed, field.secret)
        .map_err(|e| Failure::Runtime(e.to_string()))?;
    if field.secret {
        outln!("{id}: {key} set (secret, not shown)");
    } else {
        outln!("{id}: {key} = {parsed}");
    }
    Ok(())
}
