//! The built-in system plugins of toolshed.
//!
//! Each plugin is one module folder. [`system_plugins`] builds them all over the host's
//! [`Services`]; the host registers them in the system root, the most trusted of the
//! discovery roots.

#![warn(missing_docs, unreachable_pub)]

use std::sync::Arc;

use toolshed_core::Plugin;
use toolshed_ops::Services;

mod args;
pub mod ask;
pub mod browser;
pub mod download;
pub mod exec;
pub mod http;
pub mod lsp;
pub mod mail;
pub mod skills;
pub mod util;
pub mod web;
pub mod workspace;

/// Every built-in plugin over `services`, in a stable order. Their gauges (for the metrics
/// endpoint) are registered in `services.gauges`.
pub fn system_plugins(services: &Services) -> Vec<Arc<dyn Plugin>> {
    system_plugins_with(services, web::Settings::default())
}

/// [`system_plugins`] with the web tools' `settings` (`[web.search]`).
pub fn system_plugins_with(services: &Services, web: web::Settings) -> Vec<Arc<dyn Plugin>> {
    let mut plugins = vec![
        workspace::plugin(services),
        exec::exec_plugin(services),
        exec::process_plugin(services),
        http::plugin(services),
    ];
    plugins.extend(util::plugins());
    plugins.push(web::plugin_with_settings(services, web));
    plugins.push(download::plugin(services));
    plugins.push(mail::plugin(services));
    plugins.push(ask::plugin());
    plugins
}

// The recording loopback server the network tests share (toolshed-test-support).
#[cfg(test)]
use toolshed_test_support::http as net_test_server;

/// Runs a file operation off the async threads (downloads, mail attachments).
pub(crate) async fn on_files<T: Send + 'static>(
    files: &Arc<dyn toolshed_ops::FileOps>,
    op: impl FnOnce(&dyn toolshed_ops::FileOps) -> Result<T, toolshed_ops::OpsError> + Send + 'static,
) -> Result<T, toolshed_core::ToolError> {
    let files = files.clone();
    let span = tracing::Span::current();
    tokio::task::spawn_blocking(move || span.in_scope(|| op(files.as_ref())))
        .await
        .map_err(|e| toolshed_core::ToolError::Internal(e.to_string()))?
        .map_err(toolshed_core::ToolError::from)
}

/// The executable `name` names: a path with a `/`, checked, or a name looked up on `PATH`.
pub(crate) fn find_program(name: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &std::path::Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if name.contains('/') {
        let path = std::path::PathBuf::from(name);
        return executable(&path).then_some(path);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|p| executable(p))
    })
}
