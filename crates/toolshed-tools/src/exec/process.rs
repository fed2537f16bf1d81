//! The `system.process` plugin: detached background processes (dev servers, watchers) that
//! outlive the call that started them, with their logs kept in bounded ring buffers and an
//! HTTP proxy route under `toolshed serve`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use toolshed_core::{
    BuiltinPlugin, CallContext, ConfigField, ConfigFieldType, Health, Plugin, PluginError,
    PluginKind, PluginManifest, PortDirectory, ProxyTarget, Tool, ToolError, ToolOutput, ToolSpec,
};
use toolshed_ops::process::{OutputLimits, Process, Stop, Stream};
use toolshed_ops::sandbox::SandboxMode;
use toolshed_ops::{ProcessOps, Services};

use super::close::Close;
use super::command::command_request;
use super::spec::{
    self, MAX_TAIL_LINES, NoArgs, Output, ProcessExecArgs, ProcessIdArgs, ProcessReadArgs,
    ProcessStopArgs, StopMode,
};
use super::{GROUP, config_usize, exit_fields, exit_line, owner, render, render_to};
use crate::args::parse;

/// The plugin id.
pub const PROCESS_PLUGIN_ID: &str = "system.process";

/// Config key: the most background processes the host keeps.
pub(super) const MAX_PROCESSES: &str = "max_processes";
const DEFAULT_MAX_PROCESSES: usize = 64;
const MAX_PROCESSES_PER_OWNER: &str = "max_processes_per_owner";
const DEFAULT_MAX_PROCESSES_PER_OWNER: usize = 8;
/// How long `process_exec` watches a new process for an immediate failure.
const STARTUP_WATCH: Duration = Duration::from_millis(300);
const READ_BUDGET: usize = 32 * 1024;

struct Background {
    id: String,
    owner: String,
    name: Option<String>,
    cmd: String,
    port: Option<u16>,
    process: Arc<Process>,
    started: SystemTime,
    /// The stop someone asked for, once asked.
    close: Mutex<Option<Close>>,
}

impl Background {
    /// Records the stop asked for (the first one: a later stop of an ending process does not
    /// change who closed it).
    fn ask_close(&self, close: Close) -> Close {
        self.close
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(close)
            .clone()
    }

    fn close(&self) -> Option<Close> {
        self.close.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

struct ProcessTable {
    items: Mutex<BTreeMap<u64, Arc<Background>>>,
    next: AtomicU64,
    /// Where processes start.
    process: Arc<dyn ProcessOps>,
    /// Where ports are published for the HTTP proxy.
    ports: Arc<PortDirectory>,
    /// Where an exit is announced (`process.exited`).
    notices: Arc<toolshed_ops::Notices>,
    /// This replica's name, when replicas share the state: ids are `REPLICA.pN`.
    replica: Option<Arc<str>>,
}

impl ProcessTable {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<Background>>> {
        self.items.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn get(&self, owner: &str, id: &str) -> Result<Arc<Background>, ToolError> {
        self.lock()
            .values()
            .find(|b| b.id == id && b.owner == owner)
            .cloned()
            .ok_or_else(|| {
                // An id another replica made: say where it lives.
                if let (Some(mine), Some((theirs, _))) = (&self.replica, id.split_once('.'))
                    && theirs != &**mine
                {
                    return ToolError::NotFound(format!(
                        "background process `{id}` runs on replica `{theirs}`, and this is \
                         `{mine}`: processes live in the toolshed that started them. Send \
                         the call to `{theirs}` (a load balancer routes on the part of the \
                         id before the first `.`, as for MCP sessions), or start the \
                         process again here"
                    ));
                }
                ToolError::NotFound(format!(
                    "no background process `{id}`; process_list shows yours"
                ))
            })
    }

    /// The id of the `n`th process: `pN`, or `REPLICA.pN` when replicas share the state.
    fn id(&self, n: u64) -> String {
        match &self.replica {
            Some(replica) => format!("{replica}.p{n}"),
            None => format!("p{n}"),
        }
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Exec,
    List,
    Read,
    Stop,
    ProxyInfo,
}

struct ProcessTool {
    spec: ToolSpec,
    kind: Kind,
    table: Arc<ProcessTable>,
}

#[async_trait]
impl Tool for ProcessTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, ctx: CallContext, args: Value) -> Result<ToolOutput, ToolError> {
        match self.kind {
            Kind::Exec => {
                let args: ProcessExecArgs = parse(args)?;
                let mode = super::effective_mode(args.sandbox.map(SandboxMode::from), &ctx);
                start(&self.table, &ctx, args)
                    .await
                    .map(|out| super::with_sandbox(self.table.process.as_ref(), mode, out))
            }
            Kind::List => {
                let NoArgs {} = parse(args)?;
                Ok(list(&self.table, &ctx))
            }
            Kind::Read => read(&self.table, &ctx, parse(args)?),
            Kind::Stop => stop(&self.table, &ctx, parse(args)?).await,
            Kind::ProxyInfo => proxy_info(&self.table, &ctx, parse(args)?).await,
        }
    }
}

struct ProcessPlugin {
    inner: BuiltinPlugin,
    table: Arc<ProcessTable>,
}

#[async_trait]
impl Plugin for ProcessPlugin {
    fn manifest(&self) -> &PluginManifest {
        self.inner.manifest()
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.inner.tools()
    }

    async fn running(&self) -> Vec<toolshed_core::Running> {
        let items: Vec<Arc<Background>> = self.table.lock().values().cloned().collect();
        items
            .iter()
            .map(|item| toolshed_core::Running {
                kind: "process".into(),
                id: item.id.clone(),
                owner: item.owner.clone(),
                summary: item.cmd.clone(),
                running: item.process.exit().is_none(),
                started_ms: item
                    .started
                    .duration_since(std::time::UNIX_EPOCH)
                    .ok()
                    .and_then(|d| i64::try_from(d.as_millis()).ok()),
                fields: Value::Object(describe(item)),
                stop: Some(toolshed_core::StopCall {
                    tool: "process_stop".into(),
                    arguments: serde_json::json!({"id": item.id}),
                }),
            })
            .collect()
    }

    fn running_output(&self, id: &str, max_bytes: usize) -> Option<String> {
        let item = self.table.lock().values().find(|b| b.id == id).cloned()?;
        let total = item.process.output_len(Stream::Combined);
        let from = total.saturating_sub(u64::try_from(max_bytes).unwrap_or(u64::MAX));
        Some(render(&item.process, Stream::Combined, from, max_bytes).text)
    }

    async fn owner_ended(&self, owner: &toolshed_core::OwnerId) {
        let gone: Vec<Arc<Background>> = {
            let mut items = self.table.lock();
            let ids: Vec<u64> = items
                .iter()
                .filter(|(_, b)| owner.covers(&b.owner))
                .map(|(id, _)| *id)
                .collect();
            ids.iter().filter_map(|id| items.remove(id)).collect()
        };
        for item in &gone {
            item.ask_close(Close::new("owner-ended", "toolshed", Stop::graceful()));
            item.process.start_stop(Stop::graceful());
        }
        for item in gone {
            item.process.terminate(Stop::graceful()).await;
            self.table.ports.remove(&item.id);
        }
    }

    async fn stop(&self) -> Result<(), PluginError> {
        let all: Vec<Arc<Background>> = std::mem::take(&mut *self.table.lock())
            .into_values()
            .collect();
        for item in &all {
            item.ask_close(Close::new("shutdown", "toolshed", Stop::graceful()));
            item.process.start_stop(Stop::graceful());
        }
        for item in all {
            item.process.terminate(Stop::graceful()).await;
        }
        Ok(())
    }

    async fn health(&self) -> Health {
        Health::Ok
    }
}

/// The `system.process` plugin: processes start through the services' process operations,
/// their ports go into the services' port directory, and its gauge (running background
/// processes) is registered in theirs.
pub fn process_plugin(services: &Services) -> Arc<dyn Plugin> {
    let gauges = &services.gauges;
    let table = Arc::new(ProcessTable {
        items: Mutex::new(BTreeMap::new()),
        next: AtomicU64::new(0),
        process: services.ops.process.clone(),
        ports: services.ports.clone(),
        notices: services.notices.clone(),
        replica: services.replica.clone(),
    });
    {
        let table = table.clone();
        gauges.register(
            "toolshed_live_processes",
            "Background processes that are running.",
            move || {
                table
                    .lock()
                    .values()
                    .filter(|b| b.process.is_running())
                    .count() as f64
            },
        );
    }
    let specs = [
        (spec::process_exec(), Kind::Exec),
        (spec::process_list(), Kind::List),
        (spec::process_read_output(), Kind::Read),
        (spec::process_stop(), Kind::Stop),
        (spec::process_proxy_info(), Kind::ProxyInfo),
    ];
    let tools: Vec<Arc<dyn Tool>> = specs
        .into_iter()
        .map(|(spec, kind)| {
            Arc::new(ProcessTool {
                spec,
                kind,
                table: table.clone(),
            }) as Arc<dyn Tool>
        })
        .collect();
    let mut manifest = PluginManifest::new(
        PROCESS_PLUGIN_ID,
        env!("CARGO_PKG_VERSION"),
        "Background processes",
        PluginKind::Builtin,
    );
    manifest.description = "Start and watch long-running processes (dev servers, watchers) that outlive the call: logs in bounded ring buffers, exit status kept, stop the whole tree, reach a server through the proxy of `toolshed serve`.".into();
    manifest.tags = vec![GROUP.to_string()];
    manifest.config = vec![
        ConfigField {
            key: MAX_PROCESSES.into(),
            label: Some("Most background processes".into()),
            field_type: ConfigFieldType::Number,
            description: Some("The most background processes kept at once, all callers together; finished ones are evicted first.".into()),
            default: Some(json!(DEFAULT_MAX_PROCESSES)),
            options: Vec::new(),
            secret: false,
            required: false,
            writable: false,
        },
        ConfigField {
            key: MAX_PROCESSES_PER_OWNER.into(),
            label: Some("Most background processes per owner".into()),
            field_type: ConfigFieldType::Number,
            description: Some("The most background processes one owner keeps at once (sub-owners count as their owner); the owner's finished ones are evicted first.".into()),
            default: Some(json!(DEFAULT_MAX_PROCESSES_PER_OWNER)),
            options: Vec::new(),
            secret: false,
            required: false,
            writable: false,
        },
    ];
    Arc::new(ProcessPlugin {
        inner: BuiltinPlugin::new(manifest, tools),
        table,
    })
}

async fn start(
    table: &Arc<ProcessTable>,
    ctx: &CallContext,
    args: ProcessExecArgs,
) -> Result<ToolOutput, ToolError> {
    let cmd = args.cmd.as_str();
    if cmd.trim().is_empty() {
        return Err(ToolError::invalid(
            "cmd is empty: give a command line to run",
        ));
    }
    let port =
        args.port
            .map(|p| {
                u16::try_from(p).ok().filter(|p| *p > 0).ok_or_else(|| {
                    ToolError::invalid(format!("port {p} is out of range: 1 to 65535"))
                })
            })
            .transpose()?;
    let name = args.name;
    let mut request = command_request(
        table.process.shell(),
        cmd,
        args.workdir.as_deref(),
        args.env.as_ref(),
    )
    .limits(OutputLimits {
        head_bytes: 16 * 1024,
        tail_bytes: 1024 * 1024,
        kill_after_bytes: None,
    });
    request.sandbox = super::effective_mode(args.sandbox.map(SandboxMode::from), ctx);
    request.escalation_approved = ctx.approved;
    request.write_scope = ctx.write_scope.clone();
    super::add_command_env(&mut request, ctx);
    request.validate().map_err(ToolError::from)?;
    let owner_id = owner(ctx);
    let room = super::Room {
        owner: &owner_id,
        max: config_usize(ctx, MAX_PROCESSES, DEFAULT_MAX_PROCESSES),
        max_per_owner: config_usize(
            ctx,
            MAX_PROCESSES_PER_OWNER,
            DEFAULT_MAX_PROCESSES_PER_OWNER,
        ),
        what: "background processes",
        plugin: PROCESS_PLUGIN_ID,
        key: MAX_PROCESSES,
        key_per_owner: MAX_PROCESSES_PER_OWNER,
        stop_with: "stop one with process_stop",
    };
    let item = {
        let mut items = table.lock();
        super::make_room(
            &mut items,
            &room,
            |b: &Background| b.owner.as_str(),
            |b: &Background| b.process.is_running(),
        )?;
        let process = table.process.spawn(&request).map_err(ToolError::from)?;
        let n = table.next.fetch_add(1, Ordering::Relaxed) + 1;
        let item = Arc::new(Background {
            id: table.id(n),
            owner: owner_id.clone(),
            name,
            cmd: cmd.to_string(),
            port,
            process: Arc::new(process),
            started: SystemTime::now(),
            close: Mutex::new(None),
        });
        items.insert(n, item.clone());
        item
    };
    if let Some(port) = port {
        table.ports.insert(
            &item.id,
            ProxyTarget {
                port,
                owner: item.owner.clone(),
                via: item.process.inbound().map(std::path::Path::to_path_buf),
            },
        );
    }
    // When it ends: its port leaves the proxy's map, and its owner hears of it.
    {
        let watched = item.clone();
        let directory = table.ports.clone();
        let notices = table.notices.clone();
        tokio::spawn(async move {
            // Its output, pushed as it comes (at most once a second, 4 KiB each: the
            // rest is left for process_read_output), while anyone listens.
            let mut sent = 0u64;
            loop {
                let ended = watched.process.wait(OUTPUT_EVERY).await.is_some();
                push_output(&watched, &notices, &mut sent);
                if ended {
                    break;
                }
            }
            if watched.port.is_some() {
                directory.remove(&watched.id);
            }
            notices.publish(
                "process.exited",
                Some(&watched.owner),
                Value::Object(exited(&watched)),
            );
        });
    }
    // A command that fails at once (a typo, a missing program) says so now.
    let early = item.process.wait(STARTUP_WATCH).await;
    let mut fields = describe(&item);
    let mut text = format!(
        "started {} (pid {}){}",
        item.id,
        item.process.pid(),
        port.map(|p| format!(", listening on 127.0.0.1:{p} expected"))
            .unwrap_or_default()
    );
    if early.is_some() {
        let out = render(&item.process, Stream::Combined, 0, READ_BUDGET);
        text = format!(
            "{} exited right away {}\n{}",
            item.id,
            exit_line(&fields),
            out.text
        );
        fields.insert("output".into(), json!(out.text));
        return Ok(ToolOutput::text_and_structured(text, Value::Object(fields)).into_error());
    }
    text.push_str("; read its output with process_read_output, stop it with process_stop");
    Ok(ToolOutput::text_and_structured(text, Value::Object(fields)))
}

/// How often a background process's new output is pushed (`process.output`).
const OUTPUT_EVERY: Duration = Duration::from_secs(1);
/// The most output one `process.output` event carries; more is left out of it.
const OUTPUT_EVENT_BYTES: usize = 4 * 1024;

/// Announces what `item` printed since `sent` as `process.output` to its owner, when
/// anyone listens (else only moves `sent` on).
fn push_output(item: &Background, notices: &toolshed_ops::Notices, sent: &mut u64) {
    let len = item.process.output_len(Stream::Combined);
    if len <= *sent {
        return;
    }
    if !notices.listened() {
        *sent = len;
        return;
    }
    // The newest bytes when there is more than one event carries: a chatty process is
    // followed, not fallen behind on.
    let from = (*sent).max(len.saturating_sub(OUTPUT_EVENT_BYTES as u64));
    let out = render_to(
        &item.process,
        Stream::Combined,
        from,
        len,
        OUTPUT_EVENT_BYTES,
    );
    let skipped = from - *sent + out.omitted;
    *sent = out.next;
    let mut fields = Map::new();
    fields.insert("id".into(), json!(item.id));
    if let Some(name) = &item.name {
        fields.insert("name".into(), json!(name));
    }
    fields.insert("offset".into(), json!(from));
    fields.insert("text".into(), json!(out.text));
    if skipped > 0 {
        fields.insert("omitted".into(), json!(skipped));
    }
    notices.publish("process.output", Some(&item.owner), Value::Object(fields));
}

/// What `process.exited` says: which process, whose, and how it ended.
fn exited(item: &Background) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("id".into(), json!(item.id));
    fields.insert("owner".into(), json!(item.owner));
    if let Some(name) = &item.name {
        fields.insert("name".into(), json!(name));
    }
    fields.insert("pid".into(), json!(item.process.pid()));
    let exit = item.process.exit();
    if let Some(exit) = &exit {
        exit_fields(exit, false, &mut fields);
    }
    // A stop someone asked for: which, who, and whether it had to be forced.
    if let Some(close) = item.close() {
        fields.insert("close".into(), Value::Object(close.fields(exit.as_ref())));
    }
    fields
}

fn describe(item: &Background) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("id".into(), json!(item.id));
    fields.insert("name".into(), json!(item.name));
    fields.insert("cmd".into(), json!(item.cmd));
    fields.insert("pid".into(), json!(item.process.pid()));
    fields.insert("port".into(), json!(item.port));
    fields.insert("running".into(), json!(item.process.exit().is_none()));
    fields.insert(
        "stdout_bytes".into(),
        json!(item.process.output_len(Stream::Stdout)),
    );
    fields.insert(
        "stderr_bytes".into(),
        json!(item.process.output_len(Stream::Stderr)),
    );
    match item.process.exit() {
        Some(exit) => exit_fields(&exit, false, &mut fields),
        None => {
            let ms = item.started.elapsed().map(|d| d.as_millis()).unwrap_or(0);
            fields.insert(
                "wall_time_ms".into(),
                json!(u64::try_from(ms).unwrap_or(u64::MAX)),
            );
        }
    }
    fields
}

fn list(table: &ProcessTable, ctx: &CallContext) -> ToolOutput {
    let owner = owner(ctx);
    let items: Vec<Arc<Background>> = table
        .lock()
        .values()
        .filter(|b| b.owner == owner)
        .cloned()
        .collect();
    let mut lines = Vec::new();
    let described: Vec<Value> = items
        .iter()
        .map(|item| {
            let fields = describe(item);
            let state = if item.process.exit().is_some() {
                exit_line(&fields)
            } else {
                "[running]".to_string()
            };
            let label = item
                .name
                .as_deref()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default();
            lines.push(format!("{}{label}  {state}  {}", item.id, item.cmd));
            Value::Object(fields)
        })
        .collect();
    let text = if lines.is_empty() {
        "no background processes".to_string()
    } else {
        lines.join("\n")
    };
    ToolOutput::text_and_structured(text, json!({ "processes": described }))
}

fn read(
    table: &ProcessTable,
    ctx: &CallContext,
    args: ProcessReadArgs,
) -> Result<ToolOutput, ToolError> {
    let item = table.get(&owner(ctx), &args.id)?;
    let stream = match args.stream {
        Output::Combined => Stream::Combined,
        Output::Stdout => Stream::Stdout,
        Output::Stderr => Stream::Stderr,
    };
    let total = item.process.output_len(stream);
    let (text, next, omitted) = if let Some(since) = args.since {
        let out = render(&item.process, stream, since, READ_BUDGET);
        (out.text, out.next, out.omitted)
    } else {
        let lines = args.tail_lines.clamp(1, MAX_TAIL_LINES);
        let from = total.saturating_sub(256 * 1024);
        let out = render(&item.process, stream, from, 256 * 1024);
        let kept: Vec<&str> = out.text.lines().collect();
        let start = kept
            .len()
            .saturating_sub(usize::try_from(lines).unwrap_or(usize::MAX));
        let mut text = kept[start..].join("\n");
        if text.len() > READ_BUDGET {
            let mut cut = text.len() - READ_BUDGET;
            while !text.is_char_boundary(cut) {
                cut += 1;
            }
            text = format!("[… earlier lines omitted …]\n{}", &text[cut..]);
        }
        (text, out.next, 0)
    };
    let mut fields = describe(&item);
    let state = if item.process.exit().is_some() {
        exit_line(&fields)
    } else {
        format!("[{} running · next_offset {next}]", item.id)
    };
    fields.insert("output".into(), json!(text));
    fields.insert("next_offset".into(), json!(next));
    fields.insert("omitted_bytes".into(), json!(omitted));
    let body = if text.is_empty() {
        state
    } else {
        format!("{}\n{state}", text.trim_end_matches('\n'))
    };
    Ok(ToolOutput::text_and_structured(body, Value::Object(fields)))
}

async fn stop(
    table: &ProcessTable,
    ctx: &CallContext,
    args: ProcessStopArgs,
) -> Result<ToolOutput, ToolError> {
    let item = table.get(&owner(ctx), &args.id)?;
    let stop = match args.mode {
        StopMode::Graceful => Stop::graceful(),
        StopMode::Forced => Stop::Forced,
    };
    let was_running = item.process.exit().is_none();
    // The close request is this call: its audit row records it.
    let close =
        was_running.then(|| item.ask_close(Close::new(ctx.call_id.0.clone(), owner(ctx), stop)));
    // Also after it exited: children it left running (`server &`) go too.
    item.process.terminate(stop).await;
    table.ports.remove(&item.id);
    let mut fields = describe(&item);
    let text = if was_running {
        format!(
            "stopped {} and everything it started {}",
            item.id,
            exit_line(&fields)
        )
    } else {
        format!("{} had already ended {}", item.id, exit_line(&fields))
    };
    if let Some(close) = close {
        let exit = item.process.exit();
        ctx.audit_note.set(close.note(&item.id, exit.as_ref()));
        fields.extend(close.fields(exit.as_ref()));
    }
    Ok(ToolOutput::text_and_structured(text, Value::Object(fields)))
}

/// Whether something listens on `port` inside a sandbox reached through `inbound`.
async fn listens_inside(inbound: &std::path::Path, port: u16) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(Ok(mut stream)) = tokio::time::timeout(
        Duration::from_millis(300),
        tokio::net::UnixStream::connect(inbound),
    )
    .await
    else {
        return false;
    };
    if stream
        .write_all(format!("{port}\n").as_bytes())
        .await
        .is_err()
    {
        return false;
    }
    let mut byte = [0u8; 1];
    // Closed at once: nothing listens. Still open after a moment: it connected.
    match tokio::time::timeout(Duration::from_millis(200), stream.read(&mut byte)).await {
        Err(_) => true,
        Ok(Ok(n)) => n > 0,
        Ok(Err(_)) => false,
    }
}

async fn proxy_info(
    table: &ProcessTable,
    ctx: &CallContext,
    args: ProcessIdArgs,
) -> Result<ToolOutput, ToolError> {
    let item = table.get(&owner(ctx), &args.id)?;
    let Some(port) = item.port else {
        return Err(ToolError::Conflict(format!(
            "{} was started without a port; start it with process_exec and `port` to reach it through the proxy",
            item.id
        )));
    };
    let listening = match item.process.inbound() {
        None => tokio::time::timeout(
            Duration::from_millis(300),
            tokio::net::TcpStream::connect(("127.0.0.1", port)),
        )
        .await
        .is_ok_and(|r| r.is_ok()),
        // A sandbox with a network of its own: through its inbound socket, which closes
        // the connection at once when nothing listens on the port inside.
        Some(inbound) => listens_inside(inbound, port).await,
    };
    let base = table.ports.base_url();
    let direct = format!("http://127.0.0.1:{port}/");
    let url = base.map(|b| format!("{}/proxy/{}/", b.trim_end_matches('/'), item.id));
    let mut text = match &url {
        Some(url) => {
            format!("{url} forwards to {direct} (send the bearer token of toolshed serve)")
        }
        None => format!(
            "not proxied: the proxy is part of `toolshed serve`, and this toolshed serves no HTTP; the process is at {direct}"
        ),
    };
    text.push_str(if listening {
        "; something listens there now"
    } else {
        "; nothing listens there yet"
    });
    if item.process.exit().is_some() {
        text.push_str(&format!(
            "; the process has ended {}",
            exit_line(&describe(&item))
        ));
    }
    Ok(ToolOutput::text_and_structured(
        text,
        json!({"id": item.id, "url": url, "direct_url": direct, "port": port, "listening": listening, "running": item.process.exit().is_none()}),
    ))
}
