//! Processes on a worker: [`ProcessOps`] for [`RemoteOps`], fed by the worker's events.

use std::sync::mpsc::Receiver;
use std::sync::{Arc, Weak};

use serde::Deserialize;
use serde_json::json;

use super::RemoteOps;
use super::link::Connection;
use super::wire::{Bytes, WireEnforcement, WireSpawn};
use crate::error::OpsError;
use std::io::{Read, Write};

use crate::process::{
    OutputLimits, Process, ProcessControl, ProcessOps, ProcessStart, SpawnRequest, Stdin, Stop,
    StopReason, StreamStdio, Tty,
};
use crate::sandbox::{Enforcement, SandboxMode};

/// The most input sent in one message.
const INPUT_CHUNK: usize = 256 * 1024;

struct Control {
    conn: Weak<Connection>,
    h: u64,
}

impl ProcessControl for Control {
    fn wake(&self) {
        if let Some(conn) = self.conn.upgrade() {
            let _ = conn
                .wake
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .send(self.h);
        }
    }

    fn resize(&self, rows: u16, cols: u16) -> Result<(), OpsError> {
        match self.conn.upgrade() {
            Some(conn) => {
                conn.tell("resize", json!({ "h": self.h, "rows": rows, "cols": cols }));
                Ok(())
            }
            None => Err(OpsError::StdinClosed {
                reason: "the connection to the worker is gone".into(),
            }),
        }
    }
}

/// Carries what handles ask of their processes — input, stops, releases — to the worker,
/// until the connection is gone.
pub(super) fn carry(conn: Weak<Connection>, woken: Receiver<u64>) {
    while let Ok(h) = woken.recv() {
        let Some(conn) = conn.upgrade() else { return };
        let Some(feed) = conn
            .feeds
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .live
            .get(&h)
            .cloned()
        else {
            continue;
        };
        loop {
            let input = feed.take_input(INPUT_CHUNK);
            if input.bytes.is_empty() && !input.close {
                break;
            }
            let close = input.close;
            conn.tell(
                "input",
                json!({ "h": h, "data": Bytes(input.bytes), "close": close }),
            );
            if close {
                break;
            }
        }
        if let Some(stop) = feed.take_stop() {
            let (forced, grace) = match stop {
                StopReason::Requested(Stop::Graceful { grace }) => (false, grace),
                StopReason::Requested(Stop::Forced) | StopReason::OutputLimit => {
                    (true, Default::default())
                }
            };
            conn.tell(
                "stop",
                json!({ "h": h, "forced": forced, "grace_ms": grace.as_millis() as u64 }),
            );
        }
        if feed.is_abandoned() {
            conn.feeds
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .live
                .remove(&h);
            conn.tell("release", json!({ "h": h }));
        }
    }
}

/// The local pipes of a child whose stdio is relayed ([`Stdin::Stream`]): the caller's
/// ends, and a sender of what the child prints (written to the caller's stdout pipe by a
/// thread of its own). What the caller writes is read by another thread and sent to the
/// worker; its end of input closes the child's stdin there.
fn relay(
    conn: &Arc<Connection>,
    h: u64,
) -> std::io::Result<(StreamStdio, std::sync::mpsc::SyncSender<Vec<u8>>)> {
    use rustix::fs::{OFlags, fcntl_setfl};
    use rustix::pipe::{PipeFlags, pipe_with};
    let (out_read, out_write) = pipe_with(PipeFlags::CLOEXEC)?;
    let (in_read, in_write) = pipe_with(PipeFlags::CLOEXEC)?;
    // The caller's ends are non-blocking, as every backend hands them over.
    fcntl_setfl(&out_read, OFlags::NONBLOCK)?;
    fcntl_setfl(&in_write, OFlags::NONBLOCK)?;
    let (output, printed) = std::sync::mpsc::sync_channel::<Vec<u8>>(RELAY_QUEUE);
    std::thread::Builder::new()
        .name("worker-stream-out".into())
        .spawn(move || {
            let mut out = std::fs::File::from(out_write);
            while let Ok(bytes) = printed.recv() {
                if out.write_all(&bytes).is_err() {
                    break;
                }
            }
        })?;
    let conn = Arc::downgrade(conn);
    std::thread::Builder::new()
        .name("worker-stream-in".into())
        .spawn(move || {
            let mut input = std::fs::File::from(in_read);
            let mut buf = vec![0u8; INPUT_CHUNK];
            loop {
                let n = input.read(&mut buf).unwrap_or(0);
                let Some(conn) = conn.upgrade() else { return };
                if n == 0 {
                    conn.tell("input", json!({ "h": h, "close": true }));
                    return;
                }
                conn.tell("input", json!({ "h": h, "data": Bytes(buf[..n].to_vec()) }));
            }
        })?;
    Ok((
        StreamStdio {
            stdout: out_read,
            stdin: in_write,
        },
        output,
    ))
}

/// Chunks of a relayed child's output waiting to be written to its caller's pipe; past it,
/// the connection's reader waits for the caller to read (a language server's client reads
/// as it goes).
const RELAY_QUEUE: usize = 1024;

#[derive(Deserialize)]
struct Spawned {
    h: u64,
    pid: u32,
}

impl ProcessOps for RemoteOps {
    fn spawn(&self, request: &SpawnRequest) -> Result<Process, OpsError> {
        request.validate()?;
        if request.confined {
            return Err(OpsError::Spawn {
                program: request.program.clone(),
                message: "a command confined to the folders it was given (a skill's script) \
                          cannot run on a remote workspace yet: its folders are on this machine"
                    .into(),
            });
        }
        let wire = WireSpawn {
            program: request.program.clone(),
            args: request.args.clone(),
            workdir: request.workdir.clone(),
            env: request.env.clone(),
            tty: match request.tty {
                Tty::Yes { rows, cols } => Some((rows, cols)),
                Tty::No => None,
            },
            stdin: match request.stdin {
                Stdin::Piped => "piped",
                Stdin::Stream => "stream",
                Stdin::Closed => "closed",
            }
            .into(),
            head_bytes: request.limits.head_bytes,
            tail_bytes: request.limits.tail_bytes,
            kill_after_bytes: request.limits.kill_after_bytes,
            sandbox: request.sandbox.map(|m| m.as_str().to_string()),
            escalation_approved: request.escalation_approved,
            network_hosts: request.network_hosts.clone(),
            web_network: request.web_network,
            write_scope: request.write_scope.clone(),
        };
        let conn = self.connection()?;
        let reply = conn.call("spawn", &wire, self.timeout, None)?;
        let spawned: Spawned = self.parse("spawn", &reply)?;
        let (process, feed) = Process::from_backend(
            ProcessStart {
                pid: spawned.pid,
                tty: request.tty,
                program: request.program.clone(),
                // The worker applies the limit that kills; here the buffers only.
                limits: OutputLimits {
                    kill_after_bytes: None,
                    ..request.limits
                },
                stdin: request.stdin,
            },
            Arc::new(Control {
                conn: Arc::downgrade(&conn),
                h: spawned.h,
            }),
        );
        if request.stdin != Stdin::Stream {
            conn.adopt(spawned.h, feed, None);
            return Ok(process);
        }
        // Its stdout and stdin are relayed through local pipes the caller gets whole.
        let relay = relay(&conn, spawned.h).map_err(|e| OpsError::Spawn {
            program: request.program.clone(),
            message: format!("cannot make the pipes that relay its stdio: {e}"),
        });
        match relay {
            Ok((stdio, output)) => {
                conn.adopt(spawned.h, feed, Some(output));
                Ok(process.with_stdio(Some(stdio)))
            }
            Err(e) => {
                conn.adopt(spawned.h, feed, None);
                Err(e)
            }
        }
    }

    fn kill_all(&self) {
        // Closing the connection makes the worker stop every tree it started.
        if let Some(conn) = self.current() {
            conn.close();
        }
    }

    fn sandbox(&self, mode: Option<SandboxMode>) -> Result<Option<Enforcement>, OpsError> {
        let key = mode.map(SandboxMode::as_str);
        if let Some(known) = self
            .sandboxes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return known.clone();
        }
        let conn = self.connection()?;
        let answer = conn
            .call("sandbox", key, self.timeout, None)
            .and_then(|reply| {
                let wire: Option<WireEnforcement> = self.parse("sandbox", &reply)?;
                Ok(wire.and_then(|w| w.to_enforcement()))
            });
        // Only what the worker decided is kept; a lost connection is asked again.
        if !matches!(answer, Err(OpsError::Io { .. })) {
            self.sandboxes
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(key, answer.clone());
        }
        answer
    }

    fn check_sandbox(&self) -> Option<Result<Enforcement, OpsError>> {
        let conn = self.connection().ok()?;
        let hello = &conn.hello;
        if let Some(why) = &hello.sandbox_error {
            return Some(Err(OpsError::ProcessUnavailable {
                reason: format!("on {}: {why}", self.display),
            }));
        }
        hello
            .enforcement
            .as_ref()
            .and_then(WireEnforcement::to_enforcement)
            .map(Ok)
    }

    fn shell(&self) -> &'static str {
        // Where the worker cannot be reached the spawn that follows says why.
        match self.connection().ok().and_then(|c| c.hello.shell.clone()) {
            Some(shell) if shell == "bash" => "bash",
            _ => "sh",
        }
    }
}
