//! Tool specifications: what a tool is, as data.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// How dangerous a tool is when misused; used by policy and shown to people approving calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Danger {
    /// Reads or computes only.
    #[default]
    Low,
    /// Changes state that can be restored.
    Medium,
    /// Can destroy data or reach outside the host.
    High,
}

/// Which plane a tool acts on: the agent's execution environment, or toolshed itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Plane {
    /// Acts on the workspace, processes or the outside world on the agent's behalf.
    #[default]
    Execution,
    /// Manages toolshed itself (plugins, configuration).
    Program,
}

/// How long a tool's calls take (Cyrene's `Complexity()`): a simple one answers within a
/// request; a complex one runs long, so its calls run as a job (REST) or a task (MCP
/// clients of the Tasks extension) unless the caller asks otherwise.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Complexity {
    /// Answers within a request.
    #[default]
    Simple,
    /// Runs long: a job or a task by default.
    Complex,
}

impl Complexity {
    /// Whether it is [`Complexity::Simple`].
    pub fn is_simple(&self) -> bool {
        *self == Self::Simple
    }
}

/// Behaviour hints, mirroring MCP tool annotations. They must be honest: clients use them
/// to decide what to ask a person about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolAnnotations {
    /// The tool does not change anything.
    pub read_only: bool,
    /// The tool may destroy or overwrite data.
    pub destructive: bool,
    /// Calling twice with the same arguments has the same effect as calling once.
    pub idempotent: bool,
    /// The tool talks to systems outside the host.
    pub open_world: bool,
}

impl Default for ToolAnnotations {
    fn default() -> Self {
        Self {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: true,
        }
    }
}

impl ToolAnnotations {
    /// A pure computation: reads nothing outside its arguments, changes nothing.
    pub const PURE: Self = Self {
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world: false,
    };

    /// The hints a tool listing states, as MCP names them: those whose value differs from
    /// the protocol's reading of an absent hint (the [`Default`] here), and never
    /// `destructiveHint` or `idempotentHint` for a read-only tool, where MCP gives them no
    /// meaning. A client reads the same hints from this as from all four, for fewer bytes
    /// of every `tools/list`.
    pub fn stated(self) -> Vec<(&'static str, bool)> {
        let absent = Self::default();
        let mut hints = Vec::new();
        if self.read_only != absent.read_only {
            hints.push(("readOnlyHint", self.read_only));
        }
        if !self.read_only {
            if self.destructive != absent.destructive {
                hints.push(("destructiveHint", self.destructive));
            }
            if self.idempotent != absent.idempotent {
                hints.push(("idempotentHint", self.idempotent));
            }
        }
        if self.open_world != absent.open_world {
            hints.push(("openWorldHint", self.open_world));
        }
        hints
    }
}

/// A tool described as data: everything a door needs to list it and the pipeline needs to
/// check a call, without running any of the tool's code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    /// Unique across the whole host; `snake_case`, prefixed by its group.
    pub name: String,
    /// A short human title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, written for a model choosing a tool.
    pub description: String,
    /// JSON Schema of the arguments object.
    #[serde(default = "empty_object_schema")]
    pub input_schema: Value,
    /// JSON Schema of `structured` output, when the tool always returns it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Operator group, e.g. `workspace`, `util`; used for filtering and profiles.
    #[serde(default)]
    pub group: String,
    /// Behaviour hints.
    #[serde(default)]
    pub annotations: ToolAnnotations,
    /// Whether a call changes state that a later call can observe.
    #[serde(default)]
    pub mutates_state: bool,
    /// Whether the tool streams progress while it runs.
    #[serde(default)]
    pub streaming: bool,
    /// How dangerous misuse is.
    #[serde(default)]
    pub danger: Danger,
    /// The tool's own default deadline in milliseconds, if it differs from the host's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_timeout_ms: Option<u64>,
    /// Which plane the tool acts on.
    #[serde(default)]
    pub plane: Plane,
    /// Whether its calls run long ([`Complexity`]).
    #[serde(default, skip_serializing_if = "Complexity::is_simple")]
    pub complexity: Complexity,
    /// The tool runs commands and takes a `sandbox` argument naming the sandbox mode to run
    /// them in (`read-only`, `workspace-write`, `full-access`); policy compares it with the
    /// host's mode, so asking for more needs approval.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sandbox_argument: bool,
    /// Which arguments name what a call touches (paths read and written, hosts, command
    /// lines): what policy rules on touches test ([`crate::Touches`]).
    #[serde(skip)]
    pub touches: Vec<crate::TouchArg>,
    /// The title and description in other languages, by primary language subtag (`zh`):
    /// what [`ToolSpec::in_language`] shows a caller who asks for one.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub translations: std::collections::BTreeMap<String, ToolText>,
    /// The most JSON the tool takes in each named argument, in bytes of text without
    /// whitespace between tokens: a call over it is refused, and where a door sees the
    /// request's text, before the value is parsed ([`crate::oversized`]).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub max_argument_bytes: std::collections::BTreeMap<String, usize>,
    /// What the plugin's own format says of the tool beyond toolshed's fields, kept and
    /// shown as they were written (Fenix's `tool_kind`, `resource_identity_kind`,
    /// `implementation_source`, `implementation_ref`, `idempotency_policy`,
    /// `supports_streaming_output`). `idempotency_policy: by_key` is honoured
    /// ([`ToolSpec::idempotent_by_key`]).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub attributes: std::collections::BTreeMap<String, Value>,
}

/// A tool's title and description in one language.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolText {
    /// The title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The description.
    pub description: String,
}

/// The schema of a tool that takes no arguments.
pub(crate) fn empty_object_schema() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

impl ToolSpec {
    /// This spec without its input and output schemas (an empty object schema, no output
    /// schema); everything else copied. For listing a tool by name, without another copy
    /// of a schema.
    pub fn without_schemas(&self) -> Self {
        Self {
            name: self.name.clone(),
            title: self.title.clone(),
            description: self.description.clone(),
            input_schema: empty_object_schema(),
            output_schema: None,
            group: self.group.clone(),
            annotations: self.annotations,
            mutates_state: self.mutates_state,
            streaming: self.streaming,
            danger: self.danger,
            default_timeout_ms: self.default_timeout_ms,
            plane: self.plane,
            complexity: self.complexity,
            sandbox_argument: self.sandbox_argument,
            touches: self.touches.clone(),
            translations: self.translations.clone(),
            max_argument_bytes: self.max_argument_bytes.clone(),
            attributes: self.attributes.clone(),
        }
    }

    /// This spec with its title and description in `locale` (`zh`, `zh-CN`, `zh_CN.UTF-8`:
    /// the primary subtag counts) when it has them, and without the other languages';
    /// unchanged otherwise.
    pub fn in_language(&self, locale: &str) -> Self {
        let language: String = locale
            .chars()
            .take_while(char::is_ascii_alphabetic)
            .collect::<String>()
            .to_ascii_lowercase();
        let mut out = self.clone();
        if let Some(text) = self.translations.get(&language) {
            if text.title.is_some() {
                out.title.clone_from(&text.title);
            }
            out.description.clone_from(&text.description);
        }
        out.translations.clear();
        out
    }

    /// A spec with a name and description and defaults for the rest.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: description.into(),
            input_schema: empty_object_schema(),
            output_schema: None,
            group: String::new(),
            annotations: ToolAnnotations::default(),
            mutates_state: false,
            streaming: false,
            danger: Danger::Low,
            default_timeout_ms: None,
            plane: Plane::Execution,
            complexity: Complexity::Simple,
            sandbox_argument: false,
            touches: Vec::new(),
            translations: std::collections::BTreeMap::new(),
            max_argument_bytes: std::collections::BTreeMap::new(),
            attributes: std::collections::BTreeMap::new(),
        }
    }

    /// For a tool whose calls are idempotent by key (`idempotency_policy` of `by_key`,
    /// `idempotent_by_key`, `key` or `keyed`): the argument that carries the key
    /// (`idempotency_key_field`, default `idempotency_key`). A call repeated with the same
    /// key gets the first call's result.
    pub fn idempotent_by_key(&self) -> Option<&str> {
        let policy = self.attributes.get("idempotency_policy")?.as_str()?;
        matches!(
            policy.to_ascii_lowercase().as_str(),
            "by_key" | "idempotent_by_key" | "key" | "keyed"
        )
        .then(|| {
            self.attributes
                .get("idempotency_key_field")
                .and_then(Value::as_str)
                .unwrap_or("idempotency_key")
        })
    }

    /// Declares that the argument at `argument` (dotted, `*` for every element of an
    /// array) names something of `kind` the call touches.
    pub fn touch(mut self, kind: crate::TouchKind, argument: impl Into<String>) -> Self {
        self.touches.push(crate::TouchArg {
            kind,
            argument: argument.into(),
        });
        self
    }

    /// Declares the most JSON, in bytes, the tool takes in the argument `name`.
    pub fn max_argument_bytes(mut self, name: impl Into<String>, bytes: usize) -> Self {
        self.max_argument_bytes.insert(name.into(), bytes);
        self
    }

    /// Sets the title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the input schema.
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.input_schema = schema;
        self
    }

    /// Sets the group.
    pub fn group(mut self, group: impl Into<String>) -> Self {
        self.group = group.into();
        self
    }

    /// Sets the annotations.
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }
}
