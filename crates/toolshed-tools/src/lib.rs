//! The core family of toolshed's built-in plugins: workspace files, commands and
//! processes, HTTP, the web tools, utilities, asking the user and skills.
//!
//! Each plugin is one public module folder: [`workspace`] (files), [`exec`] (commands,
//! PTYs, shell, background processes), [`http`], [`web`], [`util`], [`ask`] (asking the
//! user) and [`skills`]. [`system_plugins`] builds them over the host's
//! [`Services`]; the binary registers them, with the other families' (`toolshed-browser`,
//! `toolshed-lsp`, `toolshed-mail`, `toolshed-download`, each a cargo feature of the
//! binary), in one place: `crates/toolshed-cli/src/builtins.rs`.

use std::sync::Arc;

use toolshed_core::Plugin;
pub(crate) use toolshed_kit::args;
use toolshed_ops::Services;

pub mod ask;
pub mod exec;
pub mod http;
pub mod skills;
pub mod util;
pub mod web;
pub mod workspace;

/// Every plugin of the core family over `services`, in a stable order (skills are built
/// apart: [`skills::plugin_with`]). Their gauges (for the metrics endpoint) are registered
/// in `services.gauges`.
pub fn system_plugins(services: &Services) -> Vec<Arc<dyn Plugin>> {
    system_plugins_with(services, web::Settings::default())
}

/// [`system_plugins`] with the web tools' `settings` (`[web.search]`).
pub fn system_plugins_with(services: &Services, web: web::Settings) -> Vec<Arc<dyn Plugin>> {
    let mut plugins = working_plugins(services, web);
    plugins.push(ask::plugin());
    plugins
}

/// The core family but `system.ask`, which the binary registers after the optional
/// families' downloads and mail (the order `toolshed plugins list` shows).
pub fn working_plugins(services: &Services, web: web::Settings) -> Vec<Arc<dyn Plugin>> {
    let mut plugins = vec![
        workspace::plugin(services),
        exec::exec_plugin(services),
        exec::process_plugin(services),
        http::plugin(services),
    ];
    plugins.extend(util::plugins());
    plugins.push(web::plugin_with_settings(services, web));
    plugins
}

// The recording loopback server the network tests share (toolshed-test-support).
#[cfg(test)]
use toolshed_test_support::http as net_test_server;
