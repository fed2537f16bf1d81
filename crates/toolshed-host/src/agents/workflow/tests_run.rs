//! Running workflows over a fake [`StepRunner`] that records its calls.

use std::sync::Mutex;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::*;

type Respond = Box<dyn Fn(&str, &str, &Value) -> Result<Value, Failure> + Send + Sync>;

/// Records every call; answers with `respond(step, tool, args)`. A call of the tool
/// `hang` cancels `cancel` (when set) and never returns.
struct Fake {
    calls: Mutex<Vec<(String, String, Value)>>,
    started: Mutex<Vec<(String, u64)>>,
    respond: Respond,
    cancel: Option<CancellationToken>,
}

impl Fake {
    fn new(
        respond: impl Fn(&str, &str, &Value) -> Result<Value, Failure> + Send + Sync + 'static,
    ) -> Fake {
        Fake {
            calls: Mutex::default(),
            started: Mutex::default(),
            respond: Box::new(respond),
            cancel: None,
        }
    }

    fn calls(&self) -> Vec<(String, String, Value)> {
        self.calls.lock().unwrap().clone()
    }
}

#[async_trait::async_trait]
impl StepRunner for Fake {
    async fn call_tool(&self, step_id: &str, tool: &str, args: Value) -> Result<Value, Failure> {
        self.calls
            .lock()
            .unwrap()
            .push((step_id.into(), tool.into(), args.clone()));
        if tool == "hang" {
            if let Some(cancel) = &self.cancel {
                cancel.cancel();
            }
            std::future::pending::<()>().await;
        }
        (self.respond)(step_id, tool, &args)
    }

    async fn run_agent(&self, step_id: &str, spec: Value) -> Result<Value, Failure> {
        self.calls
            .lock()
            .unwrap()
            .push((step_id.into(), "agent_run".into(), spec.clone()));
        (self.respond)(step_id, "agent_run", &spec)
    }

    fn step_started(&self, step_id: &str, done: u64) {
        self.started.lock().unwrap().push((step_id.into(), done));
    }
}

fn yaml(text: &str) -> Workflow {
    Workflow::parse("report", text, Format::Yaml).unwrap()
}

async fn go(wf: &Workflow, inputs: Value, fake: &Fake) -> Result<RunReport, WorkflowError> {
    run(wf, inputs, fake, &CancellationToken::new()).await
}

const REPORT: &str = r#"
inputs:
  files: {type: array}
  min: {type: integer, default: 0}
steps:
  - id: list
    tool: workspace_list
    args: {path: "."}
  - id: each
    for_each: "${inputs.files}"
    as: file
    do:
      - id: read
        tool: workspace_read
        args: {path: "${file}", n: "${index}"}
      - id: size
        output: "${steps.read.output.size}"
  - id: check
    if: {ref: "${steps.list.output.items}", op: not_empty}
    then:
      - id: first
        tool: note
        args: {name: "first is ${steps.list.output.items[0].name}", count: "${inputs.min}"}
    else:
      - {id: none, tool: note, args: {name: "nothing"}}
  - id: summary
    agent: {task: "Summarise ${steps.each.output}", preset: reviewer, tools: ["workspace_*"]}
  - id: done
    output: {report: "${steps.summary.output}", sizes: "${steps.each.output}", note: "${steps.check.output}"}
"#;

fn report_runner(items: Value) -> Fake {
    Fake::new(move |_, tool, args| match tool {
        "workspace_list" => Ok(json!({"items": items.clone()})),
        "workspace_read" => {
            let path = args["path"].as_str().unwrap_or("");
            Ok(json!({"text": format!("text of {path}"), "size": path.len()}))
        }
        "note" => Ok(json!(format!(
            "noted {}",
            args["name"].as_str().unwrap_or("")
        ))),
        "agent_run" => Ok(json!("all good")),
        other => Err(format!("unknown tool {other}").into()),
    })
}

#[tokio::test]
async fn a_loop_and_a_condition_make_exactly_these_calls() {
    let wf = yaml(REPORT);
    let fake = report_runner(json!([{"name": "a.rs"}]));
    let report = go(&wf, json!({"files": ["a.rs", "src/b.rs"]}), &fake)
        .await
        .unwrap();
    assert_eq!(
        fake.calls(),
        vec![
            ("list".into(), "workspace_list".into(), json!({"path": "."})),
            (
                "read".into(),
                "workspace_read".into(),
                json!({"path": "a.rs", "n": 0})
            ),
            (
                "read".into(),
                "workspace_read".into(),
                json!({"path": "src/b.rs", "n": 1})
            ),
            (
                "first".into(),
                "note".into(),
                json!({"name": "first is a.rs", "count": 0})
            ),
            (
                "summary".into(),
                "agent_run".into(),
                json!({"task": "Summarise [4,8]", "preset": "reviewer", "tools": ["workspace_*"]})
            ),
        ]
    );
    assert_eq!(
        report.output,
        json!({"report": "all good", "sizes": [4, 8], "note": "noted first is a.rs"})
    );
    let ids: Vec<(&str, &str, bool)> = report
        .steps
        .iter()
        .map(|s| (s.id.as_str(), s.path.as_str(), s.ok))
        .collect();
    assert_eq!(
        ids,
        [
            ("list", "steps[0]", true),
            ("each", "steps[1]", true),
            ("read", "steps[1].do[0] (each #0)", true),
            ("size", "steps[1].do[1] (each #0)", true),
            ("read", "steps[1].do[0] (each #1)", true),
            ("size", "steps[1].do[1] (each #1)", true),
            ("check", "steps[2]", true),
            ("first", "steps[2].then[0]", true),
            ("summary", "steps[3]", true),
            ("done", "steps[4]", true),
        ]
    );
    assert_eq!(report.steps[0].summary, r#"{"items":[{"name":"a.rs"}]}"#);
    assert_eq!(report.steps[8].summary, "all good");
    let started = fake.started.lock().unwrap().clone();
    assert_eq!(started.len(), 10);
    assert_eq!(started[9], ("done".to_string(), 9));
    // The report serializes as the host hands it on.
    let value = serde_json::to_value(&report).unwrap();
    assert_eq!(value["steps"][2]["path"], "steps[1].do[0] (each #0)");
}

#[tokio::test]
async fn the_else_branch_runs_when_the_condition_fails() {
    let wf = yaml(REPORT);
    let fake = report_runner(json!([]));
    let report = go(&wf, json!({"files": []}), &fake).await.unwrap();
    let tools: Vec<(String, String)> = fake.calls().into_iter().map(|(s, t, _)| (s, t)).collect();
    assert_eq!(
        tools,
        [
            ("list".to_string(), "workspace_list".to_string()),
            ("none".to_string(), "note".to_string()),
            ("summary".to_string(), "agent_run".to_string()),
        ]
    );
    assert_eq!(
        report.output,
        json!({"report": "all good", "sizes": [], "note": "noted nothing"})
    );
    assert_eq!(fake.calls()[2].2["task"], "Summarise []");
}

#[tokio::test]
async fn a_bad_reference_is_reported_before_anything_runs() {
    let wf = yaml(
        "steps:\n  - {id: list, tool: workspace_list}\n  - {id: read, tool: workspace_read, args: {path: \"${steps.lsit.output}\"}}\n",
    );
    let fake = report_runner(json!([]));
    let err = go(&wf, Value::Null, &fake).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "workflow `report`: steps[1].args.path: `${steps.lsit.output}` names no earlier step \
         (steps before it: list); did you mean `list`?"
    );
    assert!(matches!(err, WorkflowError::Reference { .. }));
    assert!(err.report().is_none());
    assert!(fake.calls().is_empty());
}

#[tokio::test]
async fn inputs_are_checked_and_defaults_applied() {
    let wf = yaml(REPORT);
    let fake = report_runner(json!([]));
    let err = go(&wf, json!({"files": "a.rs"}), &fake).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "workflow `report`: inputs.files: expected an array, got a string (\"a.rs\"); pass \
         e.g. [\"a\", \"b\"]"
    );
    let err = go(&wf, json!({}), &fake).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "workflow `report`: inputs.files: the required input is missing; pass it, e.g. \
         {\"files\": [\"a\", \"b\"]}"
    );
    let err = go(&wf, json!({"files": [], "fils": 1}), &fake)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "workflow `report`: inputs.fils: the workflow has no input `fils` (declared: files, \
         min); remove it or fix the name; did you mean `files`?"
    );
    let err = go(&wf, json!({"files": [], "min": 1.5}), &fake)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("expected an integer, got a number (1.5)"),
        "{err}"
    );
    let err = go(&wf, json!(["a"]), &fake).await.unwrap_err();
    assert!(matches!(err, WorkflowError::Input { .. }), "{err}");
    assert!(fake.calls().is_empty());
    // `min` defaults to 0, which the `first` step passes on as a number.
    let fake = report_runner(json!([{"name": "x"}]));
    go(&wf, json!({"files": []}), &fake).await.unwrap();
    assert_eq!(fake.calls()[1].2["count"], 0);
}

#[tokio::test]
async fn a_loop_over_more_than_1000_items_is_refused() {
    let wf = yaml(
        "inputs: {xs: {type: array}}\nsteps:\n  - id: each\n    for_each: \"${inputs.xs}\"\n    do: [{id: t, tool: work, args: {x: \"${item}\"}}]\n",
    );
    let fake = Fake::new(|_, _, args| Ok(args["x"].clone()));
    let items: Vec<u32> = (0..1001).collect();
    let err = go(&wf, json!({"xs": items}), &fake).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "workflow `report`: steps[0]: step `each` failed: steps[0].for_each: \
         `${inputs.xs}` has 1001 items; a loop runs over at most 1000 — filter or split the \
         list first"
    );
    assert!(fake.calls().is_empty());
    let report = err.report().unwrap();
    assert_eq!(report.steps.len(), 1);
    assert!(!report.steps[0].ok);
    // 1000 items run, and the loop's output is every iteration's.
    let items: Vec<u32> = (0..1000).collect();
    let report = go(&wf, json!({"xs": items}), &fake).await.unwrap();
    assert_eq!(fake.calls().len(), 1000);
    assert_eq!(report.output, json!(items));
    // Not an array at run time.
    let wf = yaml(
        "steps:\n  - {id: a, output: 3}\n  - {id: each, for_each: \"${steps.a.output}\", do: [{id: t, output: 1}]}\n",
    );
    let err = go(&wf, Value::Null, &fake).await.unwrap_err().to_string();
    assert!(
        err.contains("`${steps.a.output}` is a number (3), not an array"),
        "{err}"
    );
}

#[tokio::test]
async fn a_run_executes_at_most_10000_steps() {
    let mut body = String::new();
    for i in 0..10 {
        body.push_str(&format!("      - {{id: s{i}, output: \"${{index}}\"}}\n"));
    }
    let wf = yaml(&format!(
        "inputs: {{xs: {{}}}}\nsteps:\n  - id: each\n    for_each: \"${{inputs.xs}}\"\n    do:\n{body}"
    ));
    let fake = Fake::new(|_, _, _| Ok(Value::Null));
    let items: Vec<u32> = (0..1000).collect();
    let err = go(&wf, json!({"xs": items}), &fake).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "workflow `report`: steps[0].do[9] (each #999): step `s9` failed: the run reached its \
         limit of 10000 steps executed; loop over fewer items or split the workflow"
    );
    assert_eq!(err.report().unwrap().steps.len(), 10_000);
}

#[tokio::test]
async fn cancel_stops_the_run() {
    let wf =
        yaml("steps:\n  - {id: a, tool: work}\n  - {id: b, tool: hang}\n  - {id: c, tool: work}\n");
    let cancel = CancellationToken::new();
    let mut fake = Fake::new(|_, _, _| Ok(json!("done")));
    fake.cancel = Some(cancel.clone());
    let running = run(&wf, Value::Null, &fake, &cancel);
    let err = tokio::time::timeout(std::time::Duration::from_secs(5), running)
        .await
        .expect("the run stops promptly")
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "workflow `report`: steps[1]: cancelled before step `b` finished"
    );
    let report = err.report().unwrap();
    assert_eq!(report.steps.len(), 2);
    assert!(report.steps[0].ok);
    assert!(!report.steps[1].ok);
    let tools: Vec<String> = fake.calls().into_iter().map(|(_, t, _)| t).collect();
    assert_eq!(tools, ["work", "hang"]);
    // Cancelled before the start: nothing runs.
    let fake = Fake::new(|_, _, _| Ok(json!("done")));
    let err = run(&wf, Value::Null, &fake, &cancel).await.unwrap_err();
    assert!(matches!(err, WorkflowError::Cancelled { .. }));
    assert!(fake.calls().is_empty());
}

#[tokio::test]
async fn whole_and_embedded_references_and_the_escape() {
    let wf = yaml(
        r#"
inputs:
  n: {type: integer}
  o: {type: object}
  s: {type: string}
steps:
  - id: out
    output:
      whole: "${inputs.n}"
      object: "${inputs.o}"
      field: "${inputs.o.a[1]}"
      embedded: "n=${inputs.n}"
      embedded_object: "o=${inputs.o}"
      embedded_string: "x${inputs.s}y"
      escaped: "$${inputs.n} is ${inputs.n}"
      list: ["${inputs.s}", 2, {deep: "${inputs.n}"}]
"#,
    );
    let fake = Fake::new(|_, _, _| Ok(Value::Null));
    let report = go(
        &wf,
        json!({"n": 3, "o": {"a": [1, "two"]}, "s": "str"}),
        &fake,
    )
    .await
    .unwrap();
    assert_eq!(
        report.output,
        json!({
            "whole": 3,
            "object": {"a": [1, "two"]},
            "field": "two",
            "embedded": "n=3",
            "embedded_object": "o={\"a\":[1,\"two\"]}",
            "embedded_string": "xstry",
            "escaped": "${inputs.n} is 3",
            "list": ["str", 2, {"deep": 3}],
        })
    );
}

#[tokio::test]
async fn a_failed_step_returns_the_partial_report() {
    let wf = yaml(
        "steps:\n  - {id: a, tool: work}\n  - {id: b, tool: broken, args: {x: 1}}\n  - {id: c, tool: work}\n",
    );
    let fake = Fake::new(|_, tool, _| match tool {
        "broken" => Err(Failure("the tool `broken` is denied by policy".to_string())),
        _ => Ok(json!({"ok": true})),
    });
    let err = go(&wf, Value::Null, &fake).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "workflow `report`: steps[1]: step `b` failed: the tool `broken` is denied by policy"
    );
    let WorkflowError::StepFailed {
        step, path, report, ..
    } = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!((step.as_str(), path.as_str()), ("b", "steps[1]"));
    let steps: Vec<(&str, bool, &str)> = report
        .steps
        .iter()
        .map(|s| (s.id.as_str(), s.ok, s.summary.as_str()))
        .collect();
    assert_eq!(
        steps,
        [
            ("a", true, r#"{"ok":true}"#),
            ("b", false, "the tool `broken` is denied by policy"),
        ]
    );
    assert_eq!(fake.calls().len(), 2);
}

#[tokio::test]
async fn a_failure_inside_a_loop_names_the_iteration_and_a_missing_field() {
    let wf = yaml(
        "inputs: {xs: {}}\nsteps:\n  - id: each\n    for_each: \"${inputs.xs}\"\n    do: [{id: t, tool: work, args: {name: \"${item.name}\"}}]\n",
    );
    let fake = Fake::new(|_, _, _| Ok(json!(1)));
    let err = go(&wf, json!({"xs": [{"name": "a"}, {"nme": "b"}]}), &fake)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "workflow `report`: steps[0].do[0] (each #1): step `t` failed: \
         steps[0].do[0].args.name: `${item.name}`: `item` has no field `name` (fields: nme); \
         did you mean `nme`?"
    );
    let report = err.report().unwrap();
    let steps: Vec<(&str, bool)> = report.steps.iter().map(|s| (s.id.as_str(), s.ok)).collect();
    assert_eq!(steps, [("each", false), ("t", true), ("t", false)]);
    assert_eq!(report.steps[0].summary, "failed at step `t`");
}

#[tokio::test]
async fn conditions() {
    let cases = [
        (json!("abc"), "contains", Some(json!("b")), true),
        (json!(["a", "b"]), "contains", Some(json!("c")), false),
        (json!({"k": 1}), "contains", Some(json!("k")), true),
        (json!(3), "gt", Some(json!(2)), true),
        (json!(3), "lt", Some(json!(2.5)), false),
        (json!(1), "equals", Some(json!(1.0)), true),
        (json!("x"), "not_equals", Some(json!("x")), false),
        (json!(0), "truthy", None, false),
        (json!("no"), "truthy", None, true),
        (json!(false), "exists", None, true),
        (json!({}), "not_empty", None, false),
    ];
    for (value, op, compare, expected) in cases {
        let value_line = match &compare {
            Some(v) => format!(", value: {v}"),
            None => String::new(),
        };
        let wf = yaml(&format!(
            "inputs: {{v: {{}}}}\nsteps:\n  - {{id: c, if: {{ref: \"${{inputs.v}}\", op: {op}{value_line}}}, then: [{{id: y, output: true}}], else: [{{id: n, output: false}}]}}\n"
        ));
        let fake = Fake::new(|_, _, _| Ok(Value::Null));
        let report = go(&wf, json!({"v": value}), &fake).await.unwrap();
        assert_eq!(report.output, json!(expected), "{value} {op} {compare:?}");
    }
    // A missing field in a condition is null, not an error.
    let wf = yaml(
        "inputs: {v: {}}\nsteps:\n  - {id: c, if: {ref: \"${inputs.v.missing}\", op: exists}, then: [{id: y, output: 1}]}\n",
    );
    let fake = Fake::new(|_, _, _| Ok(Value::Null));
    let report = go(&wf, json!({"v": {}}), &fake).await.unwrap();
    assert_eq!(report.output, Value::Null);
}

#[test]
fn the_run_future_can_be_spawned() {
    fn send<T: Send>(_: &T) {}
    let wf = yaml("steps:\n  - {id: a, output: 1}\n");
    let fake = Fake::new(|_, _, _| Ok(Value::Null));
    let cancel = CancellationToken::new();
    send(&run(&wf, Value::Null, &fake, &cancel));
}
