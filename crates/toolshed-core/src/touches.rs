//! What a call will touch, derived from its arguments before it runs: the workspace paths
//! it reads and writes, the hosts it contacts, the commands it runs.
//!
//! Policy rules test these (`when = { writes = { glob = "secrets/**" } }`) instead of an
//! argument's name, so one rule covers every tool that writes — a patch's files, a move's
//! both ends, an edit's path, a download's target. A tool declares its touches on its spec
//! ([`ToolSpec::touch`](crate::ToolSpec::touch)): which argument holds what; a tool whose
//! arguments say it less plainly (a patch names its files inside its text) overrides
//! [`Tool::touches`](crate::Tool::touches). A tool that declares nothing touches nothing
//! the rules can see: its effects are bounded by the sandbox (commands) and the file
//! boundary instead.

use serde::Serialize;
use serde_json::Value;

/// What a call touches.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Touches {
    /// Workspace paths it reads, as the arguments spell them.
    pub reads: Vec<String>,
    /// Workspace paths it writes (creates, replaces, moves, deletes).
    pub writes: Vec<String>,
    /// Hosts it contacts: a host name or address, or a URL whose host counts.
    pub hosts: Vec<String>,
    /// Command lines it runs.
    pub commands: Vec<String>,
}

impl Touches {
    /// Whether it touches nothing the rules can see.
    pub fn is_empty(&self) -> bool {
        self.reads.is_empty()
            && self.writes.is_empty()
            && self.hosts.is_empty()
            && self.commands.is_empty()
    }

    /// The list of one kind.
    pub fn of(&self, kind: TouchKind) -> &[String] {
        match kind {
            TouchKind::Reads => &self.reads,
            TouchKind::Writes => &self.writes,
            TouchKind::Hosts => &self.hosts,
            TouchKind::Commands => &self.commands,
        }
    }

    fn push(&mut self, kind: TouchKind, value: String) {
        match kind {
            TouchKind::Reads => self.reads.push(value),
            TouchKind::Writes => self.writes.push(value),
            TouchKind::Hosts => self.hosts.push(value),
            TouchKind::Commands => self.commands.push(value),
        }
    }

    /// The touches `declared` finds in `arguments`.
    pub fn from_declared(declared: &[TouchArg], arguments: &Value) -> Self {
        let mut touches = Self::default();
        for arg in declared {
            let path: Vec<&str> = arg.argument.split('.').collect();
            collect(arguments, &path, &mut |value| {
                touches.push(arg.kind, value.to_string());
            });
        }
        touches
    }
}

/// Calls `found` with every string at `path` in `value` (`*` steps into each element of
/// an array).
fn collect(value: &Value, path: &[&str], found: &mut dyn FnMut(&str)) {
    match path.split_first() {
        None => {
            if let Some(s) = value.as_str() {
                found(s);
            }
        }
        Some((&"*", rest)) => {
            for item in value.as_array().into_iter().flatten() {
                collect(item, rest, found);
            }
        }
        Some((key, rest)) => {
            if let Some(next) = value.get(key) {
                collect(next, rest, found);
            }
        }
    }
}

/// A kind of touch; its name is the policy condition's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TouchKind {
    /// `reads`: workspace paths read.
    Reads,
    /// `writes`: workspace paths written.
    Writes,
    /// `hosts`: hosts contacted.
    Hosts,
    /// `commands`: command lines run.
    Commands,
}

impl TouchKind {
    /// Every kind.
    pub const ALL: [TouchKind; 4] = [
        TouchKind::Reads,
        TouchKind::Writes,
        TouchKind::Hosts,
        TouchKind::Commands,
    ];

    /// Its name: the policy condition's key.
    pub fn as_str(self) -> &'static str {
        match self {
            TouchKind::Reads => "reads",
            TouchKind::Writes => "writes",
            TouchKind::Hosts => "hosts",
            TouchKind::Commands => "commands",
        }
    }

    /// The kind named `name`, if it is one.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

/// What commands run for a call may write (and read) inside the workspace, from policy
/// rules on `writes` and `reads` (what a command touches cannot be known before it runs,
/// so the rules bind it through its sandbox instead): workspace-relative paths.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct WriteScope {
    /// Paths a command may not change (`writes = { glob = "secrets/**" }` denied).
    pub read_only: Vec<String>,
    /// When set, the only paths of the workspace a command may change (`writes = {
    /// not_glob = "src/**" }` denied).
    pub only: Option<Vec<String>>,
    /// Paths a command may not read at all (`reads = { glob = "private/**" }` denied): its
    /// sandbox hides them, as it hides `[sandbox] deny`.
    pub hidden: Vec<String>,
}

impl WriteScope {
    /// Whether it leaves the workspace as the sandbox mode says.
    pub fn is_empty(&self) -> bool {
        self.read_only.is_empty() && self.only.is_none() && self.hidden.is_empty()
    }
}

/// One declared touch: the argument (a dotted path, `*` for every element of an array)
/// whose string value is a path read or written, a host or URL, or a command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TouchArg {
    /// What it is.
    pub kind: TouchKind,
    /// Where in the arguments.
    pub argument: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn declared_arguments_are_found_in_objects_and_arrays() {
        let declared = [
            TouchArg {
                kind: TouchKind::Writes,
                argument: "from".into(),
            },
            TouchArg {
                kind: TouchKind::Writes,
                argument: "to".into(),
            },
            TouchArg {
                kind: TouchKind::Writes,
                argument: "items.*.path".into(),
            },
            TouchArg {
                kind: TouchKind::Hosts,
                argument: "items.*.url".into(),
            },
        ];
        let t = Touches::from_declared(
            &declared,
            &json!({"from": "a", "to": "b", "items": [{"path": "c", "url": "http://h/"}, {"path": 3}]}),
        );
        assert_eq!(t.writes, ["a", "b", "c"]);
        assert_eq!(t.hosts, ["http://h/"]);
        assert!(t.reads.is_empty() && t.commands.is_empty());
        assert!(Touches::from_declared(&declared, &json!({})).is_empty());
    }
}
