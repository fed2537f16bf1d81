//! The worker's wire format: one JSON object per line, both ways.
//!
//! - The worker speaks first, once: `{"hello": {...}}` ([`Hello`]).
//! - A request: `{"id": 7, "op": "read", "args": {...}}`. Its reply:
//!   `{"id": 7, "ok": ...}` or `{"id": 7, "err": {"error": "NotFound", ...}}` (an
//!   [`OpsError`] tagged by its variant). Replies come in any order.
//! - Requests that need no reply (`input`, `stop`, `resize`, `release`, `cancel`) carry
//!   id 0.
//! - A process's output, its end and its stops come unasked as events: `{"ev": {...}}`
//!   ([`Event`]), in the order they happened for that process.
//!
//! Bytes (file contents, process output) travel as base64 strings.

use std::collections::BTreeMap;
use std::time::{Duration, UNIX_EPOCH};

use base64::Engine;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::OpsError;
use crate::file::{DirEntry, FileKind, Metadata};
use crate::process::{Drain, Exit, ExitStatus, LimitHit, OutputLimits, Stop, StopReason};
use crate::sandbox::{Enforcement, NetworkMode, SandboxMode};

/// The protocol's version; a worker speaking another is refused with both named.
pub const PROTOCOL: u32 = 1;

/// The longest line either side accepts: a 64 MiB file in base64, with room to spare.
pub const MAX_LINE: usize = 96 << 20;

/// Bytes as base64 on the wire.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bytes(pub Vec<u8>);

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(text.as_bytes())
            .map(Bytes)
            .map_err(serde::de::Error::custom)
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What the worker says first.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Hello {
    /// [`PROTOCOL`] of the worker.
    pub protocol: u32,
    /// The worker's toolshed version.
    pub version: String,
    /// The workspace root, as the worker's machine spells it.
    pub root: String,
    /// The sandbox mode commands run in there.
    pub mode: String,
    /// What the sandbox enforces there (`None`: full access).
    pub enforcement: Option<WireEnforcement>,
    /// Why the sandbox cannot be built there, when it cannot (commands are then refused).
    pub sandbox_error: Option<String>,
    /// The shell command lines run in there (`bash` or `sh`); a worker that does not say
    /// gets `sh`, which every such machine has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell: Option<String>,
}

/// [`Enforcement`] on the wire.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireEnforcement {
    /// The mode's name.
    pub mode: String,
    /// The network mode's name.
    pub network: String,
    /// The layers in force.
    pub enforced: Vec<String>,
}

impl From<&Enforcement> for WireEnforcement {
    fn from(e: &Enforcement) -> Self {
        Self {
            mode: e.mode.as_str().into(),
            network: e.network.as_str().into(),
            enforced: e.enforced.clone(),
        }
    }
}

impl WireEnforcement {
    /// Back to [`Enforcement`]; `None` when a name is unknown.
    pub fn to_enforcement(&self) -> Option<Enforcement> {
        Some(Enforcement {
            mode: SandboxMode::parse(&self.mode).ok()?,
            network: NetworkMode::parse(&self.network).ok()?,
            enforced: self.enforced.clone(),
        })
    }
}

/// A request as sent: its arguments are any serializable value.
#[derive(Debug, Serialize)]
pub struct Request<'a, T: Serialize> {
    /// Matches the reply (0: no reply wanted).
    pub id: u64,
    /// The operation.
    pub op: &'a str,
    /// Its arguments.
    pub args: T,
}

/// A request as read: the arguments are parsed once the operation is known.
#[derive(Debug, Deserialize)]
pub struct Envelope<'a> {
    /// Matches the reply.
    pub id: u64,
    /// The operation.
    #[serde(borrow)]
    pub op: std::borrow::Cow<'a, str>,
    /// Its arguments.
    #[serde(borrow, default)]
    pub args: Option<&'a serde_json::value::RawValue>,
}

/// A line from the worker.
#[derive(Debug, Deserialize)]
pub struct Incoming<'a> {
    /// The handshake.
    #[serde(default)]
    pub hello: Option<Hello>,
    /// A reply's request id.
    #[serde(default)]
    pub id: Option<u64>,
    /// A reply's value.
    #[serde(borrow, default)]
    pub ok: Option<&'a serde_json::value::RawValue>,
    /// A reply's error.
    #[serde(default)]
    pub err: Option<OpsError>,
    /// An event.
    #[serde(default)]
    pub ev: Option<Event>,
}

/// What a process did, unasked.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum Event {
    /// It printed.
    Out {
        /// The process.
        h: u64,
        /// 1 stdout, 2 stderr.
        s: u8,
        /// Bytes the worker dropped before these (it keeps a head and a tail too).
        #[serde(default, skip_serializing_if = "is_zero")]
        k: u64,
        /// The bytes.
        d: Bytes,
    },
    /// It exited and its output was read.
    Exit {
        /// The process.
        h: u64,
        /// How.
        exit: WireExit,
    },
    /// The stop asked for is done: the tree is gone.
    StopDone {
        /// The process.
        h: u64,
    },
    /// It no longer takes input.
    InputGone {
        /// The process.
        h: u64,
    },
}

/// [`Metadata`] on the wire.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireMeta {
    /// What it is.
    pub kind: FileKind,
    /// Size in bytes.
    pub size: u64,
    /// Permission bits.
    pub mode: u32,
    /// Last modification, nanoseconds since the epoch (negative before it).
    pub mtime_ns: i128,
    /// Hard links.
    pub links: u64,
    /// A link's target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_target: Option<String>,
}

impl From<&Metadata> for WireMeta {
    fn from(m: &Metadata) -> Self {
        let mtime_ns = match m.modified.duration_since(UNIX_EPOCH) {
            Ok(d) => d.as_nanos() as i128,
            Err(e) => -(e.duration().as_nanos() as i128),
        };
        Self {
            kind: m.kind,
            size: m.size,
            mode: m.mode,
            mtime_ns,
            links: m.links,
            link_target: m.link_target.clone(),
        }
    }
}

impl From<WireMeta> for Metadata {
    fn from(m: WireMeta) -> Self {
        let nanos = Duration::from_nanos(m.mtime_ns.unsigned_abs().min(u64::MAX as u128) as u64);
        let modified = if m.mtime_ns >= 0 {
            UNIX_EPOCH.checked_add(nanos)
        } else {
            UNIX_EPOCH.checked_sub(nanos)
        }
        .unwrap_or(UNIX_EPOCH);
        Metadata {
            kind: m.kind,
            size: m.size,
            mode: m.mode,
            modified,
            links: m.links,
            link_target: m.link_target,
        }
    }
}

/// A [`DirEntry`] on the wire.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireEntry {
    /// The name.
    pub name: String,
    /// Facts about it.
    pub meta: WireMeta,
}

impl From<&DirEntry> for WireEntry {
    fn from(e: &DirEntry) -> Self {
        Self {
            name: e.name.clone(),
            meta: (&e.metadata).into(),
        }
    }
}

/// A read's reply.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireContents {
    /// The bytes read.
    pub bytes: Bytes,
    /// The whole size.
    pub size: u64,
    /// Facts about the file.
    pub meta: WireMeta,
    /// Where it really is, when known.
    #[serde(default)]
    pub real_path: Option<String>,
}

/// A listing's reply.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireListing {
    /// The entries.
    pub entries: Vec<WireEntry>,
    /// Whether entries were left out.
    pub truncated: bool,
}

/// What a change expects, on the wire.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum WireExpect {
    /// Anything.
    Anything,
    /// Nothing.
    Missing,
    /// These bytes.
    Content {
        /// The bytes.
        d: Bytes,
    },
}

/// One change of a commit, on the wire.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum WireChange {
    /// A write.
    Write {
        /// The file.
        path: String,
        /// Its content.
        data: Bytes,
        /// What must be there.
        expect: WireExpect,
        /// Whether parents are created.
        parents: bool,
    },
    /// A removal.
    Remove {
        /// The file.
        path: String,
        /// What must be there.
        expect: WireExpect,
    },
    /// A move.
    Move {
        /// From.
        from: String,
        /// To.
        to: String,
        /// The new content.
        data: Bytes,
        /// What must be at `from`.
        expect: WireExpect,
    },
}

/// A process to start, on the wire: a [`crate::SpawnRequest`] without the host-local
/// paths (extra writable, visible and revealed directories name this machine's files, not
/// the worker's).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireSpawn {
    /// The program.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Workspace-relative working directory.
    pub workdir: String,
    /// Variables set.
    pub env: BTreeMap<String, String>,
    /// A terminal's rows and columns.
    pub tty: Option<(u16, u16)>,
    /// `closed`, `piped` or `stream`.
    pub stdin: String,
    /// Bytes kept from the start of each stream.
    pub head_bytes: usize,
    /// Bytes kept from the end.
    pub tail_bytes: usize,
    /// When to kill for printing too much.
    pub kill_after_bytes: Option<u64>,
    /// The sandbox mode asked for.
    pub sandbox: Option<String>,
    /// Whether a person approved a wider mode.
    pub escalation_approved: bool,
    /// Hosts its network may reach through a proxy.
    pub network_hosts: Option<Vec<String>>,
    /// The web tools' network.
    pub web_network: bool,
    /// What it may write in the workspace.
    pub write_scope: toolshed_core::WriteScope,
}

impl WireSpawn {
    /// The output limits it asks for.
    pub fn limits(&self) -> OutputLimits {
        OutputLimits {
            head_bytes: self.head_bytes,
            tail_bytes: self.tail_bytes,
            kill_after_bytes: self.kill_after_bytes,
        }
    }
}

/// How a process ended, on the wire.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireExit {
    /// Its exit code, if it exited.
    pub code: Option<i32>,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    /// Milliseconds from start to exit.
    pub ms: u64,
    /// Milliseconds drained before giving up on descendants holding the output, if it did.
    pub abandoned_ms: Option<u64>,
    /// `graceful:MS`, `forced` or `output_limit`, when toolshed stopped it.
    pub stopped: Option<String>,
    /// `memory` or `processes`, when it ran into a limit.
    pub limit: Option<String>,
    /// What it left in its private temp.
    pub diverted: Vec<String>,
}

impl From<&Exit> for WireExit {
    fn from(e: &Exit) -> Self {
        let (code, signal) = match e.status {
            ExitStatus::Code(c) => (Some(c), None),
            ExitStatus::Signal(s) => (None, Some(s)),
        };
        Self {
            code,
            signal,
            ms: e.duration.as_millis() as u64,
            abandoned_ms: match e.drain {
                Drain::Complete => None,
                Drain::Abandoned { after } => Some(after.as_millis() as u64),
            },
            stopped: e.stopped.map(|s| match s {
                StopReason::Requested(Stop::Graceful { grace }) => {
                    format!("graceful:{}", grace.as_millis())
                }
                StopReason::Requested(Stop::Forced) => "forced".into(),
                StopReason::OutputLimit => "output_limit".into(),
            }),
            limit: e.limit.map(|l| {
                match l {
                    LimitHit::Memory => "memory",
                    LimitHit::Processes => "processes",
                }
                .into()
            }),
            diverted: e.diverted.clone(),
        }
    }
}

impl From<WireExit> for Exit {
    fn from(e: WireExit) -> Self {
        Exit {
            status: match (e.code, e.signal) {
                (Some(c), _) => ExitStatus::Code(c),
                (None, Some(s)) => ExitStatus::Signal(s),
                (None, None) => ExitStatus::Signal(9),
            },
            duration: Duration::from_millis(e.ms),
            drain: match e.abandoned_ms {
                None => Drain::Complete,
                Some(ms) => Drain::Abandoned {
                    after: Duration::from_millis(ms),
                },
            },
            stopped: e.stopped.as_deref().map(|s| match s {
                "forced" => StopReason::Requested(Stop::Forced),
                "output_limit" => StopReason::OutputLimit,
                other => StopReason::Requested(Stop::Graceful {
                    grace: Duration::from_millis(
                        other
                            .strip_prefix("graceful:")
                            .and_then(|ms| ms.parse().ok())
                            .unwrap_or(2000),
                    ),
                }),
            }),
            limit: e.limit.as_deref().map(|l| match l {
                "memory" => LimitHit::Memory,
                _ => LimitHit::Processes,
            }),
            diverted: e.diverted,
        }
    }
}
