//! Watching: how a running server learns what other processes changed, without looking
//! while nothing changes.
//!
//! Two things change behind a server's back: the user plugin roots (an install renames a
//! plugin into place, a person edits one, `toolshed plugins uninstall` deletes one) and the
//! state database (`toolshed plugins disable`, `config`, `grant` run in another process).
//! Looking at both every half second cost an idle server a directory walk and several
//! SQLite reads per tick, forever. Instead one file-system watcher — one per host, since a
//! user has few inotify instances (128 by default) — reports:
//!
//! - **the user roots**, recursively. A root that does not exist yet (the workspace's
//!   `.toolshed/plugins` usually) is looked for every [`MISSING_ROOT_EVERY`] — one `stat`
//!   — and watched once it appears. Its nearest existing ancestor is not watched instead:
//!   that is usually the workspace itself, where the kernel would report every file an
//!   agent opens (a wake-up of the watcher's thread per read). Nothing is created to be
//!   watched. Hidden entries at the top of a root (install staging, the install lock) are
//!   ignored.
//! - **the store's changes file** ([`CHANGES_FILE`](crate::store::CHANGES_FILE), beside
//!   the database), which every process rewrites after it changes what a registry follows
//!   (plugins enabled, config values, grants). Not the database itself: every audit row,
//!   read record and memory rewrites its write-ahead log, and each of those writes would be
//!   an event to queue, read and classify (15 % of the CPU of a stream of memory stores). A
//!   rewrite is followed by one `PRAGMA data_version` read
//!   ([`StateStore::data_version`]), which moves only when another connection committed;
//!   only then does the registry sync from the store. When the file is missing (deleted
//!   under a running server), the data dir is watched until it is back.
//!
//! The notify callback runs on the watcher's own thread: it only classifies the event,
//! ORs a bit into a shared set and wakes the task with `try_send` on a channel of one
//! (a wake-up already queued covers the new bits too). The task debounces: the plugin
//! roots are looked at once they have been quiet for [`QUIET`], and a change is applied
//! only when a second look, after another quiet period, sees the same files
//! ([`Registry::rescan_user_roots`]), so a copy in progress is not loaded half done. The
//! store is looked at [`STORE_SETTLE`] after its first write, and never delays the plugin
//! roots. Everything blocking runs on the blocking pool. An overflowing kernel queue, or
//! an error from the watcher, is answered with a look at everything.
//!
//! When notifications cannot be had at all (the inotify limits are reached), the registry
//! says so in a warning and falls back to looking every [`POLL_EVERY`]: slower and not
//! free, but correct. Nothing here guards security, so a fallback is fine.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use notify::event::{AccessKind, AccessMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{Registry, blocking};
#[cfg(any(doc, test))]
use crate::store::StateStore;

/// How long the plugin roots must be quiet after a change before they are looked at.
pub(super) const QUIET: Duration = Duration::from_millis(75);

/// How long after a first write to the state database its data version is read: a commit
/// is several writes, and they are read as one.
pub(super) const STORE_SETTLE: Duration = Duration::from_millis(25);

/// How often the fallback looks, when file-system notifications cannot be had.
pub(super) const POLL_EVERY: Duration = Duration::from_millis(500);

/// How often a user root that does not exist is looked for.
pub(super) const MISSING_ROOT_EVERY: Duration = Duration::from_secs(1);

/// Something changed in a user root.
const PLUGINS: u8 = 1;
/// The state database was written.
const STORE: u8 = 2;
/// A root or a directory on the way to it appeared or went: what to watch changes.
const REWATCH: u8 = 4;
const EVERYTHING: u8 = PLUGINS | STORE | REWATCH;

/// How a watching registry learns of changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchMode {
    /// File-system notifications: nothing is done while nothing changes.
    Notify,
    /// Looking every half second, because notifications could not be set up.
    Polling,
}

/// What the registry did to keep up with other processes, counted since it started: a
/// server that nobody touches should show no growth.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WatchStats {
    /// How the watcher works, once started.
    pub mode: Option<WatchMode>,
    /// Reads of the state store's data version.
    pub store_checks: u64,
    /// Syncs from the state store ([`Registry::sync_from_store`]).
    pub syncs: u64,
    /// Looks at the user plugin roots ([`Registry::rescan_user_roots`]).
    pub rescans: u64,
}

/// The watcher's counters and stop signal, kept by the registry.
#[derive(Default)]
pub(super) struct WatchState {
    store_checks: AtomicU64,
    syncs: AtomicU64,
    rescans: AtomicU64,
    mode: Mutex<Option<WatchMode>>,
    /// The state store's data version when the registry last read its states.
    seen_version: Mutex<Option<i64>>,
    /// Cancelled when the registry is dropped: the watcher task ends.
    pub stop: CancellationToken,
}

impl WatchState {
    pub(super) fn count_store_check(&self) {
        self.store_checks.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn count_sync(&self) {
        self.syncs.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn count_rescan(&self) {
        self.rescans.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn seen_version(&self) -> Option<i64> {
        *self.seen_version.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn set_seen_version(&self, version: Option<i64>) {
        *self.seen_version.lock().unwrap_or_else(|p| p.into_inner()) = version;
    }

    fn set_mode(&self, mode: WatchMode) {
        *self.mode.lock().unwrap_or_else(|p| p.into_inner()) = Some(mode);
    }

    fn stats(&self) -> WatchStats {
        WatchStats {
            mode: *self.mode.lock().unwrap_or_else(|p| p.into_inner()),
            store_checks: self.store_checks.load(Ordering::Relaxed),
            syncs: self.syncs.load(Ordering::Relaxed),
            rescans: self.rescans.load(Ordering::Relaxed),
        }
    }
}

impl Registry {
    /// Keeps this registry in step with other processes: the user plugin roots (plugins
    /// installed, changed, removed) and the choices they record in the state store. One
    /// file-system watcher reports changes; the roots are looked at after 75 ms of quiet
    /// (a change applied when two looks agree), the store is synced only when its
    /// `data_version` says another connection committed, and nothing runs while nothing
    /// changes. Each change is published as a `PluginStateChanged` event, which the MCP
    /// door turns into `notifications/tools/list_changed`. When notifications cannot be
    /// had, a warning says why and the registry looks every half second instead.
    ///
    /// Returns once the watches are in place and whatever changed since discovery has been
    /// looked at. The task ends when the registry is dropped, or when it is aborted. Call
    /// it once per registry: each call takes an inotify instance of its own.
    pub async fn watch(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let targets = Arc::new(Targets::new(&self.user_roots, self.store.path()));
        let flags = Arc::new(AtomicU8::new(0));
        let (wake, woken) = mpsc::channel(1);
        let started = {
            let flags = flags.clone();
            blocking(move || WatchSet::start(targets, flags, wake)).await
        };
        let registry = Arc::downgrade(self);
        let stop = self.watching.stop.clone();
        match started {
            Some(Ok(set)) => {
                self.watching.set_mode(WatchMode::Notify);
                // What changed between discovery and the watches being in place.
                self.check_store_logged().await;
                let unsettled = self.look_logged().await;
                tokio::spawn(run_notified(registry, stop, set, woken, flags, unsettled))
            }
            failed => {
                let cause = match failed {
                    Some(Err(e)) => e.to_string(),
                    _ => "the runtime is shutting down".to_string(),
                };
                tracing::warn!(
                    %cause,
                    every_ms = POLL_EVERY.as_millis() as u64,
                    "cannot watch the plugin directories and the state database for changes; looking at them periodically instead (raise fs.inotify.max_user_instances or max_user_watches to avoid this)"
                );
                self.watching.set_mode(WatchMode::Polling);
                tokio::spawn(run_polling(registry, stop))
            }
        }
    }

    /// What the watcher did so far.
    pub fn watch_stats(&self) -> WatchStats {
        self.watching.stats()
    }

    async fn check_store_logged(&self) {
        match self.check_store().await {
            Ok(changed) if !changed.is_empty() => {
                tracing::info!(plugins = ?changed, "plugin states changed in the state store");
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "cannot read plugin states"),
        }
    }

    /// Looks at the user roots; returns whether changes wait for another look.
    async fn look_logged(&self) -> bool {
        let look = self.look_at_user_roots().await;
        if !look.touched.is_empty() {
            tracing::info!(plugins = ?look.touched, "plugin directories changed");
        }
        look.unsettled
    }
}

/// The watcher task: sleeps until an event, then debounces and looks.
async fn run_notified(
    registry: Weak<Registry>,
    stop: CancellationToken,
    mut set: WatchSet,
    mut woken: mpsc::Receiver<()>,
    flags: Arc<AtomicU8>,
    unsettled: bool,
) {
    let mut plugins_due = unsettled.then(|| Instant::now() + QUIET);
    let mut store_due: Option<Instant> = None;
    let mut rewatch = false;
    let mut look_for_roots = tokio::time::interval(MISSING_ROOT_EVERY);
    look_for_roots.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let next = plugins_due.into_iter().chain(store_due).min();
        tokio::select! {
            () = stop.cancelled() => return,
            _ = look_for_roots.tick(), if !set.missing.is_empty() => {
                let targets = set.targets.clone();
                let Some(missing) = blocking(move || targets.missing_roots()).await else {
                    return;
                };
                if missing != set.missing {
                    rewatch = true;
                    plugins_due = Some(Instant::now() + QUIET);
                }
            }
            wake = woken.recv() => {
                if wake.is_none() {
                    return;
                }
                let bits = flags.swap(0, Ordering::AcqRel);
                let now = Instant::now();
                if bits & (PLUGINS | REWATCH) != 0 {
                    plugins_due = Some(now + QUIET);
                }
                rewatch |= bits & REWATCH != 0;
                if bits & STORE != 0 {
                    store_due.get_or_insert(now + STORE_SETTLE);
                }
            }
            () = tokio::time::sleep_until(next.unwrap_or_else(Instant::now)), if next.is_some() => {
                let Some(registry) = registry.upgrade() else { return };
                let now = Instant::now();
                if store_due.is_some_and(|due| due <= now) {
                    store_due = None;
                    registry.check_store_logged().await;
                }
                if plugins_due.is_some_and(|due| due <= now) {
                    plugins_due = None;
                    if std::mem::take(&mut rewatch) {
                        let Some((back, updated)) = blocking(move || {
                            let updated = set.update();
                            (set, updated)
                        })
                        .await else {
                            return;
                        };
                        set = back;
                        if let Err(e) = updated {
                            tracing::warn!(error = %e, "cannot watch a plugin directory; changes in it are seen late");
                        }
                    }
                    if registry.look_logged().await {
                        plugins_due = Some(Instant::now() + QUIET);
                    }
                }
            }
        }
    }
}

/// The fallback: looks at the store and the user roots every [`POLL_EVERY`].
async fn run_polling(registry: Weak<Registry>, stop: CancellationToken) {
    let mut tick = tokio::time::interval(POLL_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        let Some(registry) = registry.upgrade() else {
            return;
        };
        registry.check_store_logged().await;
        registry.look_logged().await;
    }
}

/// The paths that matter, and what an event on each means.
#[derive(Debug)]
struct Targets {
    /// The user plugin roots, absolute.
    roots: Vec<PathBuf>,
    /// The data dir holding the state database; `None` for an in-memory store.
    data_dir: Option<PathBuf>,
    /// The store's changes file.
    changes: Option<PathBuf>,
}

impl Targets {
    fn new(roots: &[PathBuf], database: &Path) -> Self {
        let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        let database = (database != Path::new(":memory:")).then(|| absolute(database));
        let data_dir = database
            .as_deref()
            .and_then(Path::parent)
            .map(Path::to_path_buf);
        let changes = database.map(|db| db.with_file_name(crate::store::CHANGES_FILE));
        Self {
            roots: roots.iter().map(|r| absolute(r)).collect(),
            data_dir,
            changes,
        }
    }

    /// What to watch now: each root that exists, recursively; the changes file, or the
    /// data dir alone while the file is missing. Blocking (stats paths).
    fn wanted(&self) -> BTreeMap<PathBuf, RecursiveMode> {
        let mut wanted = BTreeMap::new();
        if let Some(changes) = self.changes.as_ref().filter(|f| f.is_file()) {
            wanted.insert(changes.clone(), RecursiveMode::NonRecursive);
        } else if let Some(dir) = self.data_dir.as_ref().filter(|d| d.is_dir()) {
            wanted.insert(dir.clone(), RecursiveMode::NonRecursive);
        }
        for root in self.roots.iter().filter(|r| r.is_dir()) {
            wanted.insert(root.clone(), RecursiveMode::Recursive);
        }
        wanted
    }

    /// The user roots that do not exist now, looked for every [`MISSING_ROOT_EVERY`].
    /// Blocking (stats paths).
    fn missing_roots(&self) -> Vec<PathBuf> {
        self.roots.iter().filter(|r| !r.is_dir()).cloned().collect()
    }

    /// What an event means, as bits; 0 for an event that does not matter.
    fn classify(&self, event: &Event) -> u8 {
        if event.need_rescan() {
            return EVERYTHING;
        }
        match event.kind {
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => {}
            // Reads, this registry's own looks among them.
            EventKind::Access(_) => return 0,
            _ => {}
        }
        if event.paths.is_empty() {
            return EVERYTHING;
        }
        let mut bits = 0;
        for path in &event.paths {
            if self.changes.as_ref() == Some(path) {
                // Made again, or gone: what to watch changes too.
                bits |= match event.kind {
                    EventKind::Create(_) | EventKind::Remove(_) => STORE | REWATCH,
                    _ => STORE,
                };
                continue;
            }
            for root in &self.roots {
                if let Ok(inside) = path.strip_prefix(root) {
                    bits |= match inside.components().next() {
                        None => PLUGINS | REWATCH,
                        Some(Component::Normal(name))
                            if name.to_str().is_none_or(|n| n.starts_with('.')) =>
                        {
                            0
                        }
                        Some(_) => PLUGINS,
                    };
                } else if root.starts_with(path) {
                    bits |= PLUGINS | REWATCH;
                }
            }
        }
        bits
    }
}

/// The one file-system watcher of a registry, and what it watches.
struct WatchSet {
    watcher: RecommendedWatcher,
    targets: Arc<Targets>,
    watched: BTreeMap<PathBuf, RecursiveMode>,
    /// The user roots that did not exist at the last update, looked for periodically.
    missing: Vec<PathBuf>,
}

impl WatchSet {
    /// Starts the watcher, reporting to `flags` and `wake`, and watches what is wanted.
    /// Any watch that cannot be set up fails the whole: a watcher that silently misses a
    /// root is worse than the fallback. Blocking.
    fn start(
        targets: Arc<Targets>,
        flags: Arc<AtomicU8>,
        wake: mpsc::Sender<()>,
    ) -> notify::Result<Self> {
        let classify = targets.clone();
        let handler = move |result: notify::Result<Event>| {
            let bits = match &result {
                Ok(event) => classify.classify(event),
                Err(e) => {
                    tracing::warn!(error = %e, "file-system notifications failed; looking at everything again");
                    EVERYTHING
                }
            };
            if bits != 0 {
                flags.fetch_or(bits, Ordering::AcqRel);
                // Full: a wake-up is queued and will see these bits. Closed: the task ended.
                let _ = wake.try_send(());
            }
        };
        // Links are not followed, as fingerprints do not follow them: a link in a plugin
        // to a large tree would cost a watch per directory of it.
        let config = notify::Config::default().with_follow_symlinks(false);
        let watcher = RecommendedWatcher::new(handler, config)?;
        let mut set = Self {
            watcher,
            targets,
            watched: BTreeMap::new(),
            missing: Vec::new(),
        };
        set.update()?;
        Ok(set)
    }

    /// Watches what is wanted now and stops watching what is not. A path watched already
    /// is watched again: a root removed and made again is a new directory to the kernel.
    /// Returns the first failure; the other watches are set up all the same. Blocking.
    fn update(&mut self) -> notify::Result<()> {
        // Missing ones first: a root made in between is then both watched and seen to
        // have appeared (a rewatch too many), never neither.
        self.missing = self.targets.missing_roots();
        let wanted = self.targets.wanted();
        let stale: Vec<PathBuf> = self
            .watched
            .iter()
            .filter(|(path, mode)| wanted.get(*path) != Some(*mode))
            .map(|(path, _)| path.clone())
            .collect();
        for path in stale {
            // Gone already when its directory was removed.
            let _ = self.watcher.unwatch(&path);
            self.watched.remove(&path);
        }
        let mut failed = None;
        for (path, mode) in wanted {
            match self.watcher.watch(&path, mode) {
                Ok(()) => {
                    self.watched.insert(path, mode);
                }
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        failed.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests {
    use notify::event::{CreateKind, ModifyKind, RenameMode};

    use super::*;

    fn targets() -> Targets {
        Targets::new(
            &[
                PathBuf::from("/data/plugins"),
                PathBuf::from("/ws/.toolshed/plugins"),
            ],
            Path::new("/data/toolshed.db"),
        )
    }

    fn event(kind: EventKind, paths: &[&str]) -> Event {
        paths
            .iter()
            .fold(Event::new(kind), |e, p| e.add_path(PathBuf::from(p)))
    }

    #[test]
    fn events_are_sorted_by_what_they_touch() {
        let t = targets();
        let modify = EventKind::Modify(ModifyKind::Any);
        let create = EventKind::Create(CreateKind::Folder);
        let cases: &[(EventKind, &[&str], u8)] = &[
            (modify, &["/data/plugins/hello/main.js"], PLUGINS),
            (modify, &["/data/state.changed"], STORE),
            (create, &["/data/state.changed"], STORE | REWATCH),
            (
                EventKind::Remove(notify::event::RemoveKind::File),
                &["/data/state.changed"],
                STORE | REWATCH,
            ),
            // Every audit row and memory writes the database: not an event to act on.
            (modify, &["/data/toolshed.db-wal"], 0),
            (modify, &["/data/toolshed.db"], 0),
            (modify, &["/data/toolshed.db-shm"], 0),
            (modify, &["/data/token"], 0),
            // Install staging and the install lock.
            (create, &["/data/plugins/.staging-1/plugin.toml"], 0),
            (modify, &["/data/plugins/.lock"], 0),
            // A staged plugin renamed into place.
            (
                EventKind::Modify(ModifyKind::Name(RenameMode::Both)),
                &["/data/plugins/.staging-1", "/data/plugins/hello"],
                PLUGINS,
            ),
            // The workspace root is watched while .toolshed/plugins does not exist.
            (create, &["/ws/.toolshed"], PLUGINS | REWATCH),
            (create, &["/ws/.toolshed/plugins"], PLUGINS | REWATCH),
            (modify, &["/ws/README.md"], 0),
            (create, &["/data/plugins"], PLUGINS | REWATCH),
            // Reads, this registry's own looks among them.
            (
                EventKind::Access(AccessKind::Open(AccessMode::Any)),
                &["/data/plugins/hello"],
                0,
            ),
            (
                EventKind::Access(AccessKind::Close(AccessMode::Read)),
                &["/data/plugins/hello/main.js"],
                0,
            ),
            (
                EventKind::Access(AccessKind::Close(AccessMode::Write)),
                &["/data/plugins/hello/main.js"],
                PLUGINS,
            ),
        ];
        for (kind, paths, bits) in cases {
            assert_eq!(
                t.classify(&event(*kind, paths)),
                *bits,
                "{kind:?} {paths:?}"
            );
        }
        let overflow = Event::new(EventKind::Other).set_flag(notify::event::Flag::Rescan);
        assert_eq!(t.classify(&overflow), EVERYTHING);
    }

    #[tokio::test]
    async fn the_fallback_looks_periodically_and_ends_with_the_registry() {
        let data = tempfile::tempdir().unwrap();
        let root = data.path().join("plugins");
        let store = StateStore::open(&data.path().join("toolshed.db")).unwrap();
        let roots = super::super::DiscoveryRoots {
            user: vec![root.clone()],
            ..Default::default()
        };
        let registry = Arc::new(
            Registry::discover(roots, Arc::new(store), crate::events::EventBus::default()).await,
        );
        let task = tokio::spawn(run_polling(
            Arc::downgrade(&registry),
            registry.watching.stop.clone(),
        ));
        std::fs::create_dir_all(root.join("notes")).unwrap();
        std::fs::write(
            root.join("notes/plugin.toml"),
            "id = \"acme.notes\"\nversion = \"1.0.0\"\nname = \"Notes\"\nkind = \"js\"\n",
        )
        .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while registry.plugin("acme.notes").is_none() {
            assert!(std::time::Instant::now() < deadline, "not found by polling");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(registry.watch_stats().rescans >= 2, "two looks agreed");
        drop(registry);
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("the polling task ended")
            .unwrap();
    }

    #[test]
    fn a_missing_root_is_looked_for_and_its_ancestors_are_not_watched() {
        let data = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let t = Targets::new(
            &[
                data.path().join("plugins"),
                ws.path().join(".toolshed/plugins"),
            ],
            &data.path().join("toolshed.db"),
        );
        // The workspace, where an agent opens files all day, is never watched.
        assert_eq!(
            t.wanted(),
            BTreeMap::from([(data.path().to_path_buf(), RecursiveMode::NonRecursive)])
        );
        assert_eq!(t.missing_roots(), t.roots);
        std::fs::create_dir_all(data.path().join("plugins")).unwrap();
        std::fs::create_dir_all(ws.path().join(".toolshed")).unwrap();
        assert_eq!(
            t.wanted(),
            BTreeMap::from([
                (data.path().to_path_buf(), RecursiveMode::NonRecursive),
                (data.path().join("plugins"), RecursiveMode::Recursive),
            ])
        );
        assert_eq!(t.missing_roots(), vec![t.roots[1].clone()]);
        std::fs::create_dir_all(ws.path().join(".toolshed/plugins")).unwrap();
        assert!(t.missing_roots().is_empty());
        assert_eq!(t.wanted().len(), 3);
    }
}
