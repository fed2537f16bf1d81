//! The checks before a run: ids, limits, inputs and every reference (the scoping rule is
//! in the module docs).

use super::Failure;
use std::collections::HashMap;

use serde_json::Value;

use super::template::{self, Part, Reference, Segment};
use super::{
    MAX_DEPTH, MAX_STEPS, Op, Step, StepKind, Workflow, WorkflowError, did_you_mean, is_id,
};

/// Where a step is: its place in the document, its position in document order and the
/// step it is nested in.
struct Info<'a> {
    path: &'a str,
    ordinal: usize,
    parent: Option<&'a str>,
}

/// What a step sees: the ids that finished before it, the loops it is in (variable, loop
/// id) and the steps it is nested in.
#[derive(Default)]
struct Scope<'a> {
    visible: Vec<&'a str>,
    loops: Vec<(&'a str, &'a str)>,
    enclosing: Vec<&'a str>,
}

struct Checker<'a> {
    wf: &'a Workflow,
    infos: HashMap<&'a str, Info<'a>>,
    /// Ids in document order, for suggestions.
    ids: Vec<&'a str>,
    /// Every loop variable -> the first loop declaring it (id, path).
    loop_vars: HashMap<&'a str, (&'a str, &'a str)>,
}

pub(super) fn check(wf: &Workflow) -> Result<(), WorkflowError> {
    let mut checker = Checker {
        wf,
        infos: HashMap::new(),
        ids: Vec::new(),
        loop_vars: HashMap::new(),
    };
    checker.collect(&wf.steps, 1, None)?;
    checker.inputs()?;
    checker.walk(&wf.steps, &mut Scope::default())
}

impl<'a> Checker<'a> {
    fn invalid(&self, path: impl Into<String>, message: String) -> WorkflowError {
        WorkflowError::Invalid {
            workflow: self.wf.name.clone(),
            path: path.into(),
            message,
        }
    }

    /// Ids (unique), the step count and the nesting depth, in document order.
    fn collect(
        &mut self,
        steps: &'a [Step],
        depth: usize,
        parent: Option<&'a str>,
    ) -> Result<(), WorkflowError> {
        for step in steps {
            if let Some(first) = self.infos.get(step.id.as_str()) {
                return Err(self.invalid(
                    format!("{}.id", step.path),
                    format!(
                        "`{id}` is already the id of {}; step ids are unique across the \
                         whole workflow — rename this one, e.g. `{id}_2`",
                        first.path,
                        id = step.id
                    ),
                ));
            }
            if self.ids.len() >= MAX_STEPS {
                return Err(self.invalid(
                    step.path.as_str(),
                    format!(
                        "step `{}` is one too many: a workflow has at most {MAX_STEPS} steps, \
                         nested ones included; split it into several workflows",
                        step.id
                    ),
                ));
            }
            if depth > MAX_DEPTH {
                return Err(self.invalid(
                    step.path.as_str(),
                    format!(
                        "step `{}` is nested {depth} levels deep; at most {MAX_DEPTH} levels \
                         of `for_each`/`if` are allowed — flatten the steps or move the inner \
                         ones into a separate workflow",
                        step.id
                    ),
                ));
            }
            self.infos.insert(
                &step.id,
                Info {
                    path: &step.path,
                    ordinal: self.ids.len(),
                    parent,
                },
            );
            self.ids.push(&step.id);
            match &step.kind {
                StepKind::ForEach { var, body, .. } => {
                    self.loop_vars
                        .entry(var.as_str())
                        .or_insert((step.id.as_str(), step.path.as_str()));
                    self.collect(body, depth + 1, Some(&step.id))?;
                }
                StepKind::If {
                    then, otherwise, ..
                } => {
                    self.collect(then, depth + 1, Some(&step.id))?;
                    self.collect(otherwise, depth + 1, Some(&step.id))?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Input names, and defaults of the declared type.
    fn inputs(&self) -> Result<(), WorkflowError> {
        for input in &self.wf.inputs {
            let path = format!("inputs.{}", input.name);
            let mut chars = input.name.chars();
            let valid = chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && input.name.len() <= 64
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err(self.invalid(
                    template::key_path("inputs", &input.name),
                    format!(
                        "`{}` is not a valid input name; use letters, digits and `_`, starting \
                         with a letter, e.g. `files`",
                        input.name
                    ),
                ));
            }
            if let (Some(ty), Some(default)) = (input.ty, &input.default)
                && !default.is_null()
                && !ty.accepts(default)
            {
                return Err(self.invalid(
                    format!("{path}.default"),
                    format!(
                        "is {}, but the input's type is {}; give a default such as {} or \
                         change `type`",
                        super::describe(default),
                        ty.name(),
                        ty.example()
                    ),
                ));
            }
        }
        Ok(())
    }

    fn walk(&self, steps: &'a [Step], scope: &mut Scope<'a>) -> Result<(), WorkflowError> {
        let mark = scope.visible.len();
        for step in steps {
            match &step.kind {
                StepKind::Tool { args, .. } => {
                    self.refs_in(args, &format!("{}.args", step.path), step, scope)?;
                }
                StepKind::Agent { spec } => {
                    self.refs_in(spec, &format!("{}.agent", step.path), step, scope)?;
                }
                StepKind::Output { value } => {
                    self.refs_in(value, &format!("{}.output", step.path), step, scope)?;
                }
                StepKind::ForEach { over, var, body } => {
                    self.for_each(step, over, var, scope)?;
                    scope.enclosing.push(&step.id);
                    scope.loops.push((var, &step.id));
                    self.walk(body, scope)?;
                    scope.loops.pop();
                    scope.enclosing.pop();
                }
                StepKind::If {
                    cond,
                    then,
                    otherwise,
                } => {
                    let path = format!("{}.if", step.path);
                    let ref_path = format!("{path}.ref");
                    let parts = self.template(&cond.reference, &ref_path)?;
                    if !parts.iter().any(|p| matches!(p, Part::Ref(_))) {
                        return Err(self.invalid(
                            ref_path,
                            format!(
                                "`{}` holds no reference, so the condition never changes; write \
                                 what to test, e.g. `${{steps.list.output}}`",
                                cond.reference
                            ),
                        ));
                    }
                    self.refs_in(
                        &Value::String(cond.reference.clone()),
                        &ref_path,
                        step,
                        scope,
                    )?;
                    self.condition_value(&path, cond.op, cond.value.as_ref())?;
                    if let Some(value) = &cond.value {
                        self.refs_in(value, &format!("{path}.value"), step, scope)?;
                    }
                    scope.enclosing.push(&step.id);
                    self.walk(then, scope)?;
                    self.walk(otherwise, scope)?;
                    scope.enclosing.pop();
                }
            }
            scope.visible.push(&step.id);
        }
        scope.visible.truncate(mark);
        Ok(())
    }

    fn for_each(
        &self,
        step: &'a Step,
        over: &str,
        var: &'a str,
        scope: &Scope<'a>,
    ) -> Result<(), WorkflowError> {
        let path = format!("{}.for_each", step.path);
        let parts = self.template(over, &path)?;
        let Some(reference) = template::whole(&parts) else {
            return Err(self.invalid(
                path,
                format!(
                    "`{over}` is not one reference; `for_each` takes exactly one reference to \
                     an array, e.g. `${{inputs.files}}` or `${{steps.list.output.items}}`"
                ),
            ));
        };
        self.reference(reference, &path, step, scope)?;
        if let ("inputs", [Segment::Field(name)]) =
            (reference.head.as_str(), reference.segments.as_slice())
            && let Some(ty) = self
                .wf
                .inputs
                .iter()
                .find(|i| i.name == *name)
                .and_then(|i| i.ty)
            && ty != super::InputType::Array
        {
            return Err(self.invalid(
                path,
                format!(
                    "`{over}` is declared `type: {}`, but `for_each` needs an array; declare \
                     the input `type: array`",
                    ty.name()
                ),
            ));
        }
        let as_path = format!("{}.as", step.path);
        if !is_id(var) {
            return Err(self.invalid(
                as_path,
                format!(
                    "`{var}` is not a valid loop variable; use lowercase letters, digits and \
                     `_`, starting with a letter, e.g. `file`"
                ),
            ));
        }
        if matches!(var, "inputs" | "steps" | "index") {
            return Err(self.invalid(
                as_path,
                format!("`{var}` is a reserved name; name the loop variable e.g. `entry`"),
            ));
        }
        if let Some((_, outer)) = scope.loops.iter().find(|(v, _)| *v == var) {
            return Err(self.invalid(
                as_path,
                format!(
                    "`{var}` is already the variable of the enclosing loop `{outer}`; give \
                     this loop another name with `as:`, e.g. `as: inner_{var}`"
                ),
            ));
        }
        Ok(())
    }

    fn condition_value(
        &self,
        path: &str,
        op: Op,
        value: Option<&Value>,
    ) -> Result<(), WorkflowError> {
        let name = op.name();
        match value {
            None if op.takes_value() => Err(self.invalid(
                path,
                format!("op `{name}` compares with a `value`; add `value: ...`"),
            )),
            Some(_) if !op.takes_value() => Err(self.invalid(
                format!("{path}.value"),
                format!(
                    "op `{name}` takes no `value`; remove it, or use `equals`/`contains` to \
                     compare"
                ),
            )),
            Some(v @ Value::String(s)) if matches!(op, Op::Gt | Op::Lt) && !s.contains("${") => {
                Err(self.invalid(
                    format!("{path}.value"),
                    format!(
                        "op `{name}` compares numbers, and `value` is {}; write a number such \
                         as 10 (or a reference to one)",
                        super::describe(v)
                    ),
                ))
            }
            Some(v) if matches!(op, Op::Gt | Op::Lt) && !(v.is_number() || v.is_string()) => {
                Err(self.invalid(
                    format!("{path}.value"),
                    format!(
                        "op `{name}` compares numbers, and `value` is {}; write a number such \
                         as 10",
                        super::describe(v)
                    ),
                ))
            }
            _ => Ok(()),
        }
    }

    fn template(&self, s: &str, path: &str) -> Result<Vec<Part>, WorkflowError> {
        template::parse(s).map_err(|e| WorkflowError::Reference {
            workflow: self.wf.name.clone(),
            path: path.to_string(),
            reference: e.text,
            message: e.message,
        })
    }

    /// Every reference in the strings of `value`.
    fn refs_in(
        &self,
        value: &Value,
        path: &str,
        step: &'a Step,
        scope: &Scope<'a>,
    ) -> Result<(), WorkflowError> {
        template::for_each_string(value, path, &mut |at, s| {
            for part in self.template(s, at)? {
                if let Part::Ref(r) = part {
                    self.reference(&r, at, step, scope)?;
                }
            }
            Ok(())
        })
    }

    fn reference(
        &self,
        r: &Reference,
        path: &str,
        step: &'a Step,
        scope: &Scope<'a>,
    ) -> Result<(), WorkflowError> {
        let err = |message: String| WorkflowError::Reference {
            workflow: self.wf.name.clone(),
            path: path.to_string(),
            reference: r.text.clone(),
            message,
        };
        let first = r.segments.first().and_then(Segment::field);
        match r.head.as_str() {
            "inputs" => {
                let names: Vec<&str> = self.wf.inputs.iter().map(|i| i.name.as_str()).collect();
                let declared = if names.is_empty() {
                    "no inputs are declared".to_string()
                } else {
                    format!("inputs: {}", names.join(", "))
                };
                match first {
                    Some(name) if names.contains(&name) => Ok(()),
                    Some(name) => Err(err(format!(
                        "names no declared input ({declared}); declare `{name}` under \
                         `inputs:` or fix the name{}",
                        did_you_mean(name, names.iter().copied())
                    ))),
                    None => Err(err(format!(
                        "names no input; write `${{inputs.NAME}}` ({declared})"
                    ))),
                }
            }
            "steps" => {
                let Some(id) = first else {
                    return Err(err(
                        "names no step; write `${steps.ID.output}` with the id of an earlier step"
                            .to_string(),
                    ));
                };
                self.visible(id, step, scope).map_err(|e| err(e.0))?;
                match r.segments.get(1) {
                    Some(Segment::Field(f)) if f == "output" => Ok(()),
                    _ => Err(err(format!(
                        "names step `{id}` but not its output; write `${{steps.{id}.output}}` \
                         (then `.field` or `[N]` as needed)"
                    ))),
                }
            }
            "index" if scope.loops.is_empty() => Err(err(
                "exists only inside a `for_each` loop's `do`, and this step is not in a loop"
                    .to_string(),
            )),
            "index" if !r.segments.is_empty() => Err(err(
                "goes into `index`, which is a number (the item's position); write `${index}`"
                    .to_string(),
            )),
            "index" => Ok(()),
            var if scope.loops.iter().any(|(v, _)| *v == var) => Ok(()),
            var => {
                if let Some((loop_id, loop_path)) = self.loop_vars.get(var) {
                    return Err(err(format!(
                        "uses the variable of loop `{loop_id}` ({loop_path}), which exists only \
                         inside that loop's `do`; after the loop use `${{steps.{loop_id}.output}}`"
                    )));
                }
                let in_scope: Vec<&str> = scope.loops.iter().map(|(v, _)| *v).collect();
                let here = if in_scope.is_empty() {
                    String::new()
                } else {
                    format!(" (here: {})", in_scope.join(", "))
                };
                let candidates = ["inputs", "steps", "index"].into_iter().chain(in_scope);
                Err(err(format!(
                    "starts with `{var}`, which names nothing: a reference starts with \
                     `inputs.`, `steps.`, `index` or a loop variable{here}{}",
                    did_you_mean(var, candidates)
                )))
            }
        }
    }

    /// Whether step `id` finished before `step` on every path (module docs).
    fn visible(&self, id: &str, step: &Step, scope: &Scope<'a>) -> Result<(), Failure> {
        if scope.visible.contains(&id) {
            return Ok(());
        }
        let before = if scope.visible.is_empty() {
            "no step runs before it".to_string()
        } else {
            format!("steps before it: {}", scope.visible.join(", "))
        };
        let Some(info) = self.infos.get(id) else {
            return Err(format!(
                "names no earlier step ({before}){}",
                did_you_mean(id, self.ids.iter().copied())
            )
            .into());
        };
        let current = self.infos.get(step.id.as_str()).map_or(0, |i| i.ordinal);
        if id == step.id {
            return Err(format!(
                "names its own step `{id}`: a step cannot use its own output (a cycle); use \
                 an earlier step ({before})"
            )
            .into());
        }
        if scope.enclosing.contains(&id) {
            return Err(format!(
                "names `{id}`, the step this one is nested in, which has not finished yet (a \
                 cycle); use an earlier step ({before})"
            )
            .into());
        }
        if info.ordinal > current {
            return Err(format!(
                "names step `{id}` ({}), which runs later (a forward reference); a step can use \
                 only steps that ran before it ({before})",
                info.path
            )
            .into());
        }
        // Earlier, but nested in a loop or branch that has closed: name the closed step
        // that is visible here.
        let mut outer = info.parent;
        while let Some(parent) = outer {
            if scope.visible.contains(&parent) {
                return Err(format!(
                    "names step `{id}` ({}), which is inside `{parent}` and not visible after \
                     it (a loop's or branch's steps are visible only inside it); use \
                     `${{steps.{parent}.output}}` ({before})",
                    info.path
                )
                .into());
            }
            if scope.enclosing.contains(&parent) {
                return Err(format!(
                    "names step `{id}` ({}), which is in the other branch of `{parent}` and \
                     does not run on this path; use a step before `{parent}` ({before})",
                    info.path
                )
                .into());
            }
            outer = self.infos.get(parent).and_then(|i| i.parent);
        }
        Err(format!(
            "names step `{id}` ({}), which is not visible here: it is inside another loop or \
             branch ({before})",
            info.path
        )
        .into())
    }
}
