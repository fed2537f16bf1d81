//! Running a checked workflow over a [`StepRunner`] (the host's call pipeline).

use super::Failure;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use serde::Serialize;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::template::{self, Reference, Segment};
use super::{
    Condition, MAX_LOOP_ITEMS, MAX_RUN_STEPS, Op, Step, StepKind, Workflow, WorkflowError,
    describe, did_you_mean,
};

/// What runs the steps that leave the workflow: the host's pipeline.
#[async_trait::async_trait]
pub(crate) trait StepRunner: Send + Sync {
    /// Runs one tool call through the pipeline; Ok(output as JSON) or Err(message the
    /// model/user reads).
    async fn call_tool(&self, step_id: &str, tool: &str, args: Value) -> Result<Value, Failure>;
    /// Runs a subagent step (`spec`: the agent object with references resolved).
    async fn run_agent(&self, step_id: &str, spec: Value) -> Result<Value, Failure>;
    /// Told when a step starts (for progress): its id and how many steps ran so far.
    fn step_started(&self, _step_id: &str, _done: u64) {}
}

/// What a run did: its result and every step started, in the order they started.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct RunReport {
    pub(crate) output: Value,
    pub(crate) steps: Vec<StepRecord>,
}

/// One step that ran (once per iteration inside a loop).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct StepRecord {
    pub(crate) id: String,
    /// The step's place in the document, with the loop iterations it ran in:
    /// `steps[1].do[0] (each #2)`.
    pub(crate) path: String,
    pub(crate) ok: bool,
    pub(crate) duration_ms: u64,
    /// The first 200 characters of the output (or of the error).
    pub(crate) summary: String,
}

/// Characters of a step's output kept in its [`StepRecord::summary`].
const SUMMARY_CHARS: usize = 200;

/// Checks the workflow ([`Workflow::check`]) and the inputs (declared types, defaults
/// applied), then runs the steps in order, stopping at the first failure or on `cancel`.
pub(crate) async fn run(
    workflow: &Workflow,
    inputs: Value,
    runner: &dyn StepRunner,
    cancel: &CancellationToken,
) -> Result<RunReport, WorkflowError> {
    workflow.check()?;
    let inputs = bind_inputs(workflow, inputs)?;
    let mut exec = Exec {
        runner,
        cancel,
        inputs,
        outputs: HashMap::new(),
        frames: Vec::new(),
        records: Vec::new(),
        started: 0,
        result: None,
    };
    let last = exec.steps(&workflow.steps).await;
    let report = RunReport {
        output: match &last {
            Ok(last) => exec.result.take().unwrap_or_else(|| last.clone()),
            Err(_) => Value::Null,
        },
        steps: exec.records,
    };
    match last {
        Ok(_) => Ok(report),
        Err(stop) => Err(stop.into_error(&workflow.name, report)),
    }
}

/// The given inputs checked against the declared ones, defaults filled in.
fn bind_inputs(wf: &Workflow, given: Value) -> Result<Map<String, Value>, WorkflowError> {
    let fail = |path: String, message: String| WorkflowError::Input {
        workflow: wf.name.clone(),
        path,
        message,
    };
    let names: Vec<&str> = wf.inputs.iter().map(|i| i.name.as_str()).collect();
    let declared = if names.is_empty() {
        "it declares none".to_string()
    } else {
        format!("declared: {}", names.join(", "))
    };
    let mut given = match given {
        Value::Null => Map::new(),
        Value::Object(map) => map,
        other => {
            return Err(fail(
                "inputs".to_string(),
                format!(
                    "are {}; pass an object of input name -> value ({declared})",
                    describe(&other)
                ),
            ));
        }
    };
    if let Some(unknown) = given.keys().find(|k| !names.contains(&k.as_str())) {
        return Err(fail(
            template::key_path("inputs", unknown),
            format!(
                "the workflow has no input `{unknown}` ({declared}); remove it or fix the \
                 name{}",
                did_you_mean(unknown, names.iter().copied())
            ),
        ));
    }
    let mut bound = Map::new();
    for input in &wf.inputs {
        let path = format!("inputs.{}", input.name);
        let value = match (given.remove(&input.name), &input.default) {
            (Some(v), default) if v.is_null() && default.as_ref().is_some_and(Value::is_null) => v,
            (Some(v), _) => {
                if let Some(ty) = input.ty
                    && !ty.accepts(&v)
                {
                    return Err(fail(
                        path,
                        format!(
                            "expected {} {}, got {}; pass e.g. {}",
                            if ty.name().starts_with(['a', 'i', 'o']) {
                                "an"
                            } else {
                                "a"
                            },
                            ty.name(),
                            describe(&v),
                            ty.example()
                        ),
                    ));
                }
                v
            }
            (None, Some(default)) => default.clone(),
            (None, None) => {
                let what = input
                    .description
                    .as_deref()
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default();
                let example = input.ty.map_or("...", |t| t.example());
                return Err(fail(
                    path,
                    format!(
                        "the required input is missing{what}; pass it, e.g. {{\"{}\": {example}}}",
                        input.name
                    ),
                ));
            }
        };
        bound.insert(input.name.clone(), value);
    }
    Ok(bound)
}

/// Why a run stopped.
struct Stop {
    path: String,
    step: String,
    message: String,
    cancelled: bool,
}

impl Stop {
    fn into_error(self, workflow: &str, report: RunReport) -> WorkflowError {
        let report = Box::new(report);
        if self.cancelled {
            WorkflowError::Cancelled {
                workflow: workflow.to_string(),
                path: self.path,
                step: self.step,
                report,
            }
        } else {
            WorkflowError::StepFailed {
                workflow: workflow.to_string(),
                path: self.path,
                step: self.step,
                message: self.message,
                report,
            }
        }
    }
}

/// One loop iteration in progress.
struct Frame<'a> {
    var: &'a str,
    loop_id: &'a str,
    item: Value,
    index: usize,
}

struct Exec<'a> {
    runner: &'a dyn StepRunner,
    cancel: &'a CancellationToken,
    inputs: Map<String, Value>,
    /// The latest output of every step that finished (inside a loop: this iteration's).
    outputs: HashMap<&'a str, Value>,
    frames: Vec<Frame<'a>>,
    records: Vec<StepRecord>,
    started: u64,
    /// The value of the last `output` step.
    result: Option<Value>,
}

type Boxed<'f, T> = Pin<Box<dyn Future<Output = T> + Send + 'f>>;

impl<'a> Exec<'a> {
    /// Runs `steps` in order; the output of the last one (null for none).
    fn steps<'f>(&'f mut self, steps: &'a [Step]) -> Boxed<'f, Result<Value, Stop>> {
        Box::pin(async move {
            let mut last = Value::Null;
            for step in steps {
                last = self.step(step).await?;
            }
            Ok(last)
        })
    }

    /// The step's path with the iterations it runs in.
    fn place(&self, step: &Step) -> String {
        if self.frames.is_empty() {
            return step.path.clone();
        }
        let iterations: Vec<String> = self
            .frames
            .iter()
            .map(|f| format!("{} #{}", f.loop_id, f.index))
            .collect();
        format!("{} ({})", step.path, iterations.join(", "))
    }

    async fn step(&mut self, step: &'a Step) -> Result<Value, Stop> {
        let path = self.place(step);
        let stop = |message: String, cancelled: bool| Stop {
            path: path.clone(),
            step: step.id.clone(),
            message,
            cancelled,
        };
        if self.cancel.is_cancelled() {
            return Err(stop("cancelled".to_string(), true));
        }
        if self.started >= MAX_RUN_STEPS {
            return Err(stop(
                format!(
                    "the run reached its limit of {MAX_RUN_STEPS} steps executed; loop over \
                     fewer items or split the workflow"
                ),
                false,
            ));
        }
        self.runner.step_started(&step.id, self.started);
        self.started += 1;
        let slot = self.records.len();
        self.records.push(StepRecord {
            id: step.id.clone(),
            path: path.clone(),
            ok: false,
            duration_ms: 0,
            summary: String::new(),
        });
        let start = Instant::now();
        let result = self.kind(step, &stop).await;
        let record = &mut self.records[slot];
        record.duration_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
        match &result {
            Ok(value) => {
                record.ok = true;
                record.summary = super::cut(&template::text_of(value), SUMMARY_CHARS);
                self.outputs.insert(&step.id, value.clone());
            }
            Err(e) if e.step == step.id => {
                record.summary = super::cut(&e.message, SUMMARY_CHARS);
            }
            Err(e) => {
                let what = if e.cancelled {
                    "cancelled at"
                } else {
                    "failed at"
                };
                record.summary = super::cut(&format!("{what} step `{}`", e.step), SUMMARY_CHARS);
            }
        }
        result
    }

    async fn kind(
        &mut self,
        step: &'a Step,
        stop: &(dyn Fn(String, bool) -> Stop + Send + Sync),
    ) -> Result<Value, Stop> {
        match &step.kind {
            StepKind::Tool { tool, args } => {
                let args = self.render(args, &format!("{}.args", step.path), stop)?;
                let call = self.runner.call_tool(&step.id, tool, args);
                self.outside(call, stop).await
            }
            StepKind::Agent { spec } => {
                let spec = self.render(spec, &format!("{}.agent", step.path), stop)?;
                let call = self.runner.run_agent(&step.id, spec);
                self.outside(call, stop).await
            }
            StepKind::Output { value } => {
                let value = self.render(value, &format!("{}.output", step.path), stop)?;
                self.result = Some(value.clone());
                Ok(value)
            }
            StepKind::ForEach { over, var, body } => {
                let at = format!("{}.for_each", step.path);
                let items = match self.render(&Value::String(over.clone()), &at, stop)? {
                    Value::Array(items) => items,
                    other => {
                        return Err(stop(
                            format!(
                                "{at}: `{over}` is {}, not an array; `for_each` loops over an \
                                 array",
                                describe(&other)
                            ),
                            false,
                        ));
                    }
                };
                if items.len() > MAX_LOOP_ITEMS {
                    return Err(stop(
                        format!(
                            "{at}: `{over}` has {} items; a loop runs over at most \
                             {MAX_LOOP_ITEMS} — filter or split the list first",
                            items.len()
                        ),
                        false,
                    ));
                }
                let mut outputs = Vec::with_capacity(items.len());
                for (index, item) in items.into_iter().enumerate() {
                    self.frames.push(Frame {
                        var,
                        loop_id: &step.id,
                        item,
                        index,
                    });
                    let last = self.steps(body).await;
                    self.frames.pop();
                    outputs.push(last?);
                }
                Ok(Value::Array(outputs))
            }
            StepKind::If {
                cond,
                then,
                otherwise,
            } => {
                let holds = self.holds(cond, &format!("{}.if", step.path), stop)?;
                self.steps(if holds { then } else { otherwise }).await
            }
        }
    }

    /// Awaits a call to the runner, or the cancellation, whichever comes first.
    async fn outside(
        &self,
        call: impl Future<Output = Result<Value, Failure>> + Send,
        stop: &(dyn Fn(String, bool) -> Stop + Send + Sync),
    ) -> Result<Value, Stop> {
        tokio::select! {
            biased;
            () = self.cancel.cancelled() => Err(stop("cancelled".to_string(), true)),
            result = call => result.map_err(|message| stop(message.to_string(), false)),
        }
    }

    /// `value` with its references resolved.
    fn render(
        &self,
        value: &Value,
        path: &str,
        stop: &dyn Fn(String, bool) -> Stop,
    ) -> Result<Value, Stop> {
        template::render(value, path, &mut |r| self.resolve(r, false))
            .map_err(|(at, message)| stop(format!("{at}: {message}"), false))
    }

    /// A reference's value; with `lenient`, a missing field or item is null.
    fn resolve(&self, r: &Reference, lenient: bool) -> Result<Value, Failure> {
        let name = |s: &[Segment]| s.first().and_then(Segment::field).unwrap_or("").to_string();
        let (root, base, rest): (Option<&Value>, String, &[Segment]) = match r.head.as_str() {
            "inputs" => {
                let input = name(&r.segments);
                (
                    self.inputs.get(&input),
                    format!("inputs.{input}"),
                    r.segments.get(1..).unwrap_or_default(),
                )
            }
            "steps" => {
                let id = name(&r.segments);
                (
                    self.outputs.get(id.as_str()),
                    format!("steps.{id}.output"),
                    r.segments.get(2..).unwrap_or_default(),
                )
            }
            "index" => {
                let index = self.frames.last().map(|f| Value::from(f.index));
                return Ok(index.ok_or_else(|| format!("`{}` is used outside a loop", r.text))?);
            }
            var => (
                self.frames
                    .iter()
                    .rev()
                    .find(|f| f.var == var)
                    .map(|f| &f.item),
                var.to_string(),
                r.segments.as_slice(),
            ),
        };
        let Some(root) = root else {
            return Err(format!("`{}`: `{base}` has no value in this run", r.text).into());
        };
        match template::lookup(root, &base, rest) {
            Ok(value) => Ok(value.clone()),
            Err(_) if lenient => Ok(Value::Null),
            Err(message) => Err(format!("`{}`: {message}", r.text).into()),
        }
    }

    /// Whether an `if` condition holds.
    fn holds(
        &self,
        cond: &Condition,
        path: &str,
        stop: &dyn Fn(String, bool) -> Stop,
    ) -> Result<bool, Stop> {
        let fail = |message: String| stop(format!("{path}: {message}"), false);
        let left = template::render_str(&cond.reference, &mut |r| self.resolve(r, true))
            .map_err(|e| fail(e.0))?;
        let right = match &cond.value {
            Some(v) => Some(
                template::render(v, &format!("{path}.value"), &mut |r| self.resolve(r, false))
                    .map_err(|(at, m)| stop(format!("{at}: {m}"), false))?,
            ),
            None => None,
        };
        let right = right.unwrap_or(Value::Null);
        Ok(match cond.op {
            Op::Exists => !left.is_null(),
            Op::NotEmpty => !is_empty(&left),
            Op::Truthy => {
                !(is_empty(&left) || left == Value::Bool(false) || left.as_f64() == Some(0.0))
            }
            Op::Equals => same(&left, &right),
            Op::NotEquals => !same(&left, &right),
            Op::Contains => match &left {
                Value::String(s) => s.contains(template::text_of(&right).as_str()),
                Value::Array(items) => items.iter().any(|i| same(i, &right)),
                Value::Object(map) => map.contains_key(template::text_of(&right).as_str()),
                _ => false,
            },
            Op::Gt | Op::Lt => {
                let number = |v: &Value, side: &str| {
                    v.as_f64().ok_or_else(|| {
                        fail(format!(
                            "op `{}` compares numbers, and the {side} is {}",
                            cond.op.name(),
                            describe(v)
                        ))
                    })
                };
                let (l, r) = (number(&left, "`ref`")?, number(&right, "`value`")?);
                if cond.op == Op::Gt { l > r } else { l < r }
            }
        })
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// JSON equality, numbers compared by value (`1` equals `1.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}
