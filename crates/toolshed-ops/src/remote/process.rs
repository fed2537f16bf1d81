//! Processes on a worker: [`ProcessOps`] for [`RemoteOps`], fed by the worker's events.

use std::sync::mpsc::Receiver;
use std::sync::{Arc, Weak};

use serde::Deserialize;
use serde_json::json;

use super::RemoteOps;
use super::link::Connection;
use super::wire::{Bytes, WireEnforcement, WireSpawn};
use crate::error::OpsError;
use crate::process::{
    OutputLimits, Process, ProcessControl, ProcessOps, ProcessStart, SpawnRequest, Stdin, Stop,
    StopReason, Tty,
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

#[derive(Deserialize)]
struct Spawned {
    h: u64,
    pid: u32,
}

impl ProcessOps for RemoteOps {
    fn spawn(&self, request: &SpawnRequest) -> Result<Process, OpsError> {
        request.validate()?;
        if request.stdin == Stdin::Stream {
            return Err(OpsError::ProcessUnavailable {
                reason: format!(
                    "a process on {} cannot hand its pipes to this machine (a language \
                     server or a mounted MCP server); run that part of toolshed on the \
                     remote machine itself",
                    self.display
                ),
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
        conn.adopt(spawned.h, feed);
        Ok(process)
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
}
