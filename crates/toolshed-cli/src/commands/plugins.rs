//! `toolshed plugins list|enable|disable`.

use serde_json::json;
use toolshed_host::Host;
use toolshed_host::registry::Level;

use crate::Failure;
use crate::render::{print_json, table};

/// Lists plugins and every discovery problem.
pub fn list(host: &Host, json: bool) -> Result<(), Failure> {
    let plugins = host.registry().plugins();
    let diagnostics = host.registry().diagnostics();
    if json {
        return print_json(&json!({ "plugins": plugins, "problems": diagnostics }));
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
    print!(
        "{}",
        table(&["ID", "VERSION", "KIND", "ROOT", "STATE", "TOOLS"], &rows)
    );
    let reasons: Vec<_> = plugins
        .iter()
        .filter_map(|p| p.reason.as_ref().map(|r| (p, r)))
        .collect();
    if !reasons.is_empty() {
        println!();
        for (p, reason) in reasons {
            println!("{} ({}): {reason}", p.id, p.state.as_str());
        }
    }
    if !diagnostics.is_empty() {
        println!("\nProblems:");
        for d in &diagnostics {
            let level = match d.level {
                Level::Error => "error",
                Level::Warning => "warning",
            };
            println!("  {level}: {d}");
        }
    }
    Ok(())
}

/// Enables or disables a plugin.
pub async fn set_enabled(host: &Host, id: &str, enabled: bool) -> Result<(), Failure> {
    let info = host
        .registry()
        .set_enabled(id, enabled)
        .await
        .map_err(|e| Failure::Runtime(e.to_string()))?;
    match &info.reason {
        Some(reason) => println!("{}: {} ({reason})", info.id, info.state.as_str()),
        None => println!("{}: {}", info.id, info.state.as_str()),
    }
    Ok(())
}
