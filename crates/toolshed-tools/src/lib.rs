//! The built-in system plugins of toolshed.
//!
//! Each plugin is one module folder. [`system_plugins`] lists them all; the host registers
//! them in the system root, the most trusted of the discovery roots.

use std::sync::Arc;

use toolshed_core::Plugin;

pub mod exec;
pub mod http;
pub mod util;
pub mod web;
pub mod workspace;

/// Every built-in plugin, in a stable order.
pub fn system_plugins() -> Vec<Arc<dyn Plugin>> {
    system_plugins_with(&toolshed_core::Gauges::new())
}

/// Every built-in plugin, registering their gauges (for the metrics endpoint) in `gauges`.
pub fn system_plugins_with(gauges: &toolshed_core::Gauges) -> Vec<Arc<dyn Plugin>> {
    let mut plugins = vec![
        workspace::plugin(),
        exec::exec_plugin_with(gauges),
        exec::process_plugin_with(gauges),
        http::plugin(),
    ];
    plugins.extend(util::plugins());
    plugins.push(web::plugin());
    plugins
}
