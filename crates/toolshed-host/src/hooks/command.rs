//! Command hooks that speak Claude Code's hook protocol.
//!
//! ```toml
//! [[hooks.pre_tool_use]]
//! matcher = "group:exec"            # review-rule forms, `|` or `,` between them; `*`: all
//! command = "~/.config/agent-hooks/block-rm.sh"
//! timeout_ms = 10000
//! ```
//!
//! toolshed runs the command (`bash -c`, through the process backend, so inside the command
//! sandbox) with the event as JSON on stdin: `session_id` (the owner), `hook_event_name`
//! (`PreToolUse`, `PostToolUse`), `tool_name`, `tool_input`, `cwd` and, after the tool,
//! `tool_response`. What it says back:
//!
//! - exit code 2: block; stderr is the reason the model reads (after the tool: appended to
//!   the result, marked as an error);
//! - exit code 0 with JSON on stdout: `hookSpecificOutput.permissionDecision` (or the older
//!   `decision`) `allow` | `deny` | `ask` with `permissionDecisionReason` / `reason`;
//!   `hookSpecificOutput.updatedInput` (the arguments to run with instead);
//!   `hookSpecificOutput.additionalContext` (text appended to the result); after the tool,
//!   `decision = "block"` with `reason`; `continue = false` with `stopReason` blocks too;
//! - exit code 0 without JSON: go on.
//!
//! A pre hook that fails (another exit code, a timeout, output that is not the protocol)
//! blocks the call: a broken guard must not wave calls through. A post hook that fails
//! leaves the result as it was, with a note.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolshed_core::{Content, HttpClient, HttpRequest, NetPolicy, OwnerId, ToolError, ToolOutput};
use toolshed_ops::ProcessOps;
use toolshed_ops::process::{ExitStatus, OutputLimits, SpawnRequest, Stdin, Stop, Stream};

use super::{CallHook, HookDecision};
use crate::review::{Matcher, RuleError, Subject};

/// The most bytes a hook may print before it is killed.
const MAX_HOOK_OUTPUT: u64 = 1024 * 1024;

/// The longest a hook may run.
pub const MAX_HOOK_TIMEOUT_MS: u64 = 600_000;

/// `[hooks]`: command hooks run before and after tools.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct HooksConfig {
    /// Run before a matching tool; may block, rewrite or ask.
    pub pre_tool_use: Vec<HookEntry>,
    /// Run after a matching tool; may add to its result or flag it.
    pub post_tool_use: Vec<HookEntry>,
    /// Run when an MCP client's session starts (fire-and-forget).
    pub session_start: Vec<HookEntry>,
    /// Run when an MCP client's session ends (fire-and-forget).
    pub session_end: Vec<HookEntry>,
    /// Run when a person submits a prompt toolshed sees: an MCP prompt got (a human
    /// command, a skill), fire-and-forget.
    pub user_prompt_submit: Vec<HookEntry>,
}

/// One configured hook.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HookEntry {
    /// Which tools: review-rule forms (`exec_command`, `group:exec`, `danger:high`, …)
    /// separated by `|` or `,`; `*` or empty: every tool.
    pub matcher: String,
    /// The command line, run by `bash -c` in the workspace; Codex's argv form (`["./hook.sh",
    /// "--flag"]`) is taken too, each word quoted.
    #[serde(deserialize_with = "string_or_argv")]
    pub command: String,
    /// Instead of a command: an `http` or `https` URL the event is POSTed to as JSON; the
    /// response body is read like a command's stdout (a non-2xx status is a failure).
    pub url: String,
    /// How long it may run, in milliseconds.
    pub timeout_ms: u64,
    /// How long it may run, in seconds (Codex's `timeout`); wins over `timeout_ms`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// Whose hook protocol it speaks: `claude` (the default) or `codex` — Codex's payload
    /// (`tool_output` beside `tool_response`, `transcript_path`) and its `systemMessage`.
    pub protocol: String,
}

/// A command written as one string, or as Codex's argv list (each word quoted for bash).
fn string_or_argv<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Command {
        Line(String),
        Argv(Vec<String>),
    }
    Ok(match Command::deserialize(deserializer)? {
        Command::Line(line) => line,
        Command::Argv(words) => words
            .iter()
            .map(|w| {
                if !w.is_empty()
                    && w.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+~".contains(c))
                {
                    w.clone()
                } else {
                    format!("'{}'", w.replace('\'', "'\\''"))
                }
            })
            .collect::<Vec<_>>()
            .join(" "),
    })
}

impl Default for HookEntry {
    fn default() -> Self {
        Self {
            matcher: "*".into(),
            command: String::new(),
            url: String::new(),
            timeout_ms: 10_000,
            timeout: None,
            protocol: "claude".into(),
        }
    }
}

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    /// Before the tool.
    PreToolUse,
    /// After the tool.
    PostToolUse,
    /// An MCP session started.
    SessionStart,
    /// An MCP session ended.
    SessionEnd,
    /// A person submitted a prompt (an MCP prompt got).
    UserPromptSubmit,
}

impl HookEvent {
    pub(crate) fn name(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
        }
    }

    /// Whether it is about a tool call (the others are fired and forgotten).
    fn on_tools(self) -> bool {
        matches!(self, HookEvent::PreToolUse | HookEvent::PostToolUse)
    }
}

/// Where a hook runs.
enum Target {
    /// `bash -c COMMAND` through the process backend.
    Command(String),
    /// POST to this URL through the host's HTTP client.
    Url { url: String, host: String },
}

/// A configured command (or HTTP) hook.
pub(crate) struct CommandHook {
    event: HookEvent,
    /// Speaks Codex's protocol.
    codex: bool,
    matchers: Vec<Matcher>,
    target: Target,
    timeout: Duration,
    cwd: String,
    process: Arc<dyn ProcessOps>,
    http: Arc<dyn HttpClient>,
}

impl std::fmt::Debug for CommandHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandHook")
            .field("event", &self.event)
            .field("hook", &self.label())
            .finish_non_exhaustive()
    }
}

/// What a hook run gave.
struct Ran {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl CommandHook {
    /// The hooks of `config`, run through `process` in the workspace `cwd`; an error names
    /// the entry that is wrong.
    pub(crate) fn from_config(
        config: &HooksConfig,
        process: &Arc<dyn ProcessOps>,
        http: &Arc<dyn HttpClient>,
        cwd: &std::path::Path,
    ) -> Result<Vec<CommandHook>, RuleError> {
        let mut hooks = Vec::new();
        for (event, key, entries) in [
            (HookEvent::PreToolUse, "pre_tool_use", &config.pre_tool_use),
            (
                HookEvent::PostToolUse,
                "post_tool_use",
                &config.post_tool_use,
            ),
            (
                HookEvent::SessionStart,
                "session_start",
                &config.session_start,
            ),
            (HookEvent::SessionEnd, "session_end", &config.session_end),
            (
                HookEvent::UserPromptSubmit,
                "user_prompt_submit",
                &config.user_prompt_submit,
            ),
        ] {
            for (i, entry) in entries.iter().enumerate() {
                let source = format!("hooks.{key}[{i}]");
                let error = |pattern: &str, message: String| RuleError {
                    source_name: source.clone(),
                    pattern: pattern.to_string(),
                    message,
                };
                let target = match (entry.command.trim(), entry.url.trim()) {
                    ("", "") => {
                        return Err(error(
                            "command",
                            "give the command line to run, or a url to POST to".into(),
                        ));
                    }
                    (command, "") => Target::Command(command.to_string()),
                    ("", url) => {
                        let host =
                            crate::kit::http_host(url).map_err(|m| error(url, m.to_string()))?;
                        Target::Url {
                            url: url.to_string(),
                            host,
                        }
                    }
                    _ => {
                        return Err(error(
                            "command",
                            "give either command or url, not both".into(),
                        ));
                    }
                };
                let timeout_ms = entry
                    .timeout
                    .map_or(entry.timeout_ms, |secs| secs.saturating_mul(1000));
                if !(1..=MAX_HOOK_TIMEOUT_MS).contains(&timeout_ms) {
                    return Err(error(
                        "timeout_ms",
                        format!(
                            "{timeout_ms} ms is out of range: 1 to {MAX_HOOK_TIMEOUT_MS} (timeout: 1 to {} s)",
                            MAX_HOOK_TIMEOUT_MS / 1000
                        ),
                    ));
                }
                let codex = match entry.protocol.as_str() {
                    "claude" | "" => false,
                    "codex" => true,
                    other => {
                        return Err(error(
                            other,
                            "protocol is `claude` (the default) or `codex`".into(),
                        ));
                    }
                };
                // Tool hooks match tools; the others run for every session or prompt.
                let matchers = if event.on_tools() {
                    entry
                        .matcher
                        .split(['|', ','])
                        .map(str::trim)
                        .filter(|p| !p.is_empty() && *p != "*")
                        .map(|p| Matcher::parse(p).map_err(|m| error(p, m)))
                        .collect::<Result<_, _>>()?
                } else {
                    Vec::new()
                };
                hooks.push(CommandHook {
                    event,
                    codex,
                    matchers,
                    target,
                    timeout: Duration::from_millis(timeout_ms),
                    cwd: cwd.display().to_string(),
                    process: process.clone(),
                    http: http.clone(),
                });
            }
        }
        Ok(hooks)
    }

    /// Runs the hook with `input`: on a command's stdin, or as an HTTP POST body.
    async fn run(&self, input: &Value) -> Result<Ran, String> {
        let command = match &self.target {
            Target::Command(command) => command,
            Target::Url { url, host } => return self.post(url, host, input).await,
        };
        let request = SpawnRequest::new(self.process.shell())
            .arg("-c")
            .arg(command)
            .stdin(Stdin::Piped)
            .limits(OutputLimits {
                head_bytes: 64 * 1024,
                tail_bytes: 64 * 1024,
                kill_after_bytes: Some(MAX_HOOK_OUTPUT),
            });
        let process = self
            .process
            .spawn(&request)
            .map_err(|e| format!("cannot start it: {e}"))?;
        let bytes = input.to_string().into_bytes();
        let deadline = tokio::time::Instant::now() + self.timeout;
        let mut rest: &[u8] = &bytes;
        while !rest.is_empty() {
            let n = rest.len().min(64 * 1024);
            match process.write(&rest[..n]) {
                Ok(()) => rest = &rest[n..],
                Err(toolshed_ops::OpsError::StdinFull { .. })
                    if tokio::time::Instant::now() < deadline =>
                {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                // It stopped reading (exited, or closed stdin): what it says decides.
                Err(_) => break,
            }
        }
        process.close_stdin();
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let Some(exit) = process.wait(left).await else {
            process.terminate(Stop::Forced).await;
            return Err(format!(
                "it did not finish within {} ms",
                self.timeout.as_millis()
            ));
        };
        Ok(Ran {
            status: exit.status,
            stdout: process.snapshot(Stream::Stdout).text(),
            stderr: process.snapshot(Stream::Stderr).text(),
        })
    }

    /// POSTs `input` to `url` (only its own host may be reached: a person named it); the
    /// body of a 2xx answer is read like a command's stdout.
    async fn post(&self, url: &str, host: &str, input: &Value) -> Result<Ran, String> {
        let request = HttpRequest {
            method: "POST".into(),
            url: url.to_string(),
            headers: vec![("content-type".into(), "application/json".into())],
            body: Some(input.to_string().into_bytes()),
            timeout: self.timeout,
            max_response_bytes: MAX_HOOK_OUTPUT as usize,
        };
        let policy = NetPolicy::Only(vec![host.to_string()]);
        let response = self
            .http
            .send(
                request,
                &policy,
                &tokio_util::sync::CancellationToken::new(),
            )
            .await
            .map_err(|e| e.to_string())?;
        let body = String::from_utf8_lossy(&response.body).into_owned();
        if !(200..300).contains(&response.status) {
            return Err(format!(
                "it answered HTTP {}: {}",
                response.status,
                body.chars().take(200).collect::<String>()
            ));
        }
        Ok(Ran {
            status: ExitStatus::Code(0),
            stdout: body,
            stderr: String::new(),
        })
    }

    fn input(&self, tool: &str, owner: &OwnerId, args: &Value) -> Value {
        let mut input = json!({
            "session_id": owner.0,
            "hook_event_name": self.event.name(),
            "tool_name": tool,
            "tool_input": args,
            "cwd": self.cwd,
            "permission_mode": "default",
        });
        if self.codex {
            input["transcript_path"] = Value::Null;
        }
        input
    }

    /// Whether it runs around tool calls (the others fire on sessions and prompts).
    pub(crate) fn on_tools(&self) -> bool {
        self.event.on_tools()
    }

    /// Its event.
    pub(crate) fn event(&self) -> HookEvent {
        self.event
    }

    /// Runs it with `fields` (the event's own) added to the common ones, for what its
    /// answer cannot change: a failure is logged.
    pub(crate) async fn fire(&self, session_id: &str, fields: Value) {
        let mut input = json!({
            "session_id": session_id,
            "hook_event_name": self.event.name(),
            "cwd": self.cwd,
        });
        if self.codex {
            input["transcript_path"] = Value::Null;
        }
        if let (Value::Object(input), Value::Object(fields)) = (&mut input, fields) {
            input.extend(fields);
        }
        match self.run(&input).await {
            Ok(ran) if ran.status == ExitStatus::Code(0) => {}
            Ok(ran) => {
                tracing::warn!(hook = %self.label(), status = %ran.status, stderr = %ran.stderr.trim(), "a hook failed")
            }
            Err(why) => tracing::warn!(hook = %self.label(), error = %why, "a hook failed"),
        }
    }

    fn label(&self) -> String {
        let what = match &self.target {
            Target::Command(command) => command,
            Target::Url { url, .. } => url,
        };
        let shown: String = what.chars().take(80).collect();
        format!("{} hook `{shown}`", self.event.name())
    }
}

/// The JSON a hook printed, if it printed an object.
fn parsed(stdout: &str) -> Result<Option<Value>, String> {
    let trimmed = stdout.trim();
    if trimmed.is_empty() {
        return Ok(None);
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(v @ Value::Object(_)) => Ok(Some(v)),
        Ok(_) | Err(_) if !trimmed.starts_with('{') => Ok(None),
        _ => Err(format!(
            "its output is not valid hook JSON: {}",
            trimmed.chars().take(200).collect::<String>()
        )),
    }
}

fn text_of(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_string)
}

#[async_trait]
impl CallHook for CommandHook {
    fn matches(&self, subject: &Subject<'_>) -> bool {
        self.matchers.is_empty() || self.matchers.iter().any(|m| m.matches(subject))
    }

    async fn before(&self, tool: &str, owner: &OwnerId, args: &Value) -> HookDecision {
        if self.event != HookEvent::PreToolUse {
            return HookDecision::Continue;
        }
        let ran = match self.run(&self.input(tool, owner, args)).await {
            Ok(ran) => ran,
            Err(why) => return HookDecision::Block(format!("{} failed: {why}", self.label())),
        };
        match ran.status {
            ExitStatus::Code(0) => {}
            ExitStatus::Code(2) => {
                let said = ran.stderr.trim();
                return HookDecision::Block(if said.is_empty() {
                    format!("blocked by the {}", self.label())
                } else {
                    said.to_string()
                });
            }
            other => {
                return HookDecision::Block(format!(
                    "{} failed ({other}): {}",
                    self.label(),
                    ran.stderr.trim()
                ));
            }
        }
        let output = match parsed(&ran.stdout) {
            Ok(Some(output)) => output,
            Ok(None) => return HookDecision::Continue,
            Err(why) => return HookDecision::Block(format!("{} failed: {why}", self.label())),
        };
        if output.get("continue") == Some(&Value::Bool(false)) {
            return HookDecision::Block(
                text_of(&output, "stopReason")
                    .unwrap_or_else(|| format!("stopped by the {}", self.label())),
            );
        }
        let specific = output
            .get("hookSpecificOutput")
            .cloned()
            .unwrap_or(Value::Null);
        let decision = text_of(&specific, "permissionDecision").or_else(|| {
            text_of(&output, "decision").map(|d| match d.as_str() {
                "approve" => "allow".to_string(),
                "block" => "deny".to_string(),
                _ => d,
            })
        });
        let reason = text_of(&specific, "permissionDecisionReason")
            .or_else(|| text_of(&output, "reason"))
            .unwrap_or_else(|| format!("the {} said so", self.label()));
        match decision.as_deref() {
            Some("deny") => return HookDecision::Block(reason),
            Some("ask") => return HookDecision::Ask(reason),
            Some("allow") | None => {}
            Some(other) => {
                return HookDecision::Block(format!(
                    "{} answered permissionDecision `{other}`; use allow, deny or ask",
                    self.label()
                ));
            }
        }
        match specific.get("updatedInput") {
            Some(Value::Object(new)) => HookDecision::Rewrite(Value::Object(new.clone())),
            Some(_) => HookDecision::Block(format!(
                "{} gave an updatedInput that is not an object",
                self.label()
            )),
            None => HookDecision::Continue,
        }
    }

    async fn after(
        &self,
        tool: &str,
        owner: &OwnerId,
        args: &Value,
        result: Result<ToolOutput, ToolError>,
    ) -> Result<ToolOutput, ToolError> {
        if self.event != HookEvent::PostToolUse {
            return result;
        }
        let response = match &result {
            Ok(out) => {
                json!({"content": out.content, "structured": out.structured, "is_error": out.is_error})
            }
            Err(e) => json!({"error": {"kind": e.kind().as_str(), "message": e.to_string()}}),
        };
        let mut input = self.input(tool, owner, args);
        if self.codex {
            // Codex's hooks read the tool's output as text.
            input["tool_output"] = match &result {
                Ok(out) => Value::String(
                    out.content
                        .iter()
                        .filter_map(|c| match c {
                            Content::Text { text } => Some(text.as_str()),
                            _ => None,
                        })
                        .collect::<Vec<_>>()
                        .join("\n"),
                ),
                Err(e) => Value::String(e.to_string()),
            };
        }
        input["tool_response"] = response;
        let Ok(mut out) = result else {
            // A failed call has no result to add to; the hook still saw it.
            let _ = self.run(&input).await;
            return result;
        };
        let note = |out: &mut ToolOutput, text: String, error: bool| {
            out.content.push(Content::Text { text });
            out.is_error |= error;
        };
        match self.run(&input).await {
            Err(why) => note(&mut out, format!("[{} failed: {why}]", self.label()), false),
            Ok(ran) => match ran.status {
                ExitStatus::Code(0) => match parsed(&ran.stdout) {
                    Ok(Some(output)) => {
                        if text_of(&output, "decision").as_deref() == Some("block") {
                            let reason = text_of(&output, "reason")
                                .unwrap_or_else(|| format!("flagged by the {}", self.label()));
                            note(&mut out, reason, true);
                        }
                        if let Some(context) = output
                            .get("hookSpecificOutput")
                            .and_then(|s| text_of(s, "additionalContext"))
                        {
                            note(&mut out, context, false);
                        }
                        // Codex's hooks speak to the person (and here the model) this way.
                        if let Some(message) = text_of(&output, "systemMessage") {
                            note(&mut out, message, false);
                        }
                    }
                    Ok(None) => {}
                    Err(why) => note(&mut out, format!("[{} failed: {why}]", self.label()), false),
                },
                ExitStatus::Code(2) => note(&mut out, ran.stderr.trim().to_string(), true),
                other => note(
                    &mut out,
                    format!("[{} failed ({other}): {}]", self.label(), ran.stderr.trim()),
                    false,
                ),
            },
        }
        Ok(out)
    }
}
