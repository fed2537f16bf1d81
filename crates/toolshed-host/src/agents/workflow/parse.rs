//! From text to a [`Workflow`]: the file shape (serde, unknown keys refused), one kind per
//! step, and reading a directory of workflow files.

use super::Failure;
use std::fmt;
use std::marker::PhantomData;
use std::path::Path;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, de::Error as _};
use serde_json::Value;

use super::{
    Condition, Format, Input, InputType, MAX_FILE_BYTES, MAX_FILES, Op, Step, StepKind, Workflow,
    WorkflowError, is_id, is_name,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkflow {
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    inputs: Option<Ordered<RawInput>>,
    steps: Vec<RawStep>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInput {
    #[serde(default, rename = "type")]
    ty: Option<InputType>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default, deserialize_with = "present")]
    default: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    id: String,
    #[serde(default)]
    tool: Option<String>,
    #[serde(default)]
    args: Option<Value>,
    #[serde(default)]
    agent: Option<Value>,
    #[serde(default)]
    for_each: Option<Value>,
    #[serde(default, rename = "as")]
    var: Option<String>,
    #[serde(default, rename = "do")]
    body: Option<Vec<RawStep>>,
    #[serde(default, rename = "if")]
    cond: Option<RawCondition>,
    #[serde(default)]
    then: Option<Vec<RawStep>>,
    #[serde(default, rename = "else")]
    otherwise: Option<Vec<RawStep>>,
    #[serde(default, deserialize_with = "present")]
    output: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCondition {
    #[serde(rename = "ref")]
    reference: String,
    op: Op,
    #[serde(default, deserialize_with = "present")]
    value: Option<Value>,
}

/// A present key is `Some`, even when its value is null.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// A map kept in the order written, a repeated key refused.
struct Ordered<T>(Vec<(String, T)>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Ordered<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Ordered<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of name -> declaration")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out: Vec<(String, T)> = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    if out.iter().any(|(k, _)| *k == key) {
                        return Err(A::Error::custom(format!(
                            "`{key}` is declared twice; keep one"
                        )));
                    }
                    let value = map.next_value::<T>()?;
                    out.push((key, value));
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(V(PhantomData))
    }
}

pub(super) fn parse(name: &str, text: &str, format: Format) -> Result<Workflow, WorkflowError> {
    let shape = |path: String, message: String| {
        let mut message = message.trim().replace('\n', " ");
        // serde_yaml_ng puts the path first itself: say it once.
        if let Some((head, rest)) = message.split_once(": ")
            && !head.contains(' ')
            && path.starts_with(head)
        {
            message = rest.to_string();
        }
        WorkflowError::Parse {
            workflow: name.to_string(),
            path: if path == "." || path.is_empty() {
                "(top level)".to_string()
            } else {
                path
            },
            message,
        }
    };
    let raw: RawWorkflow = match format {
        Format::Json => {
            let mut de = serde_json::Deserializer::from_str(text);
            let raw = serde_path_to_error::deserialize(&mut de)
                .map_err(|e| shape(e.path().to_string(), e.into_inner().to_string()))?;
            de.end()
                .map_err(|e| shape(String::new(), format!("{e}; one JSON object per file")))?;
            raw
        }
        Format::Yaml => {
            serde_path_to_error::deserialize(serde_yaml_ng::Deserializer::from_str(text))
                .map_err(|e| shape(e.path().to_string(), e.into_inner().to_string()))?
        }
    };
    let invalid = |path: String, message: String| WorkflowError::Invalid {
        workflow: name.to_string(),
        path,
        message,
    };
    let mut inputs = Vec::new();
    for (input, raw) in raw.inputs.map(|o| o.0).unwrap_or_default() {
        inputs.push(Input {
            required: raw.default.is_none(),
            name: input,
            ty: raw.ty,
            description: raw.description,
            default: raw.default,
        });
    }
    if raw.steps.is_empty() {
        return Err(invalid(
            "steps".to_string(),
            "the list is empty; a workflow needs at least one step, e.g. \
             `- {id: read, tool: workspace_read, args: {path: README.md}}`"
                .to_string(),
        ));
    }
    Ok(Workflow {
        name: name.to_string(),
        description: raw.description,
        inputs,
        steps: convert_steps(raw.steps, "steps", &invalid)?,
    })
}

type Invalid<'a> = &'a dyn Fn(String, String) -> WorkflowError;

fn convert_steps(
    raw: Vec<RawStep>,
    base: &str,
    invalid: Invalid,
) -> Result<Vec<Step>, WorkflowError> {
    raw.into_iter()
        .enumerate()
        .map(|(i, step)| convert_step(step, format!("{base}[{i}]"), invalid))
        .collect()
}

fn convert_step(raw: RawStep, path: String, invalid: Invalid) -> Result<Step, WorkflowError> {
    let id = raw.id;
    if !is_id(&id) {
        return Err(invalid(
            format!("{path}.id"),
            format!(
                "`{id}` is not a valid step id; use lowercase letters, digits and `_`, \
                 starting with a letter, at most 64 characters, e.g. `{}`",
                suggest_id(&id)
            ),
        ));
    }
    let kinds: Vec<&str> = [
        ("tool", raw.tool.is_some()),
        ("agent", raw.agent.is_some()),
        ("for_each", raw.for_each.is_some()),
        ("if", raw.cond.is_some()),
        ("output", raw.output.is_some()),
    ]
    .into_iter()
    .filter_map(|(k, present)| present.then_some(k))
    .collect();
    let kind = match kinds.as_slice() {
        [kind] => *kind,
        [] => {
            return Err(invalid(
                path,
                format!(
                    "step `{id}` does nothing: give it exactly one of `tool` (with `args`), \
                     `agent`, `for_each` (with `do`), `if` (with `then`) or `output`"
                ),
            ));
        }
        [.., last] => {
            let listed = kinds[..kinds.len() - 1]
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ");
            return Err(invalid(
                path,
                format!(
                    "step `{id}` has both {listed} and `{last}`; a step is exactly one of \
                     tool, agent, for_each, if or output — split it into separate steps"
                ),
            ));
        }
    };
    let companions = [
        ("args", raw.args.is_some(), "tool"),
        ("as", raw.var.is_some(), "for_each"),
        ("do", raw.body.is_some(), "for_each"),
        ("then", raw.then.is_some(), "if"),
        ("else", raw.otherwise.is_some(), "if"),
    ];
    for (key, present, owner) in companions {
        if present && owner != kind {
            return Err(invalid(
                format!("{path}.{key}"),
                format!(
                    "`{key}` belongs to {} `{owner}` step, but step `{id}` is {} `{kind}` \
                     step; remove `{key}` or make it a separate `{owner}` step",
                    article(owner),
                    article(kind)
                ),
            ));
        }
    }
    let step_kind = if let Some(tool) = raw.tool {
        let plain = !tool.is_empty()
            && tool
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':' | '/'));
        if !plain {
            return Err(invalid(
                format!("{path}.tool"),
                format!(
                    "`{tool}` is not a tool name; write the tool's fixed name, e.g. \
                     `workspace_read` (references belong in `args`)"
                ),
            ));
        }
        let args = raw
            .args
            .unwrap_or_else(|| Value::Object(Default::default()));
        if !args.is_object() {
            return Err(invalid(
                format!("{path}.args"),
                format!(
                    "is {}; `args` is an object of argument name -> value, e.g. \
                     `{{path: \"${{file}}\"}}`",
                    super::describe(&args)
                ),
            ));
        }
        StepKind::Tool { tool, args }
    } else if let Some(spec) = raw.agent {
        let task_ok = spec
            .get("task")
            .and_then(Value::as_str)
            .is_some_and(|t| !t.trim().is_empty());
        if !task_ok {
            return Err(invalid(
                format!("{path}.agent"),
                format!(
                    "is {}; `agent` is an object with a non-empty string `task`, e.g. \
                     `{{task: \"Summarise ${{steps.read.output}}\", preset: reviewer}}`",
                    super::describe(&spec)
                ),
            ));
        }
        StepKind::Agent { spec }
    } else if let Some(over) = raw.for_each {
        let Value::String(over) = over else {
            return Err(invalid(
                format!("{path}.for_each"),
                format!(
                    "is {}; `for_each` takes one reference to an array as a string, e.g. \
                     `\"${{inputs.files}}\"`",
                    super::describe(&over)
                ),
            ));
        };
        let body = match raw.body {
            Some(body) if !body.is_empty() => body,
            _ => {
                return Err(invalid(
                    format!("{path}.do"),
                    format!(
                        "loop `{id}` needs a non-empty `do:` list of the steps to run for \
                         each item"
                    ),
                ));
            }
        };
        StepKind::ForEach {
            over,
            var: raw.var.unwrap_or_else(|| "item".to_string()),
            body: convert_steps(body, &format!("{path}.do"), invalid)?,
        }
    } else if let Some(cond) = raw.cond {
        let Some(then) = raw.then else {
            return Err(invalid(
                format!("{path}.then"),
                format!(
                    "`if` step `{id}` needs a `then:` list of the steps to run when the \
                     condition holds (and optionally `else:`)"
                ),
            ));
        };
        StepKind::If {
            cond: Condition {
                reference: cond.reference,
                op: cond.op,
                value: cond.value,
            },
            then: convert_steps(then, &format!("{path}.then"), invalid)?,
            otherwise: convert_steps(
                raw.otherwise.unwrap_or_default(),
                &format!("{path}.else"),
                invalid,
            )?,
        }
    } else {
        StepKind::Output {
            value: raw.output.unwrap_or(Value::Null),
        }
    };
    Ok(Step {
        id,
        path,
        kind: step_kind,
    })
}

fn article(kind: &str) -> &'static str {
    if kind.starts_with(['a', 'i', 'o']) {
        "an"
    } else {
        "a"
    }
}

/// A valid id close to an invalid one, for the message.
fn suggest_id(id: &str) -> String {
    let mut out: String = id
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9' | '_') => c,
            _ => '_',
        })
        .collect();
    if !out.starts_with(|c: char| c.is_ascii_lowercase()) {
        out.insert_str(0, "s_");
    }
    out.chars().take(64).collect()
}

/// Reads the workflows in `dir` (`.toolshed/workflows`): every `NAME.json`, `NAME.yaml` and
/// `NAME.yml` whose `NAME` is `^[a-z0-9][a-z0-9_-]{0,63}$` (other files are ignored), in
/// file-name order, at most [`MAX_FILES`] of them (the rest are listed with an error), each
/// at most [`MAX_FILE_BYTES`]. A missing directory holds no workflows. Files are read with
/// [`toolshed_ops::read_beneath`]: a link is refused, never followed. Each is parsed and
/// checked ([`Workflow::check`]). Blocking (std::fs).
pub(crate) fn load_dir(dir: &Path) -> Vec<(String, Result<Workflow, WorkflowError>)> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot list workflows");
            return Vec::new();
        }
    };
    let mut files: Vec<(String, String, Format)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let file = entry.file_name().into_string().ok()?;
            let (name, ext) = file.rsplit_once('.')?;
            let format = Format::from_extension(ext)?;
            is_name(name).then(|| (name.to_string(), file.clone(), format))
        })
        .collect();
    files.sort_by(|a, b| a.1.cmp(&b.1));
    let mut out: Vec<(String, Result<Workflow, WorkflowError>)> = Vec::new();
    let mut seen: Vec<(String, String)> = Vec::new();
    for (i, (name, file, format)) in files.into_iter().enumerate() {
        let refuse = |message: String| WorkflowError::File {
            workflow: name.clone(),
            file: file.clone(),
            message,
        };
        let result = if i >= MAX_FILES {
            Err(refuse(format!(
                "not loaded: a directory holds at most {MAX_FILES} workflow files; merge or \
                 remove some"
            )))
        } else if let Some((_, first)) = seen.iter().find(|(n, _)| *n == name) {
            Err(refuse(format!(
                "workflow `{name}` is also declared by {first}; keep one of the two files"
            )))
        } else {
            seen.push((name.clone(), file.clone()));
            read(dir, &file)
                .map_err(|e| refuse(e.0))
                .and_then(|text| Workflow::parse(&name, &text, format))
                .and_then(|workflow| workflow.check().map(|()| workflow))
        };
        out.push((name, result));
    }
    out
}

fn read(dir: &Path, file: &str) -> Result<String, Failure> {
    let bytes = toolshed_ops::read_beneath(dir, Path::new(file), MAX_FILE_BYTES).map_err(|e| {
        if e.kind() == std::io::ErrorKind::InvalidData {
            format!(
                "{e}: a workflow file may be at most {MAX_FILE_BYTES} bytes (256 KiB); split \
                 it into smaller workflows"
            )
        } else {
            format!("cannot read: {e}")
        }
    })?;
    Ok(String::from_utf8(bytes).map_err(|_| "is not UTF-8 text; save it as UTF-8".to_string())?)
}
