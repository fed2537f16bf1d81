//! Parsing, checking and loading workflows (running: `tests_run.rs`).

use serde_json::json;

use super::*;

fn yaml(text: &str) -> Workflow {
    Workflow::parse("report", text, Format::Yaml).unwrap()
}

fn check_err(text: &str) -> String {
    yaml(text).check().unwrap_err().to_string()
}

const REPORT_YAML: &str = r#"
description: Summarise every file
inputs:
  files: {type: array, description: paths to read}
  limit: {type: integer, default: 10}
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
        args: {path: "${file}"}
  - id: check
    if: {ref: "${steps.list.output}", op: not_empty}
    then:
      - {id: note, output: "has files"}
    else:
      - {id: none, output: "empty"}
  - id: summary
    agent: {task: "Summarise ${steps.each.output}", preset: reviewer}
  - id: done
    output: {report: "${steps.summary.output}"}
"#;

const REPORT_JSON: &str = r#"{
  "description": "Summarise every file",
  "inputs": {
    "files": {"type": "array", "description": "paths to read"},
    "limit": {"type": "integer", "default": 10}
  },
  "steps": [
    {"id": "list", "tool": "workspace_list", "args": {"path": "."}},
    {"id": "each", "for_each": "${inputs.files}", "as": "file", "do": [
      {"id": "read", "tool": "workspace_read", "args": {"path": "${file}"}}
    ]},
    {"id": "check", "if": {"ref": "${steps.list.output}", "op": "not_empty"},
     "then": [{"id": "note", "output": "has files"}],
     "else": [{"id": "none", "output": "empty"}]},
    {"id": "summary", "agent": {"task": "Summarise ${steps.each.output}", "preset": "reviewer"}},
    {"id": "done", "output": {"report": "${steps.summary.output}"}}
  ]
}"#;

#[test]
fn json_and_yaml_parse_to_the_same_workflow() {
    let from_yaml = yaml(REPORT_YAML);
    let from_json = Workflow::parse("report", REPORT_JSON, Format::Json).unwrap();
    assert_eq!(from_yaml, from_json);
    from_yaml.check().unwrap();
    assert_eq!(from_yaml.steps.len(), 5);
    assert_eq!(from_yaml.steps[1].path, "steps[1]");
    let StepKind::ForEach { var, body, .. } = &from_yaml.steps[1].kind else {
        panic!("not a loop: {:?}", from_yaml.steps[1]);
    };
    assert_eq!(var, "file");
    assert_eq!(body[0].path, "steps[1].do[0]");
    let summary = serde_json::to_value(from_yaml.summary()).unwrap();
    assert_eq!(
        summary,
        json!({
            "name": "report",
            "description": "Summarise every file",
            "inputs": [
                {"name": "files", "type": "array", "description": "paths to read", "required": true},
                {"name": "limit", "type": "integer", "default": 10, "required": false},
            ]
        })
    );
}

#[test]
fn unknown_keys_and_bad_shapes_are_refused_with_their_place() {
    let err = Workflow::parse(
        "report",
        "steps:\n  - id: a\n    tool: t\n    argz: {}\n",
        Format::Yaml,
    )
    .unwrap_err()
    .to_string();
    assert!(err.starts_with("workflow `report`: steps[0]"), "{err}");
    assert!(err.contains("unknown field `argz`"), "{err}");
    let err = Workflow::parse("report", r#"{"steps": [], "name": "x"}"#, Format::Json)
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown field `name`"), "{err}");
    let err = Workflow::parse("report", r#"{"steps": []}"#, Format::Json)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("workflow `report`: steps: the list is empty"),
        "{err}"
    );
    let err = Workflow::parse(
        "report",
        "steps:\n  - id: a\n    if: {ref: \"${inputs.x}\", op: eq}\n    then: []\n",
        Format::Yaml,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("steps[0].if.op"), "{err}");
    assert!(err.contains("unknown variant `eq`"), "{err}");
}

#[test]
fn a_step_is_exactly_one_kind() {
    let err = Workflow::parse(
        "report",
        "steps:\n  - id: a\n    tool: t\n    for_each: \"${inputs.x}\"\n    do: []\n",
        Format::Yaml,
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        err,
        "workflow `report`: steps[0]: step `a` has both `tool` and `for_each`; a step is \
         exactly one of tool, agent, for_each, if or output — split it into separate steps"
    );
    let err = Workflow::parse("report", "steps:\n  - id: a\n", Format::Yaml)
        .unwrap_err()
        .to_string();
    assert!(err.contains("step `a` does nothing"), "{err}");
    let err = Workflow::parse(
        "report",
        "steps:\n  - id: a\n    tool: t\n    then: []\n",
        Format::Yaml,
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        err,
        "workflow `report`: steps[0].then: `then` belongs to an `if` step, but step `a` is a \
         `tool` step; remove `then` or make it a separate `if` step"
    );
    let err = Workflow::parse(
        "report",
        "steps:\n  - id: Read\n    tool: t\n",
        Format::Yaml,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("`Read` is not a valid step id"), "{err}");
    assert!(err.contains("e.g. `read`"), "{err}");
    // `output: null` is an output step.
    let wf = yaml("steps:\n  - id: a\n    output: null\n");
    assert_eq!(wf.steps[0].kind, StepKind::Output { value: Value::Null });
}

#[test]
fn a_bad_reference_names_its_place_and_the_closest_id() {
    let err = check_err(
        r#"
steps:
  - {id: list, tool: workspace_list}
  - id: each
    for_each: "${steps.list.output}"
    do: [{id: read, tool: workspace_read, args: {path: "${item}"}}]
  - id: check
    if: {ref: "${steps.list.output}", op: not_empty}
    then:
      - {id: write, tool: workspace_write, args: {path: "${steps.sumary.output}"}}
  - {id: summary, agent: {task: "sum up"}}
"#,
    );
    assert_eq!(
        err,
        "workflow `report`: steps[2].then[0].args.path: `${steps.sumary.output}` names no \
         earlier step (steps before it: list, each); did you mean `summary`?"
    );
}

#[test]
fn forward_self_and_enclosing_references_are_cycles() {
    let err = check_err(
        "steps:\n  - {id: a, tool: t, args: {x: \"${steps.b.output}\"}}\n  - {id: b, tool: t}\n",
    );
    assert_eq!(
        err,
        "workflow `report`: steps[0].args.x: `${steps.b.output}` names step `b` (steps[1]), \
         which runs later (a forward reference); a step can use only steps that ran before \
         it (no step runs before it)"
    );
    let err = check_err("steps:\n  - {id: a, tool: t, args: {x: \"${steps.a.output}\"}}\n");
    assert!(err.contains("names its own step `a`"), "{err}");
    let err = check_err(
        "steps:\n  - id: loop\n    for_each: \"${inputs.x}\"\n    do: [{id: b, output: \"${steps.loop.output}\"}]\ninputs: {x: {}}\n",
    );
    assert!(
        err.contains("`${steps.loop.output}` names `loop`, the step this one is nested in"),
        "{err}"
    );
    // A step inside a closed loop is not visible after it: name the loop instead.
    let err = check_err(
        "inputs: {x: {}}\nsteps:\n  - id: loop\n    for_each: \"${inputs.x}\"\n    do: [{id: b, output: 1}]\n  - {id: c, output: \"${steps.b.output}\"}\n",
    );
    assert_eq!(
        err,
        "workflow `report`: steps[1].output: `${steps.b.output}` names step `b` \
         (steps[0].do[0]), which is inside `loop` and not visible after it (a loop's or \
         branch's steps are visible only inside it); use `${steps.loop.output}` (steps \
         before it: loop)"
    );
    // The `else` branch does not see the `then` branch.
    let err = check_err(
        "steps:\n  - {id: a, output: 1}\n  - {id: b, if: {ref: \"${steps.a.output}\", op: exists}, then: [{id: c, output: 1}], else: [{id: d, output: \"${steps.c.output}\"}]}\n",
    );
    assert!(err.contains("`${steps.c.output}` names step `c` (steps[1].then[0]), which is in the other branch of `b`"), "{err}");
    // Earlier siblings inside the loop and the loop's earlier siblings are visible.
    yaml(
        "inputs: {x: {}}\nsteps:\n  - {id: a, output: 1}\n  - id: loop\n    for_each: \"${inputs.x}\"\n    do:\n      - {id: b, output: \"${steps.a.output}\"}\n      - {id: c, output: \"${steps.b.output} ${item} ${index}\"}\n  - {id: d, output: \"${steps.loop.output}\"}\n",
    )
    .check()
    .unwrap();
}

#[test]
fn duplicate_ids_are_refused() {
    let err = check_err(
        "inputs: {x: {}}\nsteps:\n  - {id: read, tool: t}\n  - id: each\n    for_each: \"${inputs.x}\"\n    do: [{id: read, tool: t}]\n",
    );
    assert_eq!(
        err,
        "workflow `report`: steps[1].do[0].id: `read` is already the id of steps[0]; step ids \
         are unique across the whole workflow — rename this one, e.g. `read_2`"
    );
}

#[test]
fn a_loop_variable_exists_only_inside_its_loop() {
    let err = check_err(
        "inputs: {files: {type: array}}\nsteps:\n  - id: each\n    for_each: \"${inputs.files}\"\n    as: file\n    do: [{id: read, tool: t, args: {path: \"${file}\"}}]\n  - {id: after, tool: t, args: {path: \"${file}\"}}\n",
    );
    assert_eq!(
        err,
        "workflow `report`: steps[1].args.path: `${file}` uses the variable of loop `each` \
         (steps[0]), which exists only inside that loop's `do`; after the loop use \
         `${steps.each.output}`"
    );
    let err = check_err("steps:\n  - {id: a, output: \"${index}\"}\n");
    assert!(
        err.contains("exists only inside a `for_each` loop"),
        "{err}"
    );
    let err = check_err("steps:\n  - {id: a, output: \"${fiel}\"}\n");
    assert!(
        err.contains("starts with `fiel`, which names nothing"),
        "{err}"
    );
    // Nested loops need distinct variables.
    let err = check_err(
        "inputs: {x: {}}\nsteps:\n  - id: outer\n    for_each: \"${inputs.x}\"\n    do:\n      - id: inner\n        for_each: \"${item}\"\n        do: [{id: a, output: 1}]\n",
    );
    assert!(
        err.contains(
            "steps[0].do[0].as: `item` is already the variable of the enclosing loop `outer`"
        ),
        "{err}"
    );
}

#[test]
fn inputs_must_be_declared() {
    let err = check_err(
        "inputs: {files: {type: array}}\nsteps:\n  - {id: a, output: \"${inputs.file}\"}\n",
    );
    assert_eq!(
        err,
        "workflow `report`: steps[0].output: `${inputs.file}` names no declared input \
         (inputs: files); declare `file` under `inputs:` or fix the name; did you mean `files`?"
    );
    let err =
        check_err("inputs: {n: {type: integer, default: \"x\"}}\nsteps:\n  - {id: a, output: 1}\n");
    assert!(
        err.contains("inputs.n.default: is a string (\"x\"), but the input's type is integer"),
        "{err}"
    );
    let err = check_err(
        "inputs: {n: {type: number}}\nsteps:\n  - {id: a, for_each: \"${inputs.n}\", do: [{id: b, output: 1}]}\n",
    );
    assert!(
        err.contains("for_each needs") || err.contains("`for_each` needs an array"),
        "{err}"
    );
}

#[test]
fn templates_are_checked() {
    let err = check_err("steps:\n  - {id: a, output: \"${inputs.x\"}\n");
    assert!(err.contains("has no closing `}`"), "{err}");
    let err = check_err("steps:\n  - {id: a, output: \"${steps.a output}\"}\n");
    assert!(err.contains("is not a reference"), "{err}");
    let err = check_err("steps:\n  - {id: a, output: 1}\n  - {id: b, output: \"${steps.a}\"}\n");
    assert!(err.contains("write `${steps.a.output}`"), "{err}");
    let err = check_err(
        "steps:\n  - {id: a, for_each: \"files: ${steps.x.output}\", do: [{id: b, output: 1}]}\n",
    );
    assert!(err.contains("is not one reference"), "{err}");
    let err = check_err("steps:\n  - {id: a, if: {ref: \"${index}\", op: equals}, then: []}\n");
    assert!(err.contains("exists only inside"), "{err}");
    let err = check_err(
        "steps:\n  - {id: a, output: 1}\n  - {id: b, if: {ref: \"${steps.a.output}\", op: equals}, then: []}\n",
    );
    assert!(
        err.contains("steps[1].if: op `equals` compares with a `value`"),
        "{err}"
    );
    let err = check_err(
        "steps:\n  - {id: a, output: 1}\n  - {id: b, if: {ref: \"${steps.a.output}\", op: gt, value: many}, then: []}\n",
    );
    assert!(err.contains("op `gt` compares numbers"), "{err}");
    // An escaped `$${` is not a reference.
    yaml("steps:\n  - {id: a, output: \"$${steps.nothing.output}\"}\n")
        .check()
        .unwrap();
}

#[test]
fn limits_on_steps_and_depth() {
    let mut text = String::from("steps:\n");
    for i in 0..201 {
        text.push_str(&format!("  - {{id: s{i}, output: {i}}}\n"));
    }
    let err = check_err(&text);
    assert!(
        err.starts_with("workflow `report`: steps[200]: step `s200` is one too many"),
        "{err}"
    );
    let mut text = String::from("inputs: {x: {}}\nsteps:\n");
    let mut indent = String::from("  ");
    for depth in 0..9 {
        text.push_str(&format!(
            "{indent}- id: d{depth}\n{indent}  if: {{ref: \"${{inputs.x}}\", op: truthy}}\n{indent}  then:\n"
        ));
        indent.push_str("    ");
    }
    text.push_str(&format!("{indent}- {{id: leaf, output: 1}}\n"));
    let err = check_err(&text);
    assert!(err.contains("step `d8` is nested 9 levels deep"), "{err}");
}

#[test]
fn suggestions() {
    assert_eq!(closest("lsit", ["list", "each"]), Some("list"));
    assert_eq!(closest("zzzzz", ["list", "each"]), None);
}

#[test]
fn load_dir_reads_checks_and_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    std::fs::write(path.join("report.yaml"), REPORT_YAML).unwrap();
    std::fs::write(path.join("report2.json"), REPORT_JSON).unwrap();
    std::fs::write(path.join("report2.yml"), REPORT_YAML).unwrap();
    std::fs::write(path.join("README.md"), "not a workflow").unwrap();
    std::fs::write(path.join("Bad Name.yaml"), "x").unwrap();
    std::fs::write(path.join("broken.json"), "{\"steps\": [{\"id\": \"a\"}]}").unwrap();
    let big = format!("# {}\n{REPORT_YAML}", "x".repeat(300 * 1024));
    std::fs::write(path.join("big.yaml"), big).unwrap();
    std::os::unix::fs::symlink(path.join("report.yaml"), path.join("link.yaml")).unwrap();
    let loaded = load_dir(path);
    let names: Vec<&str> = loaded.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["big", "broken", "link", "report", "report2", "report2"]
    );
    let err = |i: usize| loaded[i].1.as_ref().unwrap_err().to_string();
    assert!(
        err(0).starts_with("workflow `big`: big.yaml: "),
        "{}",
        err(0)
    );
    assert!(
        err(0).contains("at most 262144 bytes (256 KiB)"),
        "{}",
        err(0)
    );
    assert!(err(1).contains("step `a` does nothing"), "{}", err(1));
    assert!(err(2).contains("symbolic link"), "{}", err(2));
    assert_eq!(loaded[3].1.as_ref().unwrap().name, "report");
    assert_eq!(loaded[4].1.as_ref().unwrap().steps.len(), 5);
    assert_eq!(
        err(5),
        "workflow `report2`: report2.yml: workflow `report2` is also declared by \
         report2.json; keep one of the two files"
    );
    assert!(load_dir(&path.join("missing")).is_empty());
}
