//! The replies about tools: a tool as described, the catalog, a search's hits, a call's
//! result and a job started.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Job;

/// Behaviour hints, as MCP tool annotations give them.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ToolAnnotations {
    /// The tool does not change anything.
    pub read_only: bool,
    /// The tool may destroy or overwrite data.
    pub destructive: bool,
    /// Calling twice with the same arguments has the same effect as calling once.
    pub idempotent: bool,
    /// The tool talks to systems outside the host.
    pub open_world: bool,
}

impl From<toolshed_core::ToolAnnotations> for ToolAnnotations {
    fn from(hints: toolshed_core::ToolAnnotations) -> Self {
        let toolshed_core::ToolAnnotations {
            read_only,
            destructive,
            idempotent,
            open_world,
        } = hints;
        Self {
            read_only,
            destructive,
            idempotent,
            open_world,
        }
    }
}

/// How dangerous a tool is when misused.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Danger {
    /// Reads or computes only.
    Low,
    /// Changes state that can be restored.
    Medium,
    /// Can destroy data or reach outside the host.
    High,
}

impl From<toolshed_core::Danger> for Danger {
    fn from(danger: toolshed_core::Danger) -> Self {
        use toolshed_core::Danger as D;
        match danger {
            D::Low => Self::Low,
            D::Medium => Self::Medium,
            D::High => Self::High,
        }
    }
}

/// Which plane a tool acts on.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Plane {
    /// The workspace, processes or the outside world, on the agent's behalf.
    Execution,
    /// toolshed itself (plugins, configuration).
    Program,
}

impl From<toolshed_core::Plane> for Plane {
    fn from(plane: toolshed_core::Plane) -> Self {
        use toolshed_core::Plane as P;
        match plane {
            P::Execution => Self::Execution,
            P::Program => Self::Program,
        }
    }
}

/// A tool's title and description in one language.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ToolText {
    /// The title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The description.
    pub description: String,
}

/// A tool: what a caller needs to choose it and call it.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Tool {
    /// Its name, unique across the host.
    pub name: String,
    /// A short title for people.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it does, written for a model choosing a tool.
    pub description: String,
    /// The JSON Schema of its arguments.
    #[schemars(with = "Map<String, Value>")]
    pub input_schema: Value,
    /// The JSON Schema of its `structured` output, when it always gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Map<String, Value>>")]
    pub output_schema: Option<Value>,
    /// Its group, e.g. `workspace`, `exec`.
    pub group: String,
    /// Behaviour hints.
    pub annotations: ToolAnnotations,
    /// Whether a call changes state that a later call can observe.
    pub mutates_state: bool,
    /// Whether it streams progress while it runs.
    pub streaming: bool,
    /// How dangerous misuse is.
    pub danger: Danger,
    /// Its own default deadline in milliseconds, when it differs from the host's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_timeout_ms: Option<u64>,
    /// Which plane it acts on.
    pub plane: Plane,
    /// How long its calls take: `simple`, or `complex` — run as a job (REST) or a task
    /// (MCP) unless the caller asks otherwise.
    #[schemars(extend("enum" = ["simple", "complex"]))]
    pub complexity: &'static str,
    /// It runs commands and takes a `sandbox` argument naming the sandbox mode to run
    /// them in.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub sandbox_argument: bool,
    /// Its title and description in other languages, by language (absent with
    /// `?locale=`, which picks one).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub translations: BTreeMap<String, ToolText>,
    /// The most JSON it takes in each named argument, in bytes.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub max_argument_bytes: BTreeMap<String, usize>,
    /// What the plugin's own format says of the tool beyond these fields, as written
    /// (Fenix's `tool_kind`, `resource_identity_kind`, `implementation_source`,
    /// `implementation_ref`, `idempotency_policy`, `supports_streaming_output`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, Value>,
    /// The plugin that provides it.
    pub plugin_id: String,
    /// Whether it can be called now (in a plugin's list of its tools only: a tool its
    /// manifest declares that is not registered, its plugin being off, is not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub callable: Option<bool>,
}

impl Tool {
    /// `spec`, provided by plugin `plugin_id`.
    pub(crate) fn new(spec: toolshed_core::ToolSpec, plugin_id: &str) -> Self {
        let toolshed_core::ToolSpec {
            name,
            title,
            description,
            input_schema,
            output_schema,
            group,
            annotations,
            mutates_state,
            streaming,
            danger,
            default_timeout_ms,
            plane,
            complexity,
            sandbox_argument,
            touches: _,
            translations,
            max_argument_bytes,
            attributes,
        } = spec;
        Self {
            name,
            title,
            description,
            input_schema,
            output_schema,
            group,
            annotations: annotations.into(),
            mutates_state,
            streaming,
            danger: danger.into(),
            default_timeout_ms,
            plane: plane.into(),
            complexity: match complexity {
                toolshed_core::Complexity::Simple => "simple",
                toolshed_core::Complexity::Complex => "complex",
            },
            sandbox_argument,
            translations: translations
                .into_iter()
                .map(|(language, text)| {
                    let toolshed_core::ToolText { title, description } = text;
                    (language, ToolText { title, description })
                })
                .collect(),
            max_argument_bytes,
            attributes,
            plugin_id: plugin_id.to_string(),
            callable: None,
        }
    }
}

/// The tools a caller may see.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct ToolList {
    /// The tools.
    pub tools: Vec<Tool>,
    /// With `?plane=`: which catalog this is, as Fenix names them (`execution_runtime`,
    /// `program`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub catalog: Option<&'static str>,
}

/// An operator group: its label, description and tools.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ToolGroup {
    /// The group's name, as tools name it (`GET /tools?group=`).
    pub name: String,
    /// A short label for people.
    pub label: String,
    /// What its tools are for ("" when nobody described it).
    pub description: String,
    /// Its tools the caller may use.
    pub tools: Vec<String>,
}

impl From<toolshed_host::registry::ToolGroup> for ToolGroup {
    fn from(group: toolshed_host::registry::ToolGroup) -> Self {
        let toolshed_host::registry::ToolGroup {
            name,
            label,
            description,
            tools,
        } = group;
        Self {
            name,
            label,
            description,
            tools,
        }
    }
}

/// The operator groups.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct ToolGroups {
    /// The groups, by name.
    pub groups: Vec<ToolGroup>,
}

/// The tools a plugin's manifest declares, and those its code registered.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct PluginTools {
    /// The plugin.
    pub plugin_id: String,
    /// Its tools, each saying whether it is `callable`.
    pub tools: Vec<Tool>,
}

/// One tool a search found.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchHit {
    /// The tool's name.
    pub name: String,
    /// Its group.
    pub group: String,
    /// The plugin that provides it.
    pub plugin: String,
    /// The first sentence of its description.
    pub summary: String,
    /// The JSON Schema of its arguments.
    #[schemars(with = "Map<String, Value>")]
    pub input_schema: Value,
    /// How well it matches (BM25): higher is better.
    pub score: f64,
}

/// A tool search's hits.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct SearchResults {
    /// What was searched for.
    pub query: String,
    /// The matches, best first.
    pub results: Vec<SearchHit>,
}

/// A call's result: the tool ran (`is_error` says whether it reported a failure). Written
/// straight from the host's result, field for field as a job records it
/// (`toolshed_host::jobs::output_json`; a test holds the two equal).
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct CallResult<'a> {
    /// The call's id, as the audit log records it.
    pub call_id: &'a str,
    /// The plugin that served it.
    pub plugin_id: Option<&'a str>,
    /// Whether the tool ran and reported a failure.
    pub is_error: bool,
    /// What it returned: text, images, resources (MCP content blocks).
    #[schemars(with = "Vec<Map<String, Value>>")]
    pub content: &'a [toolshed_core::Content],
    /// Its structured output (the tool's `output_schema` says its shape), if it gave one.
    pub structured: Option<&'a Value>,
    /// How long the call took, in milliseconds.
    pub duration_ms: u64,
}

impl<'a> CallResult<'a> {
    /// The reply for `output`, the output of the call `result` describes.
    pub(crate) fn of(
        result: &'a toolshed_host::CallResult,
        output: &'a toolshed_core::ToolOutput,
    ) -> Self {
        Self {
            call_id: &result.call_id.0,
            plugin_id: result.plugin_id.as_deref(),
            is_error: output.is_error,
            content: &output.content,
            structured: output.structured.as_ref(),
            duration_ms: u64::try_from(result.duration.as_millis()).unwrap_or(u64::MAX),
        }
    }
}

/// A call started as a job (`async: true`).
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct JobStarted {
    /// The job.
    pub job: Job,
    /// Its URL, also in the `Location` header.
    pub location: String,
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use toolshed_core::{CallId, ToolOutput};

    use super::CallResult;

    /// The REST reply of a call and the result a job records of it are one shape.
    #[test]
    fn a_calls_reply_is_what_a_job_records() {
        let mut output = ToolOutput::text("hello");
        output.structured = Some(serde_json::json!({"n": 1}));
        let result = toolshed_host::CallResult {
            call_id: CallId("c-1".into()),
            plugin_id: Some("system.util".into()),
            result: Ok(output.clone()),
            duration: Duration::from_millis(7),
        };
        for output in [output, ToolOutput::text("failed").into_error()] {
            assert_eq!(
                serde_json::to_string(&CallResult::of(&result, &output)).unwrap(),
                serde_json::to_string(&toolshed_host::jobs::output_json(&result, &output)).unwrap()
            );
        }
    }
}
