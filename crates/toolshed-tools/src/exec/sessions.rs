//! Command sessions: commands that outlived the call that started them, kept per owner.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use toolshed_core::{ToolError, WriteScope};
use toolshed_ops::process::{Process, Stop};
use toolshed_ops::sandbox::SandboxMode;

/// One running (or finished, not yet evicted) command.
#[derive(Debug)]
pub struct Session {
    /// Its id, unique in this host.
    pub id: u64,
    /// The owner that started it; nobody else sees it.
    pub owner: String,
    /// The command line.
    pub cmd: String,
    /// Whether it has a terminal.
    pub tty: bool,
    /// The process.
    pub process: Arc<Process>,
    /// When it started.
    pub started: SystemTime,
    /// The total time it may run.
    pub timeout: Duration,
    /// Set when the timeout stopped it.
    pub timed_out: AtomicBool,
    /// How far into the combined output the owner has been shown.
    pub cursor: AtomicU64,
    /// The sandbox mode it runs in (`None`: the host's).
    pub mode: Option<SandboxMode>,
    /// What its sandbox keeps read-only or writable, from policy rules on `writes`.
    pub write_scope: WriteScope,
}

impl Session {
    /// The offset up to which output was returned.
    pub fn cursor(&self) -> u64 {
        self.cursor.load(Ordering::Acquire)
    }

    /// Moves the cursor forward (never back).
    pub fn advance(&self, to: u64) {
        self.cursor.fetch_max(to, Ordering::AcqRel);
    }

    /// Whether a caller narrowed to `mode` (`None`: the host's) and `scope` may type into
    /// it: only when the session is held at least as tightly, so that a read-only token
    /// cannot drive a writable shell its owner started under another token or profile.
    /// A mode left to the host (`None`) counts as `host`'s: a session a person approved
    /// to run wider than the host is driven only by a caller as wide.
    pub fn may_type(
        &self,
        mode: Option<SandboxMode>,
        host: SandboxMode,
        scope: &WriteScope,
    ) -> Result<(), ToolError> {
        let (caller, mine) = (mode.unwrap_or(host), self.mode.unwrap_or(host));
        if mine > caller {
            return Err(ToolError::Denied {
                rule: "sandbox".into(),
                message: format!(
                    "session {} runs in sandbox mode {}, wider than this caller's {}: its \
                     output can be read, but typing into it is refused; start a session of \
                     your own with exec_command",
                    self.id,
                    mine.as_str(),
                    caller.as_str()
                ),
            });
        }
        if !scope.is_empty() && *scope != self.write_scope {
            return Err(ToolError::Denied {
                rule: "policy".into(),
                message: format!(
                    "session {} was started with other write rules than apply to this call \
                     (policy rules on `writes`); typing into it is refused; start a session of \
                     your own with exec_command",
                    self.id
                ),
            });
        }
        Ok(())
    }
}

/// Every live session of a host, bounded.
#[derive(Debug, Default)]
pub struct SessionTable {
    sessions: Mutex<BTreeMap<u64, Arc<Session>>>,
    next: AtomicU64,
    /// Where a session that outlived its call announces its end.
    notices: Option<Arc<toolshed_ops::Notices>>,
}

/// What a new session is made of, besides its id.
pub(crate) struct NewSession {
    /// The owner.
    pub owner: String,
    /// The command line.
    pub cmd: String,
    /// Whether it has a terminal.
    pub tty: bool,
    /// Its total time limit.
    pub timeout: Duration,
    /// The sandbox mode it runs in.
    pub mode: Option<SandboxMode>,
    /// Its write scope.
    pub write_scope: WriteScope,
}

impl SessionTable {
    /// An empty table whose sessions announce `command_session.closed` through `notices`.
    pub fn with_notices(notices: Arc<toolshed_ops::Notices>) -> Self {
        Self {
            notices: Some(notices),
            ..Self::default()
        }
    }

    /// Watches a session that outlived the call that started it: when its process ends,
    /// `command_session.closed` is announced to its owner.
    pub fn announce_close(&self, session: &Arc<Session>) {
        let Some(notices) = self.notices.clone() else {
            return;
        };
        let session = session.clone();
        tokio::spawn(async move {
            while session
                .process
                .wait(Duration::from_secs(3600))
                .await
                .is_none()
            {}
            let mut fields = serde_json::Map::new();
            fields.insert("session_id".into(), session.id.into());
            fields.insert("owner".into(), session.owner.clone().into());
            fields.insert("tty".into(), session.tty.into());
            if let Some(exit) = session.process.exit() {
                super::exit_fields(
                    &exit,
                    session.timed_out.load(Ordering::Acquire),
                    &mut fields,
                );
            }
            notices.publish(
                "command_session.closed",
                Some(&session.owner),
                serde_json::Value::Object(fields),
            );
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<Session>>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts a process with `spawn` and keeps it as a session, when the limits of `room`
    /// allow (finished sessions are evicted first, oldest first). The table stays locked while
    /// `spawn` runs (it is short), so the limit holds under concurrent calls.
    pub(crate) fn start(
        &self,
        room: &super::Room<'_>,
        new: NewSession,
        spawn: impl FnOnce() -> Result<Process, ToolError>,
    ) -> Result<Arc<Session>, ToolError> {
        let mut sessions = self.lock();
        super::make_room(
            &mut sessions,
            room,
            |s: &Session| s.owner.as_str(),
            |s: &Session| s.process.is_running(),
        )?;
        let process = spawn()?;
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let session = Arc::new(Session {
            id,
            owner: new.owner,
            cmd: new.cmd,
            tty: new.tty,
            process: Arc::new(process),
            started: SystemTime::now(),
            timeout: new.timeout,
            timed_out: AtomicBool::new(false),
            cursor: AtomicU64::new(0),
            mode: new.mode,
            write_scope: new.write_scope,
        });
        sessions.insert(id, session.clone());
        Ok(session)
    }

    /// The session `id` of `owner`. Another owner's session is reported as missing, exactly
    /// like one that never existed.
    pub fn get(&self, owner: &str, id: u64) -> Result<Arc<Session>, ToolError> {
        self.lock()
            .get(&id)
            .filter(|s| s.owner == owner)
            .cloned()
            .ok_or_else(|| {
                ToolError::NotFound(format!(
                    "no command session {id}; command_run_list shows yours (finished sessions are removed when room is needed)"
                ))
            })
    }

    /// Forgets session `id` (its process is stopped once nothing else holds it).
    pub fn remove(&self, id: u64) -> Option<Arc<Session>> {
        self.lock().remove(&id)
    }

    /// The sessions of `owner`, oldest first.
    pub fn of(&self, owner: &str) -> Vec<Arc<Session>> {
        self.lock()
            .values()
            .filter(|s| s.owner == owner)
            .cloned()
            .collect()
    }

    /// Every owner's sessions.
    pub fn all(&self) -> Vec<Arc<Session>> {
        self.lock().values().cloned().collect()
    }

    /// How many sessions are kept.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// How many kept sessions still run.
    pub fn running(&self) -> usize {
        self.lock()
            .values()
            .filter(|s| s.process.is_running())
            .count()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops the process trees of `owner`'s sessions (and its sub-owners') and forgets them.
    pub async fn stop_owner(&self, owner: &toolshed_core::OwnerId) {
        let gone: Vec<Arc<Session>> = {
            let mut table = self.lock();
            let ids: Vec<u64> = table
                .values()
                .filter(|s| owner.covers(&s.owner))
                .map(|s| s.id)
                .collect();
            ids.iter().filter_map(|id| table.remove(id)).collect()
        };
        stop_sessions(gone).await;
    }

    /// Stops every session's process tree and forgets them all.
    pub async fn stop_all(&self) {
        let all: Vec<Arc<Session>> = std::mem::take(&mut *self.lock()).into_values().collect();
        stop_sessions(all).await;
    }
}

/// Stops every tree at once, then waits for each.
async fn stop_sessions(all: Vec<Arc<Session>>) {
    for session in &all {
        session.process.start_stop(Stop::graceful());
    }
    for session in all {
        session.process.terminate(Stop::graceful()).await;
    }
}
