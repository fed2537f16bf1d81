//! Changes on disk, for a language server: a project's directories watched one by one
//! (build output, dependencies and hidden directories left out, and a cap on how many),
//! events batched, and each changed source file reported to the server — a document it
//! was shown is sent again (`didChange`), any other as `workspace/didChangeWatchedFiles`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

use super::server::Server;

/// The most directories of one project watched.
pub(crate) const MAX_DIRS: usize = 4096;
/// Directories never watched: build output, dependencies, tool state.
const SKIPPED: &[&str] = &["target", "node_modules", "__pycache__", "dist", "venv"];
/// How long events are gathered before they are sent.
const BATCH: Duration = Duration::from_millis(150);
/// The most changed paths held between two batches.
const MAX_PENDING: usize = 10_000;
/// The most events waiting for the batching task.
const QUEUE: usize = 8192;

/// What happened to a file, as the protocol numbers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    Created = 1,
    Changed = 2,
    Deleted = 3,
}

/// A project's directories under watch; dropping it stops the watching.
pub(crate) struct Watch {
    _watcher: Arc<Mutex<RecommendedWatcher>>,
}

fn skipped(name: &str) -> bool {
    name.starts_with('.') || SKIPPED.contains(&name)
}

/// The directories under `root` (itself included) to watch, breadth first, at most
/// `room`; whether some were left out for the cap.
fn directories(root: &Path, room: usize) -> (Vec<PathBuf>, bool) {
    let mut found = vec![root.to_path_buf()];
    let mut at = 0;
    while at < found.len() {
        let Ok(entries) = std::fs::read_dir(&found[at]) else {
            at += 1;
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            // Links are not followed: they may lead out of the workspace.
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if entry.file_name().to_str().is_none_or(skipped) {
                continue;
            }
            if found.len() >= room {
                return (found, true);
            }
            found.push(entry.path());
        }
        at += 1;
    }
    (found, false)
}

/// Watches `dirs`; how many could be.
fn watch_all(watcher: &Mutex<RecommendedWatcher>, dirs: &[PathBuf]) -> usize {
    let mut watcher = watcher.lock().unwrap_or_else(|e| e.into_inner());
    dirs.iter()
        .filter(|d| watcher.watch(d, RecursiveMode::NonRecursive).is_ok())
        .count()
}

/// Starts watching `root` for `server` (held weakly: the watch ends with it). `wanted`
/// says which files the server cares about.
pub(crate) fn start(
    root: &Path,
    server: Weak<Server>,
    wanted: impl Fn(&Path) -> bool + Send + Sync + 'static,
) -> Result<Watch, String> {
    // Bounded: the events the server does not care about are dropped in the watcher's
    // thread; past the bound (an event storm) the rest are dropped too, with a warning.
    let (tx, mut rx) = mpsc::channel::<(PathBuf, Change, bool)>(QUEUE);
    let dropped = std::sync::atomic::AtomicBool::new(false);
    let handler = move |result: notify::Result<Event>| {
        let Ok(event) = result else { return };
        use notify::event::{ModifyKind, RenameMode};
        let change = match event.kind {
            EventKind::Create(_) | EventKind::Modify(ModifyKind::Name(RenameMode::To)) => {
                Change::Created
            }
            EventKind::Modify(ModifyKind::Name(RenameMode::From)) | EventKind::Remove(_) => {
                Change::Deleted
            }
            EventKind::Modify(ModifyKind::Metadata(_)) => return,
            EventKind::Modify(_) => Change::Changed,
            _ => return,
        };
        let dir = matches!(
            event.kind,
            EventKind::Create(notify::event::CreateKind::Folder)
        );
        for path in event.paths {
            if !dir && !wanted(&path) {
                continue;
            }
            if tx.try_send((path, change, dir)).is_err()
                && !dropped.swap(true, std::sync::atomic::Ordering::Relaxed)
            {
                tracing::warn!(
                    "too many file changes at once: a language server does not hear of some; it sees them when they are opened"
                );
            }
        }
    };
    let config = notify::Config::default().with_follow_symlinks(false);
    let watcher = Arc::new(Mutex::new(
        RecommendedWatcher::new(handler, config).map_err(|e| e.to_string())?,
    ));
    let (dirs, cut) = directories(root, MAX_DIRS);
    if cut {
        tracing::warn!(root = %root.display(), "the project has more than {MAX_DIRS} directories; its language server hears of changes in {MAX_DIRS} of them");
    }
    let mut count = watch_all(&watcher, &dirs);
    let weak_watcher: Weak<Mutex<RecommendedWatcher>> = Arc::downgrade(&watcher);
    tokio::spawn(async move {
        while let Some(first) = rx.recv().await {
            let mut pending: BTreeMap<PathBuf, Change> = BTreeMap::new();
            let mut new_dirs: Vec<PathBuf> = Vec::new();
            let mut take = |(path, change, dir): (PathBuf, Change, bool)| {
                if dir {
                    if path
                        .file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| !skipped(n))
                    {
                        new_dirs.push(path);
                    }
                } else if pending.len() < MAX_PENDING {
                    // A file created then changed in one batch is still new.
                    let merged = match (pending.get(&path), change) {
                        (Some(Change::Created), Change::Changed) => Change::Created,
                        _ => change,
                    };
                    pending.insert(path, merged);
                }
            };
            take(first);
            let until = tokio::time::Instant::now() + BATCH;
            while let Ok(Some(next)) = tokio::time::timeout_at(until, rx.recv()).await {
                take(next);
            }
            if let Some(watcher) = weak_watcher.upgrade() {
                for dir in new_dirs {
                    if count >= MAX_DIRS {
                        break;
                    }
                    let (dirs, _) = directories(&dir, MAX_DIRS - count);
                    count += watch_all(&watcher, &dirs);
                }
            }
            let Some(server) = server.upgrade() else {
                return;
            };
            if !pending.is_empty() {
                server.files_changed(pending.into_iter().collect()).await;
            }
        }
    });
    Ok(Watch { _watcher: watcher })
}
