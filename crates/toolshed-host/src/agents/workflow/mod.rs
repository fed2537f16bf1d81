//! Workflows: small, declared graphs of steps — tool calls, subagent runs, loops and
//! conditions — that the host runs through the one call pipeline (policy, approvals,
//! audit), step by step.
//!
//! A workflow is a file `.toolshed/workflows/NAME.json`, `NAME.yaml` or `NAME.yml`
//! ([`load_dir`]; `NAME` is `^[a-z0-9][a-z0-9_-]{0,63}$`, other files are ignored):
//!
//! ```yaml
//! description: Summarise every changed file   # optional
//! inputs:                                     # optional; required unless `default` is given
//!   files: {type: array, description: paths to read}
//! steps:
//!   - id: list                                # ^[a-z][a-z0-9_]{0,63}$, unique in the workflow
//!     tool: workspace_list                    # a tool call: `tool` (a fixed name) + `args`
//!     args: {path: "."}
//!   - id: each
//!     for_each: "${inputs.files}"             # one reference to an array (at most 1000 items)
//!     as: file                                # the loop variable (default `item`); also `${index}`
//!     do:
//!       - id: read
//!         tool: workspace_read
//!         args: {path: "${file}"}
//!   - id: check
//!     if: {ref: "${steps.list.output}", op: not_empty}
//!     then: [{id: note, output: "some"}]
//!     else: [{id: none, output: "none"}]      # optional
//!   - id: summary
//!     agent: {task: "Summarise ${steps.each.output}", preset: reviewer}
//!   - id: done
//!     output: {report: "${steps.summary.output}"}
//! ```
//!
//! A step is exactly one of `tool` (+ `args`), `agent`, `for_each` (+ `as`, `do`), `if`
//! (+ `then`, `else`) or `output`. Its output: a tool or agent step's is what the runner
//! returns; a `for_each` step's is the array of its last nested step's output per
//! iteration; an `if` step's is the output of the last step of the branch taken (null if
//! none); an `output` step's is its resolved value. The workflow's result is the value of
//! the last `output` step that ran, or else the output of the last top-level step.
//!
//! Conditions: `if: {ref, op, value?}` with `op` one of `equals`, `not_equals`,
//! `contains` (a substring, an array element or an object key), `gt`, `lt` (numbers) —
//! these take a `value` — and `exists` (not null), `not_empty` (not null, `""`, `[]` or
//! `{}`), `truthy` (also not `false` or `0`). A condition's `ref` that names a missing
//! field is null rather than an error.
//!
//! # References
//!
//! `${path}` in any string of `args`, `agent`, `output`, `for_each` and a condition, where
//! `path` is `inputs.NAME`, `steps.ID.output`, a loop variable or `index`, followed by
//! `.field` and `[N]` segments (`${steps.read.output.items[0].name}`). A string that is
//! exactly one reference takes the referenced JSON value as is; a reference inside a longer
//! string is replaced by its text (a string as it is, any other value as compact JSON).
//! `$${` is a literal `${`. A field or index that does not exist fails the step.
//!
//! # Which steps a reference may name (checked before anything runs)
//!
//! The rule is lexical, like variables in a block-structured language: a step sees the
//! steps that finished before it on every path, which are
//!
//! * its earlier siblings in the same list, and
//! * everything its enclosing `for_each`/`if` step sees (that step's earlier siblings,
//!   and so on outwards).
//!
//! Not visible: the step itself and an enclosing step (they have not finished: a cycle),
//! any later step (a forward reference), and the nested steps of an earlier loop or
//! branch (they ran many times, or maybe not at all: name the loop or `if` step instead,
//! whose output collects them). A loop variable and `${index}` exist only inside their
//! loop's `do` (the innermost loop's index); nested loops may not reuse a variable name.
//! Inputs must be declared. The first bad reference in document order is reported with its
//! place in the document, and the closest name when one is within edit distance 2.
//!
//! # Limits
//!
//! At most [`MAX_STEPS`] steps in all, nested at most [`MAX_DEPTH`] deep (checked before
//! running); a loop over at most [`MAX_LOOP_ITEMS`] items and at most [`MAX_RUN_STEPS`]
//! steps executed in one run (checked while running).

mod check;
mod parse;
mod run;
mod template;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_run;

use serde::Serialize;
use serde_json::Value;

pub(crate) use parse::load_dir;

/// Why a step failed, or a reference did not resolve: the message a model or a person
/// reads, naming the value and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Failure(pub(crate) String);

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Self(message)
    }
}

impl From<&str> for Failure {
    fn from(message: &str) -> Self {
        Self(message.to_string())
    }
}
pub(crate) use run::{RunReport, StepRunner, run};

/// Steps in one workflow, counting nested ones.
pub(crate) const MAX_STEPS: usize = 200;
/// Levels of steps: a top-level step is at depth 1, a step in its `do`/`then` at 2.
pub(crate) const MAX_DEPTH: usize = 8;
/// Items one `for_each` may loop over.
pub(crate) const MAX_LOOP_ITEMS: usize = 1000;
/// Steps one run may execute, counting every iteration.
pub(crate) const MAX_RUN_STEPS: u64 = 10_000;
/// Size of one workflow file.
pub(crate) const MAX_FILE_BYTES: u64 = 256 * 1024;
/// Workflow files read from one directory.
pub(crate) const MAX_FILES: usize = 200;

/// The syntax of a workflow's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Json,
    Yaml,
}

impl Format {
    /// The format of a file extension (`json`, `yaml`, `yml`), if it is one.
    pub(crate) fn from_extension(ext: &str) -> Option<Format> {
        match ext {
            "json" => Some(Format::Json),
            "yaml" | "yml" => Some(Format::Yaml),
            _ => None,
        }
    }
}

/// A parsed workflow ([`Workflow::parse`]); [`Workflow::check`] says whether it can run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Workflow {
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    /// In the order they are declared.
    pub(crate) inputs: Vec<Input>,
    pub(crate) steps: Vec<Step>,
}

/// One declared input.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Input {
    pub(crate) name: String,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub(crate) ty: Option<InputType>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) description: Option<String>,
    /// `Some` makes the input optional (`Some(Value::Null)` for `default: null`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) default: Option<Value>,
    pub(crate) required: bool,
}

/// The JSON type an input must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum InputType {
    String,
    Number,
    Integer,
    Boolean,
    Array,
    Object,
}

impl InputType {
    pub(crate) fn name(self) -> &'static str {
        match self {
            InputType::String => "string",
            InputType::Number => "number",
            InputType::Integer => "integer",
            InputType::Boolean => "boolean",
            InputType::Array => "array",
            InputType::Object => "object",
        }
    }

    /// Whether `value` has this type (an integer is a number without a fraction).
    pub(crate) fn accepts(self, value: &Value) -> bool {
        match self {
            InputType::String => value.is_string(),
            InputType::Number => value.is_number(),
            InputType::Integer => {
                value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            InputType::Boolean => value.is_boolean(),
            InputType::Array => value.is_array(),
            InputType::Object => value.is_object(),
        }
    }

    /// An example value, for messages.
    pub(crate) fn example(self) -> &'static str {
        match self {
            InputType::String => "\"text\"",
            InputType::Number => "1.5",
            InputType::Integer => "3",
            InputType::Boolean => "true",
            InputType::Array => "[\"a\", \"b\"]",
            InputType::Object => "{\"key\": \"value\"}",
        }
    }
}

/// One step; `path` is its place in the document (`steps[2].do[0]`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Step {
    pub(crate) id: String,
    pub(crate) path: String,
    pub(crate) kind: StepKind,
}

/// What a step does.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StepKind {
    /// A tool call; `args` is an object whose strings may hold references.
    Tool { tool: String, args: Value },
    /// A subagent run; `spec` is the agent object (with a string `task`).
    Agent { spec: Value },
    /// A loop: `over` is one reference to an array, `var` the loop variable.
    ForEach {
        over: String,
        var: String,
        body: Vec<Step>,
    },
    If {
        cond: Condition,
        then: Vec<Step>,
        otherwise: Vec<Step>,
    },
    /// The workflow's result value.
    Output { value: Value },
}

/// An `if` step's condition.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Condition {
    /// A string with references (usually exactly one).
    pub(crate) reference: String,
    pub(crate) op: Op,
    /// For the ops that compare; may hold references.
    pub(crate) value: Option<Value>,
}

/// A condition's test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Op {
    Equals,
    NotEquals,
    Exists,
    NotEmpty,
    Truthy,
    Contains,
    Gt,
    Lt,
}

impl Op {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Op::Equals => "equals",
            Op::NotEquals => "not_equals",
            Op::Exists => "exists",
            Op::NotEmpty => "not_empty",
            Op::Truthy => "truthy",
            Op::Contains => "contains",
            Op::Gt => "gt",
            Op::Lt => "lt",
        }
    }

    /// Whether the op compares with a `value`.
    pub(crate) fn takes_value(self) -> bool {
        matches!(
            self,
            Op::Equals | Op::NotEquals | Op::Contains | Op::Gt | Op::Lt
        )
    }
}

/// What a listing shows of a workflow.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct WorkflowSummary {
    pub(crate) name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) description: Option<String>,
    pub(crate) inputs: Vec<Input>,
}

impl Workflow {
    /// Parses a workflow's text (`name` is the file name without extension, used in
    /// messages). Structure only: [`Workflow::check`] checks ids, references and limits.
    pub(crate) fn parse(name: &str, text: &str, format: Format) -> Result<Workflow, WorkflowError> {
        parse::parse(name, text, format)
    }

    /// Checks what can be checked before running: unique ids, every reference, limits.
    pub(crate) fn check(&self) -> Result<(), WorkflowError> {
        check::check(self)
    }

    pub(crate) fn summary(&self) -> WorkflowSummary {
        WorkflowSummary {
            name: self.name.clone(),
            description: self.description.clone(),
            inputs: self.inputs.clone(),
        }
    }
}

/// Why a workflow cannot be loaded or run. Every message names the workflow, the place in
/// the document (or the input, or the file) and the offending value, and says what to
/// write instead.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WorkflowError {
    /// The text is not valid JSON/YAML or does not have the shape of a workflow.
    #[error("workflow `{workflow}`: {path}: {message}")]
    Parse {
        workflow: String,
        path: String,
        message: String,
    },
    /// A rule of the language or a limit is broken (ids, step kinds, nesting, ...).
    #[error("workflow `{workflow}`: {path}: {message}")]
    Invalid {
        workflow: String,
        path: String,
        message: String,
    },
    /// A reference that cannot resolve (`reference` is the whole `${...}`).
    #[error("workflow `{workflow}`: {path}: `{reference}` {message}")]
    Reference {
        workflow: String,
        path: String,
        reference: String,
        message: String,
    },
    /// The inputs given to a run do not match the declared ones (`path`: `inputs.NAME`).
    #[error("workflow `{workflow}`: {path}: {message}")]
    Input {
        workflow: String,
        path: String,
        message: String,
    },
    /// A step failed while running; `report` holds what ran, the failed step last.
    #[error("workflow `{workflow}`: {path}: step `{step}` failed: {message}")]
    StepFailed {
        workflow: String,
        path: String,
        step: String,
        message: String,
        report: Box<RunReport>,
    },
    /// The run was cancelled before or during `step`; `report` holds what ran.
    #[error("workflow `{workflow}`: {path}: cancelled before step `{step}` finished")]
    Cancelled {
        workflow: String,
        path: String,
        step: String,
        report: Box<RunReport>,
    },
    /// A workflow file could not be read.
    #[error("workflow `{workflow}`: {file}: {message}")]
    File {
        workflow: String,
        file: String,
        message: String,
    },
}

impl WorkflowError {
    /// What ran before a run stopped, for the errors of a started run.
    pub(crate) fn report(&self) -> Option<&RunReport> {
        match self {
            WorkflowError::StepFailed { report, .. } | WorkflowError::Cancelled { report, .. } => {
                Some(report)
            }
            _ => None,
        }
    }
}

/// Whether `s` is a step id or loop variable: `^[a-z][a-z0-9_]{0,63}$`.
pub(crate) fn is_id(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some('a'..='z'))
        && s.len() <= 64
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'))
}

/// Whether `s` is a workflow (file) name: `^[a-z0-9][a-z0-9_-]{0,63}$`.
pub(crate) fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some('a'..='z' | '0'..='9'))
        && s.len() <= 64
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_' | '-'))
}

/// The candidate closest to `name` within edit distance 2 (the first of equals).
pub(crate) fn closest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .filter(|c| *c != name)
        .map(|c| (toolshed_core::suggest::edit_distance(name, c), c))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// `; did you mean `x`?` when there is a close name, else nothing.
pub(crate) fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> String {
    closest(name, candidates)
        .map(|c| format!("; did you mean `{c}`?"))
        .unwrap_or_default()
}

/// A value shown in a message: compact JSON, cut to about 60 characters.
pub(crate) fn show(value: &Value) -> String {
    let text = value.to_string();
    cut(&text, 60)
}

/// `text` cut to at most `max` characters (with `…` when cut).
pub(crate) fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// What a value is, for messages: `a string ("a.txt")`.
pub(crate) fn describe(value: &Value) -> String {
    let kind = match value {
        Value::Null => return "null".to_string(),
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    format!("{kind} ({})", show(value))
}
