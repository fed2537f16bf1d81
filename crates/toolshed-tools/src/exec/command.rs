//! The `system.exec_command` plugin: `exec_command`, `write_stdin`, the `command_run_*`
//! tools and the persistent `shell`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use toolshed_core::{
    BuiltinPlugin, CallContext, ConfigField, ConfigFieldType, Health, Plugin, PluginError,
    PluginKind, PluginManifest, Tool, ToolError, ToolOutput, ToolSpec,
};
use toolshed_ops::process::{OutputLimits, SpawnRequest, Stdin, Stop, Stream, Tty};
use toolshed_ops::sandbox::SandboxMode;
use toolshed_ops::{ProcessOps, Services};

use super::readiness::{QUIET_WITHOUT_PROMPT, Readiness, prompt_of};
use super::sessions::{NewSession, Session, SessionTable};
use super::shell::ShellTable;
use super::spec::{
    self, DEFAULT_OUTPUT_BYTES, ExecArgs, MAX_OUTPUT_BYTES, MAX_TIMEOUT_MS, MAX_YIELD_MS,
    MIN_OUTPUT_BYTES, NoArgs, ReadOutputArgs, ShellArg, TerminateArgs, WaitArgs, WriteStdinArgs,
};
use super::{
    GROUP, Table, clamp_wait, config_usize, exit_fields, exit_line, millis, owner, render,
};
use crate::args::parse;

/// The plugin id.
pub const EXEC_PLUGIN_ID: &str = "system.exec_command";

/// Config key: the most command sessions the host keeps.
pub(super) const MAX_SESSIONS: &str = "max_sessions";
const DEFAULT_MAX_SESSIONS: usize = 128;
pub(super) const MAX_SESSIONS_PER_OWNER: &str = "max_sessions_per_owner";
const DEFAULT_MAX_SESSIONS_PER_OWNER: usize = 16;

/// A command that prints more than this in all is killed: nobody reads 64 MiB of output.
const KILL_AFTER_BYTES: u64 = 64 * 1024 * 1024;
/// Once some output came after a write, a quiet spell this long ends the wait early.
const SETTLE: Duration = Duration::from_millis(50);
/// How much streamed output one progress report carries at most.
const PROGRESS_CHUNK: usize = 16 * 1024;

#[derive(Clone, Copy)]
enum Kind {
    Exec,
    WriteStdin,
    List,
    ReadOutput,
    Wait,
    Terminate,
    Shell,
}

struct CommandTool {
    spec: ToolSpec,
    kind: Kind,
    process: Arc<dyn ProcessOps>,
    table: Table,
    shells: Arc<ShellTable>,
}

#[async_trait]
impl Tool for CommandTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, ctx: CallContext, args: Value) -> Result<ToolOutput, ToolError> {
        match self.kind {
            Kind::Exec => {
                let args: ExecArgs = parse(args)?;
                let mode = super::effective_mode(args.sandbox.map(SandboxMode::from), &ctx);
                exec(&self.table, &self.process, &ctx, args)
                    .await
                    .map(|out| super::with_sandbox(self.process.as_ref(), mode, out))
            }
            Kind::WriteStdin => {
                // Modes left to the host are compared as the host's.
                let host = match self.process.sandbox(None) {
                    Ok(Some(e)) => e.mode,
                    _ => SandboxMode::FullAccess,
                };
                write_stdin(&self.table, &ctx, host, parse(args)?).await
            }
            Kind::List => {
                let NoArgs {} = parse(args)?;
                Ok(list(&self.table, &ctx))
            }
            Kind::ReadOutput => read_output(&self.table, &ctx, parse(args)?).await,
            Kind::Wait => wait(&self.table, &ctx, parse(args)?).await,
            Kind::Terminate => terminate(&self.table, &ctx, parse(args)?).await,
            Kind::Shell => self
                .shells
                .run(&ctx, parse(args)?)
                .await
                .map(|out| super::with_sandbox(self.process.as_ref(), None, out)),
        }
    }
}

/// The plugin: its tools share one session table, and stopping it stops every session.
struct ExecPlugin {
    inner: BuiltinPlugin,
    table: Table,
    shells: Arc<ShellTable>,
}

#[async_trait]
impl Plugin for ExecPlugin {
    fn manifest(&self) -> &PluginManifest {
        self.inner.manifest()
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.inner.tools()
    }

    async fn stop(&self) -> Result<(), PluginError> {
        self.table.stop_all().await;
        self.shells.stop_all().await;
        Ok(())
    }

    async fn running(&self) -> Vec<toolshed_core::Running> {
        self.table
            .all()
            .iter()
            .map(|s| toolshed_core::Running {
                kind: "command_session".into(),
                id: s.id.to_string(),
                owner: s.owner.clone(),
                summary: s.cmd.clone(),
                running: s.process.exit().is_none(),
                started_ms: s
                    .started
                    .duration_since(std::time::UNIX_EPOCH)
                    .ok()
                    .and_then(|d| i64::try_from(d.as_millis()).ok()),
                fields: json!({"session_id": s.id, "tty": s.tty, "pid": s.process.pid()}),
                stop: Some(toolshed_core::StopCall {
                    tool: "command_run_terminate".into(),
                    arguments: json!({"session_id": s.id}),
                }),
            })
            .collect()
    }

    fn running_output(&self, id: &str, max_bytes: usize) -> Option<String> {
        let id: u64 = id.parse().ok()?;
        let session = self.table.all().into_iter().find(|s| s.id == id)?;
        let total = session.process.output_len(Stream::Combined);
        let from = total.saturating_sub(u64::try_from(max_bytes).unwrap_or(u64::MAX));
        Some(super::render(&session.process, Stream::Combined, from, max_bytes).text)
    }

    async fn owner_ended(&self, owner: &toolshed_core::OwnerId) {
        self.table.stop_owner(owner).await;
        self.shells.stop_owner(owner).await;
    }

    async fn health(&self) -> Health {
        Health::Ok
    }
}

/// The `system.exec_command` plugin: commands start through the services' process
/// operations, and its gauges (live sessions and shells) are registered in theirs.
pub fn exec_plugin(services: &Services) -> Arc<dyn Plugin> {
    let gauges = &services.gauges;
    let table: Table = Arc::new(SessionTable::with_notices(services.notices.clone()));
    let shells = Arc::new(ShellTable::new(services.ops.process.clone()));
    {
        let table = table.clone();
        gauges.register(
            "toolshed_live_sessions",
            "Command sessions whose process is running.",
            move || table.running() as f64,
        );
        let shells = shells.clone();
        gauges.register(
            "toolshed_live_shells",
            "Persistent shells that are running.",
            move || shells.running() as f64,
        );
    }
    let specs = [
        (spec::exec_command(), Kind::Exec),
        (spec::write_stdin(), Kind::WriteStdin),
        (spec::command_run_list(), Kind::List),
        (spec::command_run_read_output(), Kind::ReadOutput),
        (spec::command_run_wait(), Kind::Wait),
        (spec::command_run_terminate(), Kind::Terminate),
        (spec::shell(), Kind::Shell),
    ];
    let tools: Vec<Arc<dyn Tool>> = specs
        .into_iter()
        .map(|(spec, kind)| {
            Arc::new(CommandTool {
                spec,
                kind,
                process: services.ops.process.clone(),
                table: table.clone(),
                shells: shells.clone(),
            }) as Arc<dyn Tool>
        })
        .collect();
    let mut manifest = PluginManifest::new(
        EXEC_PLUGIN_ID,
        env!("CARGO_PKG_VERSION"),
        "Command execution",
        PluginKind::Builtin,
    );
    manifest.description = "Run commands in the workspace: one-shot commands that may continue as sessions, terminals (PTY) you write to, and a persistent shell per caller. Children run in their own process group with a clean environment; stopping kills the whole tree.".into();
    manifest.tags = vec![GROUP.to_string()];
    manifest.config = vec![
        ConfigField {
            key: MAX_SESSIONS.into(),
            label: Some("Most command sessions".into()),
            field_type: ConfigFieldType::Number,
            description: Some("The most command sessions kept at once, all callers together; finished sessions are evicted first.".into()),
            default: Some(json!(DEFAULT_MAX_SESSIONS)),
            options: Vec::new(),
            secret: false,
            required: false,
            writable: false,
        },
        ConfigField {
            key: MAX_SESSIONS_PER_OWNER.into(),
            label: Some("Most command sessions per owner".into()),
            field_type: ConfigFieldType::Number,
            description: Some("The most command sessions one owner keeps at once (sub-owners count as their owner); the owner's finished sessions are evicted first.".into()),
            default: Some(json!(DEFAULT_MAX_SESSIONS_PER_OWNER)),
            options: Vec::new(),
            secret: false,
            required: false,
            writable: false,
        },
    ];
    Arc::new(ExecPlugin {
        inner: BuiltinPlugin::new(manifest, tools),
        table,
        shells,
    })
}

/// How many output bytes a reply may carry, given `max_output_bytes`.
fn budget(max_output_bytes: u64) -> usize {
    max_output_bytes.clamp(MIN_OUTPUT_BYTES, MAX_OUTPUT_BYTES) as usize
}

/// Builds the spawn request for a command line run by `shell` in `workdir` with `env` added.
pub(crate) fn command_request(
    shell: &str,
    cmd: &str,
    workdir: Option<&str>,
    env: Option<&BTreeMap<String, String>>,
) -> SpawnRequest {
    let mut request = SpawnRequest::new(shell).arg("-c").arg(cmd);
    // Interpreters and packages the command names by path (a virtualenv's python, a
    // script in node_modules) stay visible wherever they live, /tmp included.
    request.visible = toolshed_ops::sandbox::named_programs(cmd);
    if let Some(dir) = workdir {
        request = request.workdir(dir);
    }
    for (name, value) in env.into_iter().flatten() {
        request = request.env(name, value);
    }
    request
}

/// A command line for PowerShell: `pwsh -NoLogo -NoProfile -NonInteractive -Command CMD`.
fn pwsh_request(
    cmd: &str,
    workdir: Option<&str>,
    env: Option<&BTreeMap<String, String>>,
) -> SpawnRequest {
    let mut request = SpawnRequest::new("pwsh");
    for arg in ["-NoLogo", "-NoProfile", "-NonInteractive", "-Command", cmd] {
        request = request.arg(arg);
    }
    if let Some(dir) = workdir {
        request = request.workdir(dir);
    }
    for (name, value) in env.into_iter().flatten() {
        request = request.env(name, value);
    }
    request
}

/// `shell: "pwsh"` where PowerShell is not installed.
fn no_pwsh() -> ToolError {
    ToolError::Unconfigured {
        message: "PowerShell (`pwsh`) is not installed where commands run: install PowerShell 7 \
                  so that `pwsh` is on the PATH toolshed runs commands with, or leave out \
                  `shell` to run cmd with bash. See docs/exec.md"
            .into(),
        variables: vec!["PATH".into()],
    }
}

async fn exec(
    table: &SessionTable,
    process: &Arc<dyn ProcessOps>,
    ctx: &CallContext,
    args: ExecArgs,
) -> Result<ToolOutput, ToolError> {
    let cmd = args.cmd.as_str();
    if cmd.trim().is_empty() {
        return Err(ToolError::invalid(
            "cmd is empty: give a command line to run",
        ));
    }
    let tty = args.tty;
    let timeout = millis("timeout_ms", args.timeout_ms, 1, MAX_TIMEOUT_MS)?;
    let yield_for = millis("yield_ms", args.yield_ms, 0, MAX_YIELD_MS)?;
    let budget = budget(args.max_output_bytes);
    let mut request = match args.shell {
        Some(ShellArg::Pwsh) => pwsh_request(cmd, args.workdir.as_deref(), args.env.as_ref()),
        Some(ShellArg::Sh) => {
            command_request("sh", cmd, args.workdir.as_deref(), args.env.as_ref())
        }
        Some(ShellArg::Bash) | None => command_request(
            process.shell(),
            cmd,
            args.workdir.as_deref(),
            args.env.as_ref(),
        ),
    }
    .limits(OutputLimits {
        kill_after_bytes: Some(KILL_AFTER_BYTES),
        ..OutputLimits::default()
    });
    request.sandbox = super::effective_mode(args.sandbox.map(SandboxMode::from), ctx);
    request.escalation_approved = ctx.approved;
    request.write_scope = ctx.write_scope.clone();
    super::add_command_env(&mut request, ctx);
    if tty {
        request = request.tty(Tty::DEFAULT);
    } else if args.stdin {
        request = request.stdin(Stdin::Piped);
    }
    request.validate().map_err(ToolError::from)?;
    let owner_id = owner(ctx);
    let room = super::Room {
        owner: &owner_id,
        max: config_usize(ctx, MAX_SESSIONS, DEFAULT_MAX_SESSIONS),
        max_per_owner: config_usize(ctx, MAX_SESSIONS_PER_OWNER, DEFAULT_MAX_SESSIONS_PER_OWNER),
        what: "command sessions",
        plugin: EXEC_PLUGIN_ID,
        key: MAX_SESSIONS,
        key_per_owner: MAX_SESSIONS_PER_OWNER,
        stop_with: "stop one with command_run_terminate",
    };
    let session = table.start(
        &room,
        NewSession {
            owner: owner_id.clone(),
            cmd: cmd.to_string(),
            tty,
            timeout,
            mode: request.sandbox,
            write_scope: request.write_scope.clone(),
        },
        || {
            process.spawn(&request).map_err(|e| match e {
                toolshed_ops::OpsError::ProgramNotFound { .. }
                    if args.shell == Some(ShellArg::Pwsh) =>
                {
                    no_pwsh()
                }
                other => ToolError::from(other),
            })
        },
    )?;
    watch_timeout(session.clone());

    let started = Instant::now();
    let window = clamp_wait(ctx, yield_for);
    let mut streamed = 0u64;
    loop {
        if session.process.exit().is_some() {
            break;
        }
        let left = window.saturating_sub(started.elapsed());
        if left.is_zero() {
            break;
        }
        tokio::select! {
            chunk = session.process.read_wait(Stream::Combined, streamed, PROGRESS_CHUNK, left) => {
                if !chunk.bytes.is_empty() {
                    ctx.progress.message(super::terminal::clean(&chunk.bytes));
                }
                streamed = chunk.next;
                if chunk.bytes.is_empty() && chunk.skipped == 0 {
                    // Nothing new: either the window passed or the process ended.
                    let _ = session.process.wait(Duration::from_millis(1)).await;
                }
            }
            () = ctx.cancel.cancelled() => {
                table.remove(session.id);
                session.process.start_stop(Stop::Graceful { grace: Duration::from_secs(1) });
                return Err(ToolError::Cancelled);
            }
        }
    }
    match session.process.exit() {
        Some(_) => {
            table.remove(session.id);
            let mut reply = finished_reply(&session, budget, None);
            // The session is gone: there is nothing to continue.
            if let Some(Value::Object(fields)) = reply.structured.as_mut() {
                fields.remove("session_id");
            }
            Ok(reply)
        }
        None => {
            table.announce_close(&session);
            Ok(running_reply(&session, budget))
        }
    }
}

/// Stops the session's tree when its time limit passes, whoever is (not) watching.
fn watch_timeout(session: Arc<Session>) {
    tokio::spawn(async move {
        if session.process.wait(session.timeout).await.is_none() {
            session
                .timed_out
                .store(true, std::sync::atomic::Ordering::Release);
            session.process.terminate(Stop::graceful()).await;
        }
    });
}

/// The reply once the session's process has ended: its output since the cursor and how it
/// ended.
fn finished_reply(session: &Session, budget: usize, extra: Option<(&str, Value)>) -> ToolOutput {
    let out = render(&session.process, Stream::Combined, session.cursor(), budget);
    session.advance(out.next);
    let mut fields = Map::new();
    fields.insert("session_id".into(), json!(session.id));
    fields.insert("running".into(), json!(false));
    if let Some(exit) = session.process.exit() {
        let timed_out = session.timed_out.load(std::sync::atomic::Ordering::Acquire);
        exit_fields(&exit, timed_out, &mut fields);
    }
    if let Some((key, value)) = extra {
        fields.insert(key.into(), value);
    }
    let footer = exit_line(&fields);
    fields.insert("next_offset".into(), json!(out.next));
    fields.insert("omitted_bytes".into(), json!(out.omitted));
    let text = join(&out.text, &footer);
    fields.insert("output".into(), json!(out.text));
    // A non-zero exit code, a signal (a crash, a kill, a resource limit), a timeout or the
    // output limit: the command failed.
    let failed = fields
        .get("exit_code")
        .and_then(Value::as_i64)
        .is_some_and(|c| c != 0)
        || fields.contains_key("signal")
        || session.timed_out.load(std::sync::atomic::Ordering::Acquire)
        || matches!(
            session.process.exit().and_then(|e| e.stopped),
            Some(toolshed_ops::process::StopReason::OutputLimit)
        );
    let output = ToolOutput::text_and_structured(text, Value::Object(fields));
    if failed { output.into_error() } else { output }
}

fn running_reply(session: &Session, budget: usize) -> ToolOutput {
    let out = render(&session.process, Stream::Combined, session.cursor(), budget);
    session.advance(out.next);
    let elapsed = session
        .started
        .elapsed()
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let footer = format!(
        "[still running as session {} after {:.2} s · write_stdin, command_run_read_output, command_run_wait or command_run_terminate with session_id={}]",
        session.id,
        elapsed as f64 / 1000.0,
        session.id
    );
    let fields = json!({
        "session_id": session.id,
        "running": true,
        "wall_time_ms": u64::try_from(elapsed).unwrap_or(u64::MAX),
        "output": out.text,
        "next_offset": out.next,
        "omitted_bytes": out.omitted,
    });
    ToolOutput::text_and_structured(join(&out.text, &footer), fields)
}

fn reply(session: &Session, budget: usize) -> ToolOutput {
    if session.process.exit().is_some() {
        finished_reply(session, budget, None)
    } else {
        running_reply(session, budget)
    }
}

fn join(output: &str, footer: &str) -> String {
    if output.is_empty() {
        footer.to_string()
    } else if output.ends_with('\n') {
        format!("{output}{footer}")
    } else {
        format!("{output}\n{footer}")
    }
}

async fn write_stdin(
    table: &SessionTable,
    ctx: &CallContext,
    host: SandboxMode,
    args: WriteStdinArgs,
) -> Result<ToolOutput, ToolError> {
    let session = table.get(&owner(ctx), args.session_id)?;
    session.may_type(super::effective_mode(None, ctx), host, &ctx.write_scope)?;
    let chars = args.chars.as_str();
    let yield_for = clamp_wait(ctx, millis("yield_ms", args.yield_ms, 0, MAX_YIELD_MS)?);
    let before = session.process.output_len(Stream::Combined);
    if !chars.is_empty() {
        if session.process.exit().is_some() {
            return Err(ToolError::Conflict(format!(
                "session {} has finished; its input is closed (command_run_read_output shows its last output)",
                session.id
            )));
        }
        session.process.write(chars.as_bytes()).map_err(|e| match e {
            toolshed_ops::OpsError::StdinClosed { .. } => ToolError::Conflict(format!(
                "session {} takes no input: start the command with tty=true (a terminal) or stdin=true (a pipe)",
                session.id
            )),
            other => ToolError::from(other),
        })?;
    }
    let echo = if session.tty {
        chars.len() as u64 + 1
    } else {
        0
    };
    let readiness = settle(&session, ctx, yield_for, before + echo).await?;
    let mut output = reply(&session, budget(args.max_output_bytes));
    if let Some(Value::Object(fields)) = &mut output.structured {
        fields.insert("terminal".into(), readiness.to_json());
    }
    if let (Readiness::Ready(prompt), Some(toolshed_core::Content::Text { text })) =
        (&readiness, output.content.first_mut())
    {
        text.push_str(&format!(
            "\n[ready for input: the prompt `{}` is shown]",
            prompt.trim_end()
        ));
    }
    Ok(output)
}

/// Waits until the session answered what was typed (output beyond `answer_from`: past
/// what was there before the write, and past a terminal's echo of it) and is ready for
/// more: its output ends with a prompt. A pipe's answer ends at the first quiet spell of
/// [`SETTLE`]; a terminal's at a prompt, or after [`QUIET_WITHOUT_PROMPT`] of quiet with
/// none. Also ends when the process exits or `window` passes.
async fn settle(
    session: &Session,
    ctx: &CallContext,
    window: Duration,
    answer_from: u64,
) -> Result<Readiness, ToolError> {
    let started = Instant::now();
    let mut seen = session.process.output_len(Stream::Combined);
    let mut quiet_since = Instant::now();
    loop {
        if session.process.exit().is_some() {
            return Ok(Readiness::Exited);
        }
        let left = window.saturating_sub(started.elapsed());
        if left.is_zero() {
            return Ok(prompt_of(session).map_or(Readiness::Busy, Readiness::Ready));
        }
        let answered = seen > answer_from;
        let wait = if answered { left.min(SETTLE) } else { left };
        tokio::select! {
            chunk = session.process.read_wait(Stream::Combined, seen, 1, wait) => {
                if chunk.total > seen {
                    seen = chunk.total;
                    quiet_since = Instant::now();
                } else if answered {
                    if let Some(prompt) = prompt_of(session) {
                        return Ok(Readiness::Ready(prompt));
                    }
                    if !session.tty || quiet_since.elapsed() >= QUIET_WITHOUT_PROMPT {
                        return Ok(Readiness::Quiet);
                    }
                }
            }
            () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
        }
    }
}

fn list(table: &SessionTable, ctx: &CallContext) -> ToolOutput {
    let sessions = table.of(&owner(ctx));
    let mut lines = Vec::new();
    let items: Vec<Value> = sessions
        .iter()
        .map(|s| {
            let mut item = Map::new();
            item.insert("session_id".into(), json!(s.id));
            item.insert("cmd".into(), json!(s.cmd));
            item.insert("tty".into(), json!(s.tty));
            item.insert("running".into(), json!(s.process.exit().is_none()));
            item.insert("pid".into(), json!(s.process.pid()));
            item.insert(
                "output_bytes".into(),
                json!(s.process.output_len(Stream::Combined)),
            );
            item.insert(
                "unread_bytes".into(),
                json!(
                    s.process
                        .output_len(Stream::Combined)
                        .saturating_sub(s.cursor())
                ),
            );
            if let Some(exit) = s.process.exit() {
                exit_fields(
                    &exit,
                    s.timed_out.load(std::sync::atomic::Ordering::Acquire),
                    &mut item,
                );
            } else {
                let ms = s.started.elapsed().map(|d| d.as_millis()).unwrap_or(0);
                item.insert(
                    "wall_time_ms".into(),
                    json!(u64::try_from(ms).unwrap_or(u64::MAX)),
                );
            }
            let state = if s.process.exit().is_some() {
                exit_line(&item)
            } else {
                "[running]".into()
            };
            lines.push(format!("{:>4}  {}  {}", s.id, state, s.cmd));
            Value::Object(item)
        })
        .collect();
    let text = if lines.is_empty() {
        "no command sessions".to_string()
    } else {
        lines.join("\n")
    };
    ToolOutput::text_and_structured(text, json!({ "sessions": items }))
}

async fn read_output(
    table: &SessionTable,
    ctx: &CallContext,
    args: ReadOutputArgs,
) -> Result<ToolOutput, ToolError> {
    let session = table.get(&owner(ctx), args.session_id)?;
    let since = args.since;
    let wait_for = clamp_wait(ctx, millis("wait_ms", args.wait_ms, 0, MAX_YIELD_MS)?);
    let from = since.unwrap_or_else(|| session.cursor());
    if session.process.output_len(Stream::Combined) <= from && !wait_for.is_zero() {
        tokio::select! {
            _ = session.process.read_wait(Stream::Combined, from, 1, wait_for) => {}
            () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
        }
    }
    let out = render(
        &session.process,
        Stream::Combined,
        from,
        budget(args.max_output_bytes),
    );
    if since.is_none() {
        session.advance(out.next);
    }
    let mut fields = Map::new();
    fields.insert("session_id".into(), json!(session.id));
    fields.insert("running".into(), json!(session.process.exit().is_none()));
    if let Some(exit) = session.process.exit() {
        exit_fields(
            &exit,
            session.timed_out.load(std::sync::atomic::Ordering::Acquire),
            &mut fields,
        );
    }
    let footer = if session.process.exit().is_some() {
        exit_line(&fields)
    } else {
        format!(
            "[session {} still running · next_offset {}]",
            session.id, out.next
        )
    };
    fields.insert("output".into(), json!(out.text));
    fields.insert("next_offset".into(), json!(out.next));
    fields.insert("omitted_bytes".into(), json!(out.omitted));
    Ok(ToolOutput::text_and_structured(
        join(&out.text, &footer),
        Value::Object(fields),
    ))
}

async fn wait(
    table: &SessionTable,
    ctx: &CallContext,
    args: WaitArgs,
) -> Result<ToolOutput, ToolError> {
    let session = table.get(&owner(ctx), args.session_id)?;
    let wait_for = clamp_wait(ctx, millis("timeout_ms", args.timeout_ms, 0, MAX_YIELD_MS)?);
    tokio::select! {
        _ = session.process.wait(wait_for) => {}
        () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
    }
    Ok(reply(&session, budget(args.max_output_bytes)))
}

async fn terminate(
    table: &SessionTable,
    ctx: &CallContext,
    args: TerminateArgs,
) -> Result<ToolOutput, ToolError> {
    let session = table.get(&owner(ctx), args.session_id)?;
    let stop = if args.force {
        Stop::Forced
    } else {
        Stop::graceful()
    };
    // Also after the command exited: what it left running in the background goes too.
    session.process.terminate(stop).await;
    Ok(finished_reply(
        &session,
        DEFAULT_OUTPUT_BYTES as usize,
        None,
    ))
}
