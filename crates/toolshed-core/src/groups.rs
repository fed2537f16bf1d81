//! Operator groups with a label and a description (Fenix's `GROUP_METADATA`): what a
//! person reads in `toolshed tools groups`, the REST API and the dashboard, and what a
//! model reads of a group in discovery mode (`tool_search`). The groups of the tools that
//! come with toolshed are described here; a plugin describes its own in its manifest
//! (`groups`).

use serde::{Deserialize, Serialize};

/// A group's label and description.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupText {
    /// A short label for people, e.g. `Workspace files`.
    pub label: String,
    /// What the group's tools are for, in a sentence.
    #[serde(default)]
    pub description: String,
}

/// The groups of the tools that come with toolshed: (name, label, description).
const BUILTIN: &[(&str, &str, &str)] = &[
    (
        "workspace",
        "Workspace files",
        "Read, write, edit, patch, list and search the files of the workspace, confined to it.",
    ),
    (
        "exec",
        "Commands",
        "Run commands in the sandbox: one-shot, with a terminal, as shell sessions or as background processes.",
    ),
    (
        "web",
        "Web",
        "Search the web and fetch pages, through the network rules that keep private addresses out.",
    ),
    ("http", "HTTP", "Make HTTP requests to allowed hosts."),
    (
        "util",
        "Utilities",
        "Small exact helpers: arithmetic, dates and times, text, JSON, hashing and encoding, random values, Markdown.",
    ),
    (
        "memory",
        "Memory",
        "Remember facts across sessions, search them, and keep a daily journal.",
    ),
    (
        "agents",
        "Agents and planning",
        "Run subagents, keep todo lists and goals, plan before acting, schedule and run workflows.",
    ),
    (
        "browser",
        "Browser",
        "Drive a headless browser for pages that need JavaScript, a login or a click.",
    ),
    (
        "lsp",
        "Code intelligence",
        "Ask language servers for definitions, references, symbols and diagnostics, and rename across files.",
    ),
    (
        "skills",
        "Skills",
        "List and load skills: written instructions for tasks.",
    ),
    (
        "code",
        "Code mode",
        "Run a JavaScript snippet that calls many tools in one go.",
    ),
    (
        "ask",
        "Ask the person",
        "Ask the person behind the call a question and wait for the answer.",
    ),
    (
        "download",
        "Downloads",
        "Download files from the web into the workspace.",
    ),
    (
        "mail",
        "Mail",
        "Read and send email through configured accounts.",
    ),
    ("plugins", "Plugins", "Manage toolshed's plugins."),
];

/// The label and description of a group of toolshed's own tools.
pub fn builtin_group(name: &str) -> Option<GroupText> {
    BUILTIN
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, label, description)| GroupText {
            label: (*label).to_string(),
            description: (*description).to_string(),
        })
}
