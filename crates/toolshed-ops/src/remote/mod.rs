//! Operations on another machine: a worker that serves [`Ops`](crate::Ops) over a byte
//! stream, and [`RemoteOps`], the backend that talks to it.
//!
//! The worker (`toolshed worker --root DIR`) runs where the files are. It opens the
//! workspace with the local backend — the same jail, atomic writes, sandbox and search as
//! on this machine — and answers requests on its standard input and output
//! ([`serve`], the format in [`wire`]). Any transport that carries a child's stdio can
//! carry it: `ssh host toolshed worker …`, `docker exec -i CONTAINER toolshed worker …`,
//! or the worker run directly. [`RemoteOps`] starts that command, keeps one connection
//! per workspace for every call, and starts it again (with backoff) when it drops.
//!
//! What holds, and why:
//!
//! - **Nothing outside the workspace.** Paths are resolved by the worker's jail on its
//!   own machine; `..` and links pointing out are refused there, as they are here.
//! - **No torn files.** A write reaches the worker whole (one line) or not at all, and the
//!   worker writes it atomically; a connection dropped mid-write leaves the old file or
//!   the new one.
//! - **Processes stop with the connection.** When the connection ends, the worker stops
//!   every process tree it started; handles here report the process ended.
//! - **Reads survive a dropped connection.** A request that only reads is asked again
//!   (three times at most, with backoff, within the call's time) when the connection was
//!   lost or could not be made, and the retry is recorded on the call's audit row; a
//!   request that changes files never is.
//! - **Bounded.** Lines are at most [`wire::MAX_LINE`]; the worker serves a bounded number
//!   of requests at once; each call waits at most the configured time.

mod link;
mod process;
mod server;
pub mod url;
pub mod wire;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

pub use server::serve;

use self::link::Connection;
use self::wire::{Bytes, WireChange, WireContents, WireExpect, WireListing, WireMeta};
use crate::error::OpsError;
use crate::file::{
    Change, DirEntry, DirListing, Expect, FileContents, FileOps, Follow, Metadata, Overwrite,
    Parents, Written,
};
use crate::sandbox::Enforcement;
use crate::search::{
    FindRequest, FindResult, GlobRequest, GlobResult, GrepRequest, GrepResult, SearchOps,
    TreeRequest, TreeResult,
};

/// Why a remote workspace cannot be named, reached or trusted; each message says what to
/// do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RemoteError {
    /// A workspace URL that cannot be used.
    #[error("{0}")]
    Url(String),
    /// The worker could not be started or did not answer.
    #[error("{0}")]
    Connect(String),
    /// A host's keys could not be fetched or kept.
    #[error("{0}")]
    Trust(String),
}

/// How to reach a worker.
#[derive(Debug, Clone)]
pub struct Target {
    /// The command run on this machine whose stdio speaks the worker protocol: `ssh … host
    /// toolshed worker --root …`, `docker exec -i …`, or `toolshed worker …` itself.
    pub command: Vec<String>,
    /// The workspace as people name it (`ssh://user@host/path`), for messages.
    pub display: String,
    /// How long a call waits for its reply, and a connection for the worker's hello.
    pub timeout: Duration,
    /// Turns what the transport printed when it failed into advice (an SSH host key
    /// refused, say); `None` leaves the message as it is.
    pub explain: Option<fn(&Target, &str) -> Option<String>>,
}

/// The connection and what is known about reconnecting.
#[derive(Default)]
struct Link {
    conn: Option<Arc<Connection>>,
    failures: u32,
    /// Whether a connection was ever made (a failure then is a reconnect's, and logged).
    connected: bool,
    retry_at: Option<Instant>,
    last_error: String,
}

/// The operations backend of a workspace on another machine; see the [module docs](self).
/// File and search operations block until the worker answers (call them from a blocking
/// pool, as for any backend); processes are fed by the worker's events.
pub struct RemoteOps {
    target: Target,
    display: String,
    timeout: Duration,
    link: Mutex<Link>,
    sandboxes: Mutex<HashMap<Option<&'static str>, Answer>>,
}

impl std::fmt::Debug for RemoteOps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteOps")
            .field("display", &self.display)
            .finish_non_exhaustive()
    }
}

/// What the worker answered about a sandbox mode.
type Answer = Result<Option<Enforcement>, OpsError>;

/// The requests that only read, asked again after a transient failure.
const IDEMPOTENT: [&str; 9] = [
    "read", "stat", "read_dir", "realpath", "resolve", "glob", "find", "grep", "tree",
];

/// How many times a request that only reads is asked again.
const RETRIES: u32 = 3;

/// The longest wait between attempts to connect again.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

impl RemoteOps {
    /// Connects to the worker `target` names; an error says why it cannot be reached.
    pub fn connect(target: Target) -> Result<Self, OpsError> {
        let ops = Self {
            display: target.display.clone(),
            timeout: target.timeout,
            target,
            link: Mutex::default(),
            sandboxes: Mutex::default(),
        };
        ops.connection()?;
        Ok(ops)
    }

    /// What the worker said when it connected: its root, version and sandbox.
    pub fn hello(&self) -> Result<wire::Hello, OpsError> {
        Ok(self.connection()?.hello.clone())
    }

    fn current(&self) -> Option<Arc<Connection>> {
        self.link
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .conn
            .clone()
    }

    /// The live connection, made again if it dropped (at most once per backoff period).
    fn connection(&self) -> Result<Arc<Connection>, OpsError> {
        let mut link = self.link.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(conn) = &link.conn {
            if conn.is_alive() {
                return Ok(conn.clone());
            }
            link.conn = None;
            // Enforcement is asked again of the new worker.
            self.sandboxes
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clear();
        }
        let unreachable = |message: String| OpsError::Io {
            action: "reach".into(),
            path: self.display.clone(),
            message,
        };
        if let Some(at) = link.retry_at
            && Instant::now() < at
        {
            let wait = at.saturating_duration_since(Instant::now());
            return Err(unreachable(format!(
                "{} (trying again in {:.1} s)",
                link.last_error,
                wait.as_secs_f64()
            )));
        }
        match Connection::open(&self.target.command, &self.display, self.timeout) {
            Ok(conn) => {
                if link.failures > 0 {
                    tracing::info!(workspace = %self.display, "reconnected to the worker");
                }
                link.failures = 0;
                link.connected = true;
                link.retry_at = None;
                link.conn = Some(conn.clone());
                Ok(conn)
            }
            Err(why) => {
                let why = why.to_string();
                let why = self
                    .target
                    .explain
                    .and_then(|explain| explain(&self.target, &why))
                    .unwrap_or(why);
                link.failures = link.failures.saturating_add(1);
                let backoff = Duration::from_millis(100)
                    .saturating_mul(1 << link.failures.min(7))
                    .min(MAX_BACKOFF);
                link.retry_at = Some(Instant::now() + backoff);
                link.last_error = why.clone();
                // A first connection's failure is the caller's error to show; later ones
                // happen behind a running host and are logged.
                if link.connected {
                    tracing::warn!(workspace = %self.display, error = %why, "cannot reach the worker again");
                }
                Err(unreachable(why))
            }
        }
    }

    fn parse<T: DeserializeOwned>(&self, op: &str, reply: &str) -> Result<T, OpsError> {
        serde_json::from_str(reply).map_err(|e| OpsError::Io {
            action: "understand the worker's answer from".into(),
            path: self.display.clone(),
            message: format!("`{op}`: {e}"),
        })
    }

    /// Asks the worker and reads its answer; a set `cancel` flag is passed on. A request
    /// that only reads ([`IDEMPOTENT`]) is asked again, up to [`RETRIES`] times with
    /// backoff and within the call's time, when the connection was lost or could not be
    /// made; each retry is logged and recorded on the call's audit note. A request that
    /// changes files is never repeated: the worker may have applied it before the
    /// connection dropped.
    fn ask_with<A: Serialize, T: DeserializeOwned>(
        &self,
        op: &str,
        args: A,
        cancel: Option<&crate::search::Cancel>,
    ) -> Result<T, OpsError> {
        let idempotent = IDEMPOTENT.contains(&op);
        let started = Instant::now();
        let mut attempt = 0;
        loop {
            let (result, lost) = match self.connection() {
                Ok(conn) => {
                    let result = conn.call(op, &args, self.timeout, cancel);
                    let lost = result.is_err() && !conn.is_alive();
                    (result, lost)
                }
                Err(e) => (Err(e), true),
            };
            let e = match result {
                Ok(reply) => return self.parse(op, &reply),
                Err(e) => e,
            };
            let cancelled = cancel.is_some_and(crate::search::Cancel::is_set);
            let wait = self.retry_wait(attempt);
            if !idempotent
                || !lost
                || cancelled
                || attempt >= RETRIES
                || started.elapsed() + wait >= self.timeout
            {
                return Err(e);
            }
            attempt += 1;
            toolshed_core::AuditNote::record_retry(format!(
                "`{op}` on {} (attempt {} of {}) after: {e}",
                self.display,
                attempt + 1,
                RETRIES + 1
            ));
            std::thread::sleep(wait);
        }
    }

    /// How long to wait before trying again after `attempt` retries: the backoff, or until
    /// the link tries to connect again, whichever is later.
    fn retry_wait(&self, attempt: u32) -> Duration {
        let backoff = Duration::from_millis(100).saturating_mul(1 << attempt.min(6));
        let link = self.link.lock().unwrap_or_else(|e| e.into_inner());
        let until_link = link.retry_at.map_or(Duration::ZERO, |at| {
            at.saturating_duration_since(Instant::now())
        });
        backoff.max(until_link + Duration::from_millis(5))
    }

    fn ask<A: Serialize, T: DeserializeOwned>(&self, op: &str, args: A) -> Result<T, OpsError> {
        self.ask_with(op, args, None)
    }
}

impl Drop for RemoteOps {
    fn drop(&mut self) {
        if let Some(conn) = self.current() {
            conn.close();
        }
    }
}

fn wire_expect(e: &Expect<'_>) -> WireExpect {
    match e {
        Expect::Anything => WireExpect::Anything,
        Expect::Missing => WireExpect::Missing,
        Expect::Content(d) => WireExpect::Content {
            d: Bytes(d.to_vec()),
        },
    }
}

impl FileOps for RemoteOps {
    fn read(&self, path: &str, max_bytes: u64) -> Result<FileContents, OpsError> {
        let c: WireContents = self.ask("read", json!({ "path": path, "max_bytes": max_bytes }))?;
        Ok(FileContents {
            bytes: c.bytes.0,
            size: c.size,
            metadata: c.meta.into(),
            real_path: c.real_path,
        })
    }

    fn write(&self, path: &str, data: &[u8], parents: Parents) -> Result<Written, OpsError> {
        let created: bool = self.ask(
            "write",
            json!({ "path": path, "data": Bytes(data.to_vec()), "parents": parents == Parents::Create }),
        )?;
        Ok(if created {
            Written::Created
        } else {
            Written::Replaced
        })
    }

    fn commit(&self, changes: &[Change<'_>]) -> Result<(), OpsError> {
        let wire: Vec<WireChange> = changes
            .iter()
            .map(|c| match *c {
                Change::Write {
                    path,
                    data,
                    expect,
                    parents,
                } => WireChange::Write {
                    path: path.into(),
                    data: Bytes(data.to_vec()),
                    expect: wire_expect(&expect),
                    parents: parents == Parents::Create,
                },
                Change::Remove { path, expect } => WireChange::Remove {
                    path: path.into(),
                    expect: wire_expect(&expect),
                },
                Change::Move {
                    from,
                    to,
                    data,
                    expect,
                } => WireChange::Move {
                    from: from.into(),
                    to: to.into(),
                    data: Bytes(data.to_vec()),
                    expect: wire_expect(&expect),
                },
            })
            .collect();
        self.ask::<_, ()>("commit", wire)
    }

    fn append(&self, path: &str, data: &[u8]) -> Result<(), OpsError> {
        self.ask(
            "append",
            json!({ "path": path, "data": Bytes(data.to_vec()) }),
        )
    }

    fn stat(&self, path: &str, follow: Follow) -> Result<Metadata, OpsError> {
        let meta: WireMeta = self.ask(
            "stat",
            json!({ "path": path, "follow": follow == Follow::Yes }),
        )?;
        Ok(meta.into())
    }

    fn read_dir(&self, path: &str) -> Result<DirListing, OpsError> {
        let listing: WireListing = self.ask("read_dir", json!({ "path": path }))?;
        Ok(DirListing {
            entries: listing
                .entries
                .into_iter()
                .map(|e| DirEntry {
                    name: e.name,
                    metadata: e.meta.into(),
                })
                .collect(),
            truncated: listing.truncated,
        })
    }

    fn mkdir(&self, path: &str, parents: Parents) -> Result<(), OpsError> {
        self.ask(
            "mkdir",
            json!({ "path": path, "parents": parents == Parents::Create }),
        )
    }

    fn remove(&self, path: &str, recursive: bool) -> Result<(), OpsError> {
        self.ask("remove", json!({ "path": path, "recursive": recursive }))
    }

    fn rename(&self, from: &str, to: &str, overwrite: Overwrite) -> Result<(), OpsError> {
        self.ask(
            "rename",
            json!({ "from": from, "to": to, "overwrite": overwrite == Overwrite::Yes }),
        )
    }

    fn realpath(&self, path: &str) -> Result<String, OpsError> {
        self.ask("realpath", json!({ "path": path }))
    }

    fn root_display(&self) -> String {
        self.display.clone()
    }

    fn resolve(&self, path: &str) -> Option<String> {
        self.ask::<_, Option<String>>("resolve", json!({ "path": path }))
            .ok()
            .flatten()
    }
}

impl SearchOps for RemoteOps {
    fn glob(&self, request: &GlobRequest) -> Result<GlobResult, OpsError> {
        self.ask_with("glob", request, Some(&request.cancel))
    }

    fn find(&self, request: &FindRequest) -> Result<FindResult, OpsError> {
        self.ask_with("find", request, Some(&request.cancel))
    }

    fn grep(&self, request: &GrepRequest) -> Result<GrepResult, OpsError> {
        self.ask_with("grep", request, Some(&request.cancel))
    }

    fn tree(&self, request: &TreeRequest) -> Result<TreeResult, OpsError> {
        self.ask_with("tree", request, Some(&request.cancel))
    }
}
