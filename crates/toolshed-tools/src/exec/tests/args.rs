//! The command tools' arguments: the generated schemas accept and refuse what the tools do,
//! and their defaults are the ones the tools apply.

use std::fmt::Debug;

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use toolshed_core::ToolSpec;

use super::super::spec::{self, *};

/// Checks `spec`'s schema against examples, and that reading `minimal` gives what reading it
/// with every default of the schema spelled out gives.
fn check<T: DeserializeOwned + Debug>(
    spec: ToolSpec,
    minimal: Value,
    valid: &[Value],
    invalid: &[Value],
) {
    let name = &spec.name;
    let schema = &spec.input_schema;
    let validator = jsonschema::validator_for(schema).expect("the schema compiles");
    for example in std::iter::once(&minimal).chain(valid) {
        assert!(validator.is_valid(example), "{name} refuses {example}");
        crate::args::parse::<T>(example.clone())
            .unwrap_or_else(|e| panic!("{name} cannot read {example}: {e}"));
    }
    for example in invalid {
        assert!(!validator.is_valid(example), "{name} accepts {example}");
    }
    let mut spelled = minimal.clone();
    for (key, property) in schema["properties"].as_object().expect("properties") {
        if let Some(default) = property.get("default") {
            spelled[key] = default.clone();
        }
    }
    let read = |args: Value| format!("{:?}", crate::args::parse::<T>(args).expect("reads"));
    assert_eq!(
        read(minimal),
        read(spelled),
        "{name}: the schema's defaults are the ones the tool applies"
    );
}

#[test]
fn exec_command() {
    check::<ExecArgs>(
        spec::exec_command(),
        json!({"cmd": "ls"}),
        &[
            json!({"cmd": "ls", "workdir": "src", "tty": true, "stdin": false, "env": {"A": "1"}}),
            json!({"cmd": "ls", "timeout_ms": MAX_TIMEOUT_MS, "yield_ms": 0, "max_output_bytes": 64}),
        ],
        &[
            json!({}),
            json!({"cmd": ""}),
            json!({"cmd": "ls", "timeout_ms": 0}),
            json!({"cmd": "ls", "timeout_ms": -5}),
            json!({"cmd": "ls", "timeout_ms": MAX_TIMEOUT_MS + 1}),
            json!({"cmd": "ls", "yield_ms": MAX_YIELD_MS + 1}),
            json!({"cmd": "ls", "max_output_bytes": 63}),
            json!({"cmd": "ls", "max_output_bytes": MAX_OUTPUT_BYTES + 1}),
            json!({"cmd": "ls", "env": {"A": 1}}),
            json!({"cmd": "ls", "shell": "zsh"}),
        ],
    );
}

#[test]
fn a_negative_duration_is_refused_at_its_pointer() {
    let spec = spec::exec_command();
    let validator = jsonschema::validator_for(&spec.input_schema).unwrap();
    let args = json!({"cmd": "true", "timeout_ms": -5});
    let paths: Vec<String> = validator
        .iter_errors(&args)
        .map(|e| e.instance_path().to_string())
        .collect();
    assert_eq!(paths, ["/timeout_ms"]);
}

#[test]
fn the_session_tools() {
    check::<WriteStdinArgs>(
        spec::write_stdin(),
        json!({"session_id": 1, "chars": ""}),
        &[
            json!({"session_id": 7, "chars": "x\n", "yield_ms": 0, "max_output_bytes": MAX_OUTPUT_BYTES}),
        ],
        &[
            json!({"session_id": 1}),
            json!({"session_id": 0, "chars": ""}),
            json!({"session_id": 1, "chars": "", "yield_ms": MAX_YIELD_MS + 1}),
        ],
    );
    check::<NoArgs>(
        spec::command_run_list(),
        json!({}),
        &[],
        &[json!({"session_id": 1})],
    );
    check::<ReadOutputArgs>(
        spec::command_run_read_output(),
        json!({"session_id": 1}),
        &[json!({"session_id": 1, "since": 0, "wait_ms": MAX_YIELD_MS})],
        &[
            json!({}),
            json!({"session_id": 1, "since": -1}),
            json!({"session_id": 1, "wait_ms": MAX_YIELD_MS + 1}),
        ],
    );
    check::<WaitArgs>(
        spec::command_run_wait(),
        json!({"session_id": 1}),
        &[json!({"session_id": 1, "timeout_ms": 0})],
        &[json!({"session_id": 1, "timeout_ms": MAX_YIELD_MS + 1})],
    );
    check::<TerminateArgs>(
        spec::command_run_terminate(),
        json!({"session_id": 1}),
        &[json!({"session_id": 1, "force": true})],
        &[json!({"session_id": 1, "force": "yes"})],
    );
}

#[test]
fn shell() {
    check::<ShellArgs>(
        spec::shell(),
        json!({"command": "pwd"}),
        &[json!({"command": "pwd", "timeout_ms": SHELL_MAX_TIMEOUT_MS})],
        &[
            json!({"command": ""}),
            json!({"command": "pwd", "timeout_ms": 0}),
            json!({"command": "pwd", "timeout_ms": SHELL_MAX_TIMEOUT_MS + 1}),
        ],
    );
}

#[test]
fn the_process_tools() {
    check::<ProcessExecArgs>(
        spec::process_exec(),
        json!({"cmd": "npm run dev"}),
        &[json!({"cmd": "x", "workdir": "web", "name": "web", "port": 65535, "env": {"A": "b"}})],
        &[
            json!({"cmd": "x", "port": 0}),
            json!({"cmd": "x", "port": 65536}),
            json!({"cmd": "x", "name": "n".repeat(101)}),
        ],
    );
    check::<NoArgs>(spec::process_list(), json!({}), &[], &[json!({"id": "p1"})]);
    check::<ProcessReadArgs>(
        spec::process_read_output(),
        json!({"id": "p1"}),
        &[
            json!({"id": "p1", "stream": "stderr", "tail_lines": MAX_TAIL_LINES}),
            json!({"id": "p1", "stream": "stdout", "since": 0}),
        ],
        &[
            json!({"id": ""}),
            json!({"id": "p".repeat(33)}),
            json!({"id": "p1", "stream": "both"}),
            json!({"id": "p1", "tail_lines": 0}),
        ],
    );
    check::<ProcessStopArgs>(
        spec::process_stop(),
        json!({"id": "p1"}),
        &[json!({"id": "p1", "mode": "forced"})],
        &[json!({"id": "p1", "mode": "kill"})],
    );
    check::<ProcessIdArgs>(
        spec::process_proxy_info(),
        json!({"id": "p1"}),
        &[],
        &[json!({})],
    );
}
