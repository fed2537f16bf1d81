//! The worker's side: serving an [`Ops`] over a byte stream (see [`super::wire`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::wire::{
    Bytes, Envelope, Event, Hello, MAX_LINE, WireChange, WireContents, WireEnforcement, WireEntry,
    WireExit, WireExpect, WireListing, WireMeta, WireSpawn,
};
use crate::error::OpsError;
use crate::file::{Change, Expect, Follow, Overwrite, Parents};
use crate::process::{Process, Stdin, Stop, Stream, Tty};
use crate::sandbox::SandboxMode;
use crate::search::{Cancel, FindRequest, GlobRequest, GrepRequest, TreeRequest};
use crate::{Ops, SpawnRequest};

/// Requests served at once; more wait for a slot (reading on stops meanwhile, so a flood
/// cannot grow memory without bound).
const MAX_IN_FLIGHT: usize = 64;

/// What the worker keeps per connection.
struct Served {
    ops: Ops,
    out: mpsc::Sender<String>,
    processes: Mutex<HashMap<u64, Arc<Process>>>,
    cancels: Mutex<HashMap<u64, Arc<AtomicBool>>>,
    /// The stdin of relayed children ([`Stdin::Stream`]), by handle.
    streams: Mutex<HashMap<u64, mpsc::Sender<Vec<u8>>>>,
    next_handle: std::sync::atomic::AtomicU64,
}

/// Serves `ops` on `input`/`output` until the input ends: says [`Hello`] first, then answers
/// requests (several at once) and reports processes' output as it comes. When the input
/// ends — the client went away — requests under way finish (a write is never left
/// half done: it is atomic on disk either way), every process tree is stopped, and it
/// returns.
pub async fn serve<R, W>(ops: Ops, hello: Hello, input: R, output: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out, mut lines) = mpsc::channel::<String>(1024);
    let writer = tokio::spawn(async move {
        let mut output = tokio::io::BufWriter::new(output);
        while let Some(line) = lines.recv().await {
            output.write_all(line.as_bytes()).await?;
            output.write_all(b"\n").await?;
            // Write out what is queued together, then flush once.
            while let Ok(line) = lines.try_recv() {
                output.write_all(line.as_bytes()).await?;
                output.write_all(b"\n").await?;
            }
            output.flush().await?;
        }
        Ok::<_, std::io::Error>(())
    });
    let hello = serde_json::json!({ "hello": hello }).to_string();
    let _ = out.send(hello).await;
    let served = Arc::new(Served {
        ops,
        out,
        processes: Mutex::default(),
        cancels: Mutex::default(),
        streams: Mutex::default(),
        next_handle: 1.into(),
    });
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_IN_FLIGHT));
    let mut tasks = tokio::task::JoinSet::new();
    let mut reader = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line(&mut reader, &mut line).await {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                tracing::warn!(error = %e, "worker: reading requests failed");
                break;
            }
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Ok(permit) = slots.clone().acquire_owned().await else {
            break;
        };
        let served = served.clone();
        let text = std::mem::take(&mut line);
        // Quick control messages are handled in order, here; the rest in tasks.
        if let Some(done) = served.control(&text).await {
            drop(permit);
            if !done {
                tracing::warn!("worker: a request could not be read");
            }
            continue;
        }
        tasks.spawn(async move {
            served.answer(text).await;
            drop(permit);
        });
        while tasks.try_join_next().is_some() {}
    }
    while tasks.join_next().await.is_some() {}
    let processes: Vec<_> = served
        .processes
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .drain()
        .collect();
    drop(processes);
    let ops = served.ops.clone();
    let _ = tokio::task::spawn_blocking(move || ops.process.kill_all()).await;
    drop(served);
    writer.await.unwrap_or(Ok(()))
}

/// Reads one line (without its `\n`) into `buf`; `false` at the end of input. A line past
/// [`MAX_LINE`] is an error.
async fn read_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    buf: &mut Vec<u8>,
) -> std::io::Result<bool> {
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(!buf.is_empty());
        }
        if let Some(end) = chunk.iter().position(|&b| b == b'\n') {
            buf.extend_from_slice(&chunk[..end]);
            reader.consume(end + 1);
            return Ok(true);
        }
        let n = chunk.len();
        buf.extend_from_slice(chunk);
        reader.consume(n);
        if buf.len() > MAX_LINE {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a request is longer than {MAX_LINE} bytes"),
            ));
        }
    }
}

fn args<T: DeserializeOwned>(op: &str, raw: Option<&RawValue>) -> Result<T, OpsError> {
    serde_json::from_str(raw.map_or("null", RawValue::get)).map_err(|e| OpsError::Io {
        action: "understand the request".into(),
        path: op.to_string(),
        message: e.to_string(),
    })
}

fn expect(e: &WireExpect) -> Expect<'_> {
    match e {
        WireExpect::Anything => Expect::Anything,
        WireExpect::Missing => Expect::Missing,
        WireExpect::Content { d } => Expect::Content(&d.0),
    }
}

fn parents(create: bool) -> Parents {
    if create {
        Parents::Create
    } else {
        Parents::MustExist
    }
}

#[derive(Deserialize)]
struct PathArgs {
    path: String,
    #[serde(default)]
    max_bytes: u64,
    #[serde(default)]
    data: Bytes,
    #[serde(default)]
    parents: bool,
    #[serde(default)]
    follow: bool,
    #[serde(default)]
    recursive: bool,
}

#[derive(Deserialize)]
struct RenameArgs {
    from: String,
    to: String,
    overwrite: bool,
}

#[derive(Deserialize)]
struct HandleArgs {
    h: u64,
    #[serde(default)]
    data: Bytes,
    #[serde(default)]
    close: bool,
    #[serde(default)]
    forced: bool,
    #[serde(default)]
    grace_ms: u64,
    #[serde(default)]
    rows: u16,
    #[serde(default)]
    cols: u16,
    #[serde(default)]
    request: u64,
}

impl Served {
    async fn send(&self, line: String) {
        let _ = self.out.send(line).await;
    }

    async fn event(&self, event: Event) {
        self.send(serde_json::json!({ "ev": event }).to_string())
            .await;
    }

    /// Handles the messages that need no reply and must keep their order (input to a
    /// process, stops, cancels). `None`: not one of them.
    async fn control(self: &Arc<Self>, text: &[u8]) -> Option<bool> {
        let Ok(envelope) = serde_json::from_slice::<Envelope<'_>>(text) else {
            return Some(false);
        };
        let op = envelope.op.as_ref();
        if !matches!(op, "input" | "stop" | "resize" | "release" | "cancel") {
            return None;
        }
        let Ok(a) = args::<HandleArgs>(op, envelope.args) else {
            return Some(false);
        };
        if op == "cancel" {
            if let Some(flag) = self
                .cancels
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&a.request)
            {
                flag.store(true, Ordering::Relaxed);
            }
            return Some(true);
        }
        let process = self
            .processes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&a.h)
            .cloned();
        let stream = self
            .streams
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&a.h)
            .cloned();
        if let (Some(stream), "input") = (stream, op) {
            if !a.data.0.is_empty() {
                let _ = stream.send(a.data.0).await;
            }
            if a.close {
                self.streams
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&a.h);
            }
            return Some(true);
        }
        match op {
            "release" => {
                self.streams
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&a.h);
                self.processes
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&a.h);
            }
            "input" => {
                if let Some(p) = process {
                    let gone = (!a.data.0.is_empty() && p.write(&a.data.0).is_err())
                        || (a.close && {
                            p.close_stdin();
                            false
                        });
                    if gone {
                        self.event(Event::InputGone { h: a.h }).await;
                    }
                }
            }
            "resize" => {
                if let Some(p) = process {
                    let _ = p.resize(a.rows, a.cols);
                }
            }
            _ => {
                let stop = if a.forced {
                    Stop::Forced
                } else {
                    Stop::Graceful {
                        grace: Duration::from_millis(a.grace_ms),
                    }
                };
                let served = self.clone();
                tokio::spawn(async move {
                    if let Some(p) = process {
                        p.terminate(stop).await;
                    }
                    served.event(Event::StopDone { h: a.h }).await;
                });
            }
        }
        Some(true)
    }

    /// Answers one request.
    async fn answer(self: Arc<Self>, text: Vec<u8>) {
        let envelope = match serde_json::from_slice::<Envelope<'_>>(&text) {
            Ok(envelope) => envelope,
            Err(e) => {
                tracing::warn!(error = %e, "worker: a request could not be read");
                return;
            }
        };
        let id = envelope.id;
        let op = envelope.op.to_string();
        let result = if op == "spawn" {
            args::<WireSpawn>(&op, envelope.args).and_then(|spawn| self.spawn(spawn))
        } else if op == "sandbox" {
            args::<Option<String>>(&op, envelope.args).and_then(|mode| {
                let mode = match mode {
                    Some(m) => Some(SandboxMode::parse(&m).map_err(|e| OpsError::Io {
                        action: "understand the request".into(),
                        path: op.clone(),
                        message: e.to_string(),
                    })?),
                    None => None,
                };
                let enforcement = self.ops.process.sandbox(mode)?;
                Ok(
                    serde_json::to_string(&enforcement.as_ref().map(WireEnforcement::from))
                        .unwrap_or_default(),
                )
            })
        } else {
            let flag = Arc::new(AtomicBool::new(false));
            self.cancels
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(id, flag.clone());
            let args = envelope
                .args
                .and_then(|a| RawValue::from_string(a.get().to_string()).ok());
            let ops = self.ops.clone();
            let op2 = op.clone();
            let result = tokio::task::spawn_blocking(move || {
                blocking(&ops, &op2, args.as_deref(), Cancel::new(flag))
            })
            .await
            .unwrap_or_else(|e| {
                Err(OpsError::Io {
                    action: "run".into(),
                    path: op.clone(),
                    message: e.to_string(),
                })
            });
            self.cancels
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id);
            result
        };
        let line = match result {
            Ok(json) => format!("{{\"id\":{id},\"ok\":{json}}}"),
            Err(e) => serde_json::json!({ "id": id, "err": e }).to_string(),
        };
        if id != 0 {
            self.send(line).await;
        }
    }

    /// Starts a process and the task that reports its output.
    fn spawn(self: &Arc<Self>, w: WireSpawn) -> Result<String, OpsError> {
        let mut request = SpawnRequest::new(w.program.clone())
            .args(w.args.clone())
            .workdir(w.workdir.clone())
            .limits(w.limits());
        request.env = w.env.clone();
        request.tty = match w.tty {
            Some((rows, cols)) => Tty::Yes { rows, cols },
            None => Tty::No,
        };
        request.stdin = match w.stdin.as_str() {
            "piped" => Stdin::Piped,
            "stream" => Stdin::Stream,
            _ => Stdin::Closed,
        };
        request.sandbox = match &w.sandbox {
            Some(m) => Some(SandboxMode::parse(m).map_err(|e| OpsError::InvalidCommand {
                what: "the sandbox mode".into(),
                reason: e.to_string(),
            })?),
            None => None,
        };
        request.escalation_approved = w.escalation_approved;
        request.network_hosts = w.network_hosts.clone();
        request.web_network = w.web_network;
        request.write_scope = w.write_scope.clone();
        let process = Arc::new(self.ops.process.spawn(&request)?);
        let h = self.next_handle.fetch_add(1, Ordering::Relaxed);
        self.processes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(h, process.clone());
        let pid = process.pid();
        let served = self.clone();
        // Started after the reply is queued (the caller queues it next), so that the
        // reply comes first on the wire; the client keeps early events anyway.
        let relayed = match process.take_stdio() {
            Some(stdio) => Some(self.relay(h, stdio).map_err(|e| OpsError::Spawn {
                program: w.program.clone(),
                message: format!("cannot relay its stdio: {e}"),
            })?),
            None => None,
        };
        let weak = Arc::downgrade(&process);
        tokio::spawn(async move { served.pump(h, weak, relayed).await });
        Ok(format!("{{\"h\":{h},\"pid\":{pid}}}"))
    }

    /// Relays a child's streamed stdio ([`Stdin::Stream`]): its stdout as output events,
    /// input messages to its stdin. The task that ends with its stdout.
    fn relay(
        self: &Arc<Self>,
        h: u64,
        stdio: crate::process::StreamStdio,
    ) -> std::io::Result<tokio::task::JoinHandle<()>> {
        use tokio::io::AsyncReadExt;
        let (mut stdout, mut stdin) = stdio.into_pipes()?;
        let (input, mut queued) = mpsc::channel::<Vec<u8>>(64);
        self.streams
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(h, input);
        tokio::spawn(async move {
            while let Some(bytes) = queued.recv().await {
                if stdin.write_all(&bytes).await.is_err() {
                    break;
                }
            }
        });
        let served = self.clone();
        Ok(tokio::spawn(async move {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match stdout.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        served
                            .event(Event::Out {
                                h,
                                s: 1,
                                k: 0,
                                d: Bytes(buf[..n].to_vec()),
                            })
                            .await;
                    }
                }
            }
        }))
    }

    /// Reports a process's output as it comes, then its exit (after what a relayed stdout
    /// still held, for up to two seconds). It holds the process weakly: once the client
    /// releases it, dropping it stops the tree.
    async fn pump(
        &self,
        h: u64,
        process: std::sync::Weak<Process>,
        mut relayed: Option<tokio::task::JoinHandle<()>>,
    ) {
        let Some(mut changes) = process.upgrade().map(|p| p.changes()) else {
            return;
        };
        let (mut stdout, mut stderr) = (0u64, 0u64);
        loop {
            let Some(process) = process.upgrade() else {
                return;
            };
            // The exit is looked at before the output, so nothing printed before it is
            // missed.
            let exit = process.exit();
            for (stream, code, offset) in [
                (Stream::Stdout, 1u8, &mut stdout),
                (Stream::Stderr, 2u8, &mut stderr),
            ] {
                loop {
                    let chunk = process.read(stream, *offset, 1 << 20);
                    *offset = chunk.next.max(*offset);
                    if chunk.bytes.is_empty() && chunk.skipped == 0 {
                        break;
                    }
                    self.event(Event::Out {
                        h,
                        s: code,
                        k: chunk.skipped,
                        d: Bytes(chunk.bytes),
                    })
                    .await;
                }
            }
            if let Some(exit) = exit {
                if let Some(relay) = relayed.take() {
                    let _ = tokio::time::timeout(Duration::from_secs(2), relay).await;
                }
                self.event(Event::Exit {
                    h,
                    exit: WireExit::from(&exit),
                })
                .await;
                return;
            }
            drop(process);
            if changes.changed().await.is_err() {
                return;
            }
        }
    }
}

/// The file and search operations, run on a blocking thread; the reply's JSON.
fn blocking(
    ops: &Ops,
    op: &str,
    raw: Option<&RawValue>,
    cancel: Cancel,
) -> Result<String, OpsError> {
    let json = |v: &dyn erased::Json| v.to_json();
    let files = &ops.files;
    match op {
        "read" => {
            let a: PathArgs = args(op, raw)?;
            let c = files.read(&a.path, a.max_bytes)?;
            Ok(json(&WireContents {
                bytes: Bytes(c.bytes),
                size: c.size,
                meta: WireMeta::from(&c.metadata),
                real_path: c.real_path,
            }))
        }
        "write" => {
            let a: PathArgs = args(op, raw)?;
            let written = files.write(&a.path, &a.data.0, parents(a.parents))?;
            Ok(json(&matches!(written, crate::Written::Created)))
        }
        "commit" => {
            let changes: Vec<WireChange> = args(op, raw)?;
            let list: Vec<Change<'_>> = changes
                .iter()
                .map(|c| match c {
                    WireChange::Write {
                        path,
                        data,
                        expect: e,
                        parents: p,
                    } => Change::Write {
                        path,
                        data: &data.0,
                        expect: expect(e),
                        parents: parents(*p),
                    },
                    WireChange::Remove { path, expect: e } => Change::Remove {
                        path,
                        expect: expect(e),
                    },
                    WireChange::Move {
                        from,
                        to,
                        data,
                        expect: e,
                    } => Change::Move {
                        from,
                        to,
                        data: &data.0,
                        expect: expect(e),
                    },
                })
                .collect();
            files.commit(&list)?;
            Ok("null".into())
        }
        "append" => {
            let a: PathArgs = args(op, raw)?;
            files.append(&a.path, &a.data.0)?;
            Ok("null".into())
        }
        "stat" => {
            let a: PathArgs = args(op, raw)?;
            let follow = if a.follow { Follow::Yes } else { Follow::No };
            Ok(json(&WireMeta::from(&files.stat(&a.path, follow)?)))
        }
        "read_dir" => {
            let a: PathArgs = args(op, raw)?;
            let listing = files.read_dir(&a.path)?;
            Ok(json(&WireListing {
                entries: listing.entries.iter().map(WireEntry::from).collect(),
                truncated: listing.truncated,
            }))
        }
        "mkdir" => {
            let a: PathArgs = args(op, raw)?;
            files.mkdir(&a.path, parents(a.parents))?;
            Ok("null".into())
        }
        "remove" => {
            let a: PathArgs = args(op, raw)?;
            files.remove(&a.path, a.recursive)?;
            Ok("null".into())
        }
        "rename" => {
            let a: RenameArgs = args(op, raw)?;
            let overwrite = if a.overwrite {
                Overwrite::Yes
            } else {
                Overwrite::No
            };
            files.rename(&a.from, &a.to, overwrite)?;
            Ok("null".into())
        }
        "realpath" => {
            let a: PathArgs = args(op, raw)?;
            Ok(json(&files.realpath(&a.path)?))
        }
        "resolve" => {
            let a: PathArgs = args(op, raw)?;
            Ok(json(&files.resolve(&a.path)))
        }
        "glob" => {
            let mut r: GlobRequest = args(op, raw)?;
            r.cancel = cancel;
            Ok(json(&ops.search.glob(&r)?))
        }
        "find" => {
            let mut r: FindRequest = args(op, raw)?;
            r.cancel = cancel;
            Ok(json(&ops.search.find(&r)?))
        }
        "grep" => {
            let mut r: GrepRequest = args(op, raw)?;
            r.cancel = cancel;
            Ok(json(&ops.search.grep(&r)?))
        }
        "tree" => {
            let mut r: TreeRequest = args(op, raw)?;
            r.cancel = cancel;
            Ok(json(&ops.search.tree(&r)?))
        }
        "ping" => Ok("true".into()),
        other => Err(OpsError::Io {
            action: "run the operation".into(),
            path: other.to_string(),
            message: "this worker does not know it (is it an older toolshed?)".into(),
        }),
    }
}

/// Serializing any reply without naming its type at each arm.
mod erased {
    pub(super) trait Json {
        fn to_json(&self) -> String;
    }

    impl<T: serde::Serialize> Json for T {
        fn to_json(&self) -> String {
            serde_json::to_string(self).unwrap_or_else(|_| "null".into())
        }
    }
}
