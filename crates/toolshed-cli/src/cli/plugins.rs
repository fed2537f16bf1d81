//! The syntax of `toolshed plugins`.

use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub(crate) enum PluginsCommand {
    /// List plugins with their state, and every manifest problem
    List {
        /// Print exact JSON
        #[arg(long)]
        json: bool,
    },
    /// Enable a plugin (persisted)
    Enable {
        /// The plugin id
        id: String,
    },
    /// Disable a plugin (persisted); its tools stop being callable
    Disable {
        /// The plugin id
        id: String,
    },
    /// Pause a running plugin (persisted): it stays loaded, its calls are refused
    Pause {
        /// The plugin id
        id: String,
    },
    /// Resume a paused plugin: its calls go through again
    Resume {
        /// The plugin id
        id: String,
    },
    /// Install a plugin from a directory, a .tar.gz/.tgz or .zip file, an https URL, or
    /// by id from a configured store (`[[plugins.stores]]`)
    Install(InstallArgs),
    /// Search the configured plugin stores (`[[plugins.stores]]`) by id, name, description
    /// or tag: what they offer, and which are installed or have a newer version
    Search {
        /// Words that must all appear (all plugins when left out)
        text: Vec<String>,
        /// Print exact JSON
        #[arg(long)]
        json: bool,
    },
    /// Install a store plugin again when its store has a newer version
    Update {
        /// The plugin id
        id: String,
    },
    /// Remove an installed plugin: its files, state and config
    Uninstall {
        /// The plugin id
        id: String,
    },
    /// Ask plugins how they are now (a JavaScript plugin's `health()` export answers):
    /// every plugin, or ID (exit 1 when one is not ok)
    Health {
        /// The plugin id (all of them when left out)
        id: Option<String>,
        /// Print exact JSON
        #[arg(long)]
        json: bool,
    },
    /// Read a plugin directory's manifest (toolshed's own or another system's: info.json,
    /// web-plugin.json, package.json, plugin.yml) and print it as toolshed reads it, with
    /// every field that was mapped, defaulted or ignored, and why. Nothing is installed
    Inspect {
        /// The plugin directory (or its manifest file)
        dir: std::path::PathBuf,
        /// Print exact JSON
        #[arg(long)]
        json: bool,
    },
    /// Check an installed plugin's files against what its install recorded (exit 1 when
    /// one changed, was added or is gone)
    Verify {
        /// The plugin id
        id: String,
        /// Print exact JSON
        #[arg(long)]
        json: bool,
    },
    /// Restart a plugin (stop, then start again)
    Reload {
        /// The plugin id
        id: String,
    },
    /// Show the end of a plugin's log: a mounted MCP server's stderr, with its starts and
    /// exits
    Logs {
        /// The plugin id (or a mounted server's name)
        id: String,
        /// How many lines to show
        #[arg(long, short = 'n', default_value_t = 100, value_name = "N")]
        lines: usize,
    },
    /// Show or set a plugin's config: no KEY lists the fields, KEY prints one value,
    /// KEY VALUE sets it (VALUE `-` reads it from standard input, for secrets)
    Config {
        /// The plugin id
        id: String,
        /// The config field
        key: Option<String>,
        /// The new value: JSON, or plain text for string and select fields
        value: Option<String>,
    },
    /// Grant a sandboxed plugin capabilities its manifest asks for: `http:HOST[:PORT]`,
    /// `fs-read:PATH`, `fs-write:PATH`, `tool:NAME`, `memory`. No GRANT grants everything the
    /// manifest names; with none, prints what it asks for and holds
    Grant {
        /// The plugin id
        id: String,
        /// Grants, e.g. `http:api.github.com`
        grants: Vec<String>,
        /// Only print what the plugin asks for and what it holds
        #[arg(long)]
        list: bool,
    },
    /// Take grants back (all of them with --all)
    Revoke {
        /// The plugin id
        id: String,
        /// Grants to take back
        grants: Vec<String>,
        /// Take back every grant
        #[arg(long)]
        all: bool,
    },
}

#[derive(Debug, Args)]
pub(crate) struct InstallArgs {
    /// A plugin directory, a .tar.gz/.tgz file, a .zip file, an https URL of one (with
    /// --sha256), or the id of a plugin a configured store offers
    pub source: String,
    /// Refuse the install unless the plugin has this id
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,
    /// Refuse the archive unless its SHA-256 checksum is this (checked before it is opened)
    #[arg(long, value_name = "HEX")]
    pub sha256: Option<String>,
    /// For a directory URL (its files fetched one by one, as Agent Spaces serves plugins):
    /// the plugin's Agent Spaces folder digest, checked before anything is put in place
    #[arg(long, value_name = "HEX")]
    pub md5: Option<String>,
    /// Replace an installed plugin with the same id (its state and config are kept)
    #[arg(long)]
    pub force: bool,
}
