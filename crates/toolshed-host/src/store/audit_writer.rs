//! The audit writer: the store's own thread. Every call's row is on disk before its reply leaves, and rows reach
//! SQLite in batches.
//!
//! A server killed right after replying must not have acknowledged a call it never
//! recorded. Committing a transaction per call before replying cost 40% of the
//! throughput (a WAL commit, and the thread wake-ups around it, per call), so a row is
//! first appended — in the same lock that queues it — to this process's audit journal
//! (`<data dir>/audit-journal/<pid>-<time>.log`), copied into a shared mapping of the file
//! (no system call: see [`Journal`]): once there, it survives the process being killed (it
//! is in the kernel's page cache). The writer thread then commits
//! whatever has gathered in one transaction per batch, waiting up to [`LINGER`] after the
//! first row of a batch so that even calls made one at a time share transactions, and
//! empties the journal whenever everything queued is committed. The journal is locked
//! (`flock`) while its process lives; a store opened later replays the journals of dead
//! processes — rows not yet in the log are inserted — and deletes them.
//!
//! Nothing is dropped. When [`CAPACITY`] rows are waiting, [`AuditQueue::push`] waits for
//! the writer to take them (back-pressure on the callers, never a silent loss).
//! [`AuditQueue::flush`] waits until every row queued before it is written; the store
//! calls it before reading the audit log (so a reader sees its own calls) and the host on
//! shutdown. Dropping the queue writes what is left and stops the thread. A batch that
//! SQLite refuses is logged as a warning with its row count: it is not retried, since the
//! same rows would fail again.

use std::collections::HashSet;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::db::{Db, args};
use super::{AuditRecord, Engine, StoreError, insert_audit_rows};

/// How long the writer waits for more rows after the first row of a batch.
pub(crate) const LINGER: Duration = Duration::from_millis(5);

/// A batch is written as soon as this many rows are waiting, without waiting out
/// [`LINGER`].
pub(crate) const BATCH: usize = 512;

/// The most rows waiting to be written; past this, callers wait for the writer.
pub(crate) const CAPACITY: usize = 8192;

/// The directory of audit journals, inside the data dir.
pub(crate) const JOURNAL_DIR: &str = "audit-journal";

/// How much of a journal is reserved on disk and mapped into memory: a row that fits is
/// copied there, with no system call; one past it is written with `pwrite`.
const MAPPED_BYTES: usize = 1 << 20;

/// This process's audit journal: rows queued and not yet committed, one JSON line each.
///
/// Rows are copied into a shared mapping of the file's first [`MAPPED_BYTES`] (reserved
/// with `fallocate` first, so writing a page can never meet a full disk): the copy is in
/// the page cache at once, as a `write` would be, and survives the process being killed.
/// Emptying it zeroes what was written (the rest of the file is zeros already), so a reader
/// takes the rows up to the zeros. Where the space cannot be reserved the rows are written
/// with `pwrite`, as they are past the mapped part.
pub(crate) struct Journal {
    file: File,
    path: PathBuf,
    map: Option<memmap2::MmapMut>,
    /// Bytes of rows written since the journal was last emptied.
    len: usize,
}

impl Journal {
    /// Creates this process's journal in `dir` (created if missing) and locks it.
    pub(crate) fn create(dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(format!("{}.log", crate::kit::process_tag()));
        let file = std::fs::OpenOptions::new()
            .create_new(true)
            .read(true)
            .write(true)
            .open(&path)?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive)?;
        let map = match Self::map(&file) {
            Ok(map) => Some(map),
            Err(e) => {
                tracing::debug!(journal = %path.display(), error = %e,
                    "the audit journal is written with pwrite");
                let _ = file.set_len(0);
                None
            }
        };
        Ok(Self {
            file,
            path,
            map,
            len: 0,
        })
    }

    /// The file's first [`MAPPED_BYTES`], reserved on disk and mapped shared.
    #[allow(unsafe_code)]
    fn map(file: &File) -> std::io::Result<memmap2::MmapMut> {
        rustix::fs::fallocate(
            file,
            rustix::fs::FallocateFlags::empty(),
            0,
            MAPPED_BYTES as u64,
        )?;
        // SAFETY: the mapping's memory is only ever reached through this `Journal`, which
        // owns the file; its blocks are allocated, and the file is never made shorter than
        // the mapping (`clear` cuts only what lies past it), so no access can fault. Other
        // processes leave a journal alone while its `flock` is held.
        unsafe { memmap2::MmapOptions::new().len(MAPPED_BYTES).map_mut(file) }
    }

    fn append(&mut self, record: &AuditRecord) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(record).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let end = self.len + line.len();
        match &mut self.map {
            Some(map) if end <= map.len() => map[self.len..end].copy_from_slice(&line),
            _ => std::os::unix::fs::FileExt::write_all_at(&self.file, &line, self.len as u64)?,
        }
        self.len = end;
        Ok(())
    }

    /// Drops the first `committed` bytes — rows the log now has — and keeps the rows
    /// appended after them, moved to the start: a journal under steady load, where rows
    /// arrive while a batch is written, stays the size of a batch or two instead of
    /// growing until the load pauses. A backlog too large to move at once (past the
    /// mapped part) is left whole until a later batch can empty it.
    fn drop_committed(&mut self, committed: usize) {
        if committed >= self.len {
            return self.clear();
        }
        if committed == 0 {
            return;
        }
        let kept = self.len - committed;
        match &mut self.map {
            Some(map) if self.len <= map.len() => {
                // The rows kept land over committed ones before the old copies are zeroed: a
                // kill in between leaves rows twice (the replay inserts each call once) or
                // cut (skipped), never a kept row lost.
                map.copy_within(committed..self.len, 0);
                map[kept..self.len].fill(0);
                self.len = kept;
            }
            Some(_) => {}
            None => {
                let mut rows = vec![0; kept];
                let moved = std::os::unix::fs::FileExt::read_exact_at(
                    &self.file,
                    &mut rows,
                    committed as u64,
                )
                .and_then(|()| std::os::unix::fs::FileExt::write_all_at(&self.file, &rows, 0))
                .and_then(|()| self.file.set_len(kept as u64));
                match moved {
                    Ok(()) => self.len = kept,
                    Err(e) => {
                        tracing::warn!(journal = %self.path.display(), error = %e, "cannot trim the audit journal")
                    }
                }
            }
        }
    }

    fn clear(&mut self) {
        let mapped = match &mut self.map {
            Some(map) => {
                let written = self.len.min(map.len());
                map[..written].fill(0);
                map.len()
            }
            None => 0,
        };
        if self.len > mapped
            && let Err(e) = self.file.set_len(mapped as u64)
        {
            tracing::warn!(journal = %self.path.display(), error = %e, "cannot empty the audit journal");
        }
        self.len = 0;
    }
}

/// The rows of a journal's bytes: its lines up to the zeros of its unwritten part; a line
/// cut short by a kill, or half zeroed by one, is skipped.
fn journal_rows(bytes: &[u8]) -> Vec<AuditRecord> {
    bytes
        .split(|b| *b == b'\n')
        .map(|line| {
            let start = line.iter().position(|b| *b != 0).unwrap_or(line.len());
            let end = line.iter().rposition(|b| *b != 0).map_or(start, |i| i + 1);
            &line[start..end.max(start)]
        })
        .filter(|line| !line.is_empty())
        .filter_map(|line| serde_json::from_slice(line).ok())
        .collect()
}

impl Drop for Journal {
    fn drop(&mut self) {
        // Dropped after the queue wrote everything (see `AuditQueue`'s drop).
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Inserts the rows of the journals in `dir` that no live process holds — a process
/// killed before committing them — unless the log has them already, and deletes the
/// journals. Returns how many rows it inserted.
pub(crate) fn replay_journals(engine: &Engine, dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut inserted = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "log") {
            continue;
        }
        let Ok(file) = File::open(&path) else {
            continue;
        };
        if rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
            continue; // its process is alive
        }
        let mut bytes = Vec::new();
        if let Err(e) = (&file).read_to_end(&mut bytes) {
            tracing::warn!(journal = %path.display(), error = %e,
                "cannot read an audit journal; it is retried at the next start");
            continue;
        }
        let rows = journal_rows(&bytes);
        match engine.tx(|db| insert_missing(db, &rows)) {
            Ok(n) => {
                inserted += n;
                let _ = std::fs::remove_file(&path);
            }
            Err(e) => tracing::warn!(journal = %path.display(), error = %e,
                "cannot replay an audit journal; it is retried at the next start"),
        }
    }
    inserted
}

/// Inserts the rows of `rows` whose call is not among the log's most recent rows (a row
/// committed just before a crash is still in its journal).
fn insert_missing(db: &mut dyn Db, rows: &[AuditRecord]) -> Result<usize, StoreError> {
    if rows.is_empty() {
        return Ok(0);
    }
    let recent: HashSet<String> = db
        .query(
            "SELECT call_id FROM audit ORDER BY id DESC LIMIT ?1",
            args![rows.len() + 10_000],
        )?
        .iter()
        .map(|r| r.text(0))
        .collect::<Result<_, _>>()?;
    // Each call once: a journal trimmed when its process was killed may hold a row twice.
    let mut seen = HashSet::new();
    let missing: Vec<AuditRecord> = rows
        .iter()
        .filter(|r| !recent.contains(&r.call_id) && seen.insert(r.call_id.as_str()))
        .cloned()
        .collect();
    insert_audit_rows(db, &missing, u64::MAX)?;
    Ok(missing.len())
}

/// The queue and its writer thread.
pub(crate) struct AuditQueue {
    shared: Arc<Shared>,
    engine: Engine,
    writer: Mutex<Option<JoinHandle<()>>>,
}

struct Shared {
    state: Mutex<State>,
    /// Wakes the writer: a first row, a full batch, a flush or close.
    wake: Condvar,
    /// Wakes flushers: a batch was written, or the writer is gone.
    written: Condvar,
    /// Wakes callers waiting for room in a full queue.
    room: Notify,
}

#[derive(Default)]
struct State {
    /// Where each row is appended before it is queued; `None` for an in-memory store.
    journal: Option<Journal>,
    rows: Vec<AuditRecord>,
    /// The retention of the newest queued row.
    max_rows: u64,
    /// Rows queued since the start.
    queued: u64,
    /// Rows handed to SQLite since the start (written, or failed and logged).
    done: u64,
    /// Flushes waiting: the writer skips its linger for them.
    flushing: usize,
    /// The writer is waiting for a first row (so a push must wake it).
    idle: bool,
    /// No more rows will come: write what is left and stop.
    closed: bool,
    /// The writer thread has stopped (closed, or it crashed).
    gone: bool,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    // Every update leaves the state consistent, so a poisoned lock is safe to keep using.
    state.lock().unwrap_or_else(|p| p.into_inner())
}

impl AuditQueue {
    /// Starts the writer thread over `engine`, appending each row to `journal` first.
    pub(crate) fn start(engine: Engine, journal: Option<Journal>) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                journal,
                ..State::default()
            }),
            wake: Condvar::new(),
            written: Condvar::new(),
            room: Notify::new(),
        });
        let writer = {
            let shared = shared.clone();
            let engine = engine.clone();
            std::thread::Builder::new()
                .name("toolshed-audit".into())
                .spawn(move || write_loop(&shared, &engine))?
        };
        Ok(Self {
            shared,
            engine,
            writer: Mutex::new(Some(writer)),
        })
    }

    /// Appends one row to the journal and queues it, keeping at most `max_rows` in the log.
    /// Returns once the row is in the journal (at once, unless [`CAPACITY`] rows are already
    /// waiting; then it waits for room).
    pub(crate) async fn push(&self, record: AuditRecord, max_rows: u64) {
        let mut record = Some(record);
        loop {
            let room = self.shared.room.notified();
            tokio::pin!(room);
            // Registered before the check, so a wake-up between the check and the await
            // is not missed.
            room.as_mut().enable();
            {
                let mut st = lock(&self.shared.state);
                if st.gone {
                    drop(st);
                    if let Some(record) = record.take() {
                        self.write_directly(&record, max_rows);
                    }
                    return;
                }
                if st.rows.len() < CAPACITY {
                    if let Some(record) = record.take() {
                        if let Some(journal) = &mut st.journal
                            && let Err(e) = journal.append(&record)
                        {
                            tracing::warn!(error = %e, "cannot append to the audit journal");
                        }
                        st.rows.push(record);
                    }
                    st.queued += 1;
                    st.max_rows = max_rows;
                    if st.idle || st.rows.len() == BATCH {
                        st.idle = false;
                        self.shared.wake.notify_one();
                    }
                    return;
                }
            }
            room.await;
        }
    }

    /// Waits until every row queued before this call has been handed to SQLite.
    pub(crate) fn flush(&self) {
        let mut st = lock(&self.shared.state);
        let target = st.queued;
        if st.done >= target || st.gone {
            return;
        }
        st.flushing += 1;
        self.shared.wake.notify_one();
        while st.done < target && !st.gone {
            st = self
                .shared
                .written
                .wait(st)
                .unwrap_or_else(|p| p.into_inner());
        }
        st.flushing -= 1;
    }

    /// Used only when the writer thread is gone (it crashed): the row is written on the
    /// caller's thread rather than lost.
    fn write_directly(&self, record: &AuditRecord, max_rows: u64) {
        if let Err(e) = write_batch(&self.engine, std::slice::from_ref(record), max_rows) {
            tracing::warn!(error = %e, "cannot write the audit row");
        }
    }
}

impl Drop for AuditQueue {
    /// Writes what is queued and stops the writer.
    fn drop(&mut self) {
        {
            let mut st = lock(&self.shared.state);
            st.closed = true;
            self.shared.wake.notify_one();
        }
        let writer = self
            .writer
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(writer) = writer
            && writer.join().is_err()
        {
            tracing::error!("the audit writer crashed; queued audit rows may be lost");
        }
    }
}

/// Marks the writer gone however it stops, so flushers and callers never wait for it.
struct Gone<'a>(&'a Shared);

impl Drop for Gone<'_> {
    fn drop(&mut self) {
        lock(&self.0.state).gone = true;
        self.0.written.notify_all();
        self.0.room.notify_waiters();
    }
}

fn write_loop(shared: &Shared, engine: &Engine) {
    let _gone = Gone(shared);
    let mut st = lock(&shared.state);
    loop {
        while st.rows.is_empty() && !st.closed {
            st.idle = true;
            st = shared.wake.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        st.idle = false;
        if st.rows.is_empty() {
            return; // closed, and nothing left
        }
        // Let more rows gather, unless someone is waiting for them.
        let deadline = Instant::now() + LINGER;
        while !st.closed && st.flushing == 0 && st.rows.len() < BATCH {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            st = shared
                .wake
                .wait_timeout(st, left)
                .map(|(st, _)| st)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        let batch = std::mem::take(&mut st.rows);
        let max_rows = st.max_rows;
        let upto = st.queued;
        // The journal's bytes up to here hold this batch's rows and ones already written.
        let journaled = st.journal.as_ref().map_or(0, |j| j.len);
        drop(st);
        shared.room.notify_waiters();
        if let Err(e) = write_batch(engine, &batch, max_rows) {
            tracing::warn!(rows = batch.len(), error = %e, "cannot write audit rows");
        }
        drop(batch);
        st = lock(&shared.state);
        st.done = upto;
        // What the batch committed leaves the journal; rows journaled since stay. (Rows are
        // journaled in the same lock that queues them, so the bytes match the rows.)
        if let Some(journal) = &mut st.journal {
            journal.drop_committed(journaled);
        }
        shared.written.notify_all();
    }
}

fn write_batch(engine: &Engine, batch: &[AuditRecord], max_rows: u64) -> Result<(), StoreError> {
    engine.tx(|db| insert_audit_rows(db, batch, max_rows))
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Waker};

    use super::*;
    use crate::store::{MIGRATIONS, schema::sqlite};
    use rusqlite::Connection;

    fn record(i: i64) -> AuditRecord {
        AuditRecord {
            ts_ms: i,
            call_id: format!("c{i}"),
            owner: "o".into(),
            door: "test".into(),
            tool: "t".into(),
            plugin: None,
            args_sha256: "00".into(),
            outcome: "ok".into(),
            error_kind: None,
            duration_ms: 0,
            approval: None,
            parent: None,
            note: None,
        }
    }

    fn database() -> Arc<Mutex<Connection>> {
        let conn = Connection::open_in_memory().unwrap();
        for migration in MIGRATIONS {
            conn.execute_batch(&sqlite::render(migration)).unwrap();
        }
        Arc::new(Mutex::new(conn))
    }

    fn count(conn: &Mutex<Connection>) -> i64 {
        conn.lock()
            .unwrap()
            .query_row("SELECT count(*) FROM audit", [], |r| r.get(0))
            .unwrap()
    }

    /// Holds the database on another thread (so the writer cannot finish a batch) until
    /// the sender is used or dropped; the thread's handle.
    fn hold(
        conn: &Arc<Mutex<Connection>>,
    ) -> (std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>) {
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let conn = conn.clone();
        let holder = std::thread::spawn(move || {
            let _held = conn.lock().unwrap();
            held_tx.send(()).unwrap();
            let _ = release_rx.recv();
        });
        held_rx.recv().unwrap();
        (release_tx, holder)
    }

    /// Polls until `done` holds, for at most ten seconds.
    fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::yield_now();
        }
    }

    #[test]
    fn journals_of_dead_processes_are_replayed_once_and_live_ones_left() {
        let dir = tempfile::tempdir().unwrap();
        let conn = database();
        let engine = Engine::sqlite_only(conn.clone());
        engine
            .tx(|db| insert_audit_rows(db, &[record(1)], 100))
            .unwrap();
        // A killed process's journal: row 1 was committed before the kill, row 2 was not.
        // (Written as it would be, with no process left holding its lock.)
        let dead_path = dir.path().join("12345-abc.log");
        let lines: Vec<String> = [record(1), record(2)]
            .iter()
            .map(|r| serde_json::to_string(r).unwrap() + "\n")
            .collect();
        std::fs::write(&dead_path, lines.concat()).unwrap();
        // A live process's journal is not touched.
        let mut live = Journal::create(dir.path()).unwrap();
        live.append(&record(3)).unwrap();
        assert_eq!(replay_journals(&engine, dir.path()), 1);
        assert_eq!(count(&conn), 2);
        assert!(!dead_path.exists());
        assert!(live.path.exists());
        assert_eq!(replay_journals(&engine, dir.path()), 0);
    }

    /// What another process would read of `journal`'s file now.
    fn on_disk(journal: &Journal) -> Vec<u8> {
        std::fs::read(&journal.path).unwrap()
    }

    #[test]
    fn a_mapped_journal_is_on_disk_row_by_row_and_empties_to_zeros() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::create(dir.path()).unwrap();
        assert!(
            journal.map.is_some(),
            "the journal is mapped on this file system"
        );
        for i in 1..=3 {
            journal.append(&record(i)).unwrap();
        }
        // Seen by a reader at once (the same page cache), with the zeros after them.
        let bytes = on_disk(&journal);
        assert_eq!(bytes.len(), MAPPED_BYTES);
        let ids: Vec<String> = journal_rows(&bytes)
            .into_iter()
            .map(|r| r.call_id)
            .collect();
        assert_eq!(ids, ["c1", "c2", "c3"]);
        journal.clear();
        assert!(journal_rows(&on_disk(&journal)).is_empty());
        assert!(on_disk(&journal).iter().all(|b| *b == 0));
        journal.append(&record(4)).unwrap();
        assert_eq!(journal_rows(&on_disk(&journal))[0].call_id, "c4");

        // Rows past the mapped part are written to the file, read back with the others, and
        // cut off again when the journal empties.
        let mut big = record(5);
        big.tool = "x".repeat(MAPPED_BYTES / 2);
        journal.append(&big).unwrap();
        journal.append(&big).unwrap();
        journal.append(&record(6)).unwrap();
        let bytes = on_disk(&journal);
        assert!(bytes.len() > MAPPED_BYTES);
        let ids: Vec<String> = journal_rows(&bytes)
            .into_iter()
            .map(|r| r.call_id)
            .collect();
        assert_eq!(ids, ["c4", "c5", "c5", "c6"]);
        journal.clear();
        assert_eq!(on_disk(&journal).len(), MAPPED_BYTES);
        assert!(journal_rows(&on_disk(&journal)).is_empty());
        let path = journal.path.clone();
        drop(journal);
        assert!(!path.exists());
    }

    #[test]
    fn committed_rows_leave_the_journal_and_later_ones_stay() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::create(dir.path()).unwrap();
        journal.append(&record(1)).unwrap();
        journal.append(&record(2)).unwrap();
        let committed = journal.len;
        journal.append(&record(3)).unwrap();
        journal.drop_committed(committed);
        let ids: Vec<String> = journal_rows(&on_disk(&journal))
            .into_iter()
            .map(|r| r.call_id)
            .collect();
        assert_eq!(ids, ["c3"]);
        journal.append(&record(4)).unwrap();
        let ids: Vec<String> = journal_rows(&on_disk(&journal))
            .into_iter()
            .map(|r| r.call_id)
            .collect();
        assert_eq!(ids, ["c3", "c4"]);

        // Written with pwrite (no mapping): trimmed the same way.
        let mut plain = Journal::create(&dir.path().join("plain")).unwrap();
        plain.map = None;
        plain.file.set_len(0).unwrap();
        plain.append(&record(5)).unwrap();
        let committed = plain.len;
        plain.append(&record(6)).unwrap();
        plain.drop_committed(committed);
        let bytes = on_disk(&plain);
        assert_eq!(bytes.len(), plain.len);
        assert_eq!(journal_rows(&bytes)[0].call_id, "c6");
    }

    #[tokio::test]
    async fn a_journal_under_steady_load_keeps_only_what_is_not_written_yet() {
        let dir = tempfile::tempdir().unwrap();
        let conn = database();
        let journal = Journal::create(dir.path()).unwrap();
        let path = journal.path.clone();
        let queue = AuditQueue::start(Engine::sqlite_only(conn.clone()), Some(journal)).unwrap();
        // The writer takes row 0 and waits for the database; row 1 comes meanwhile.
        let (release_tx, holder) = hold(&conn);
        queue.push(record(0), 100_000).await;
        wait_for("the writer to take the first row", || {
            lock(&queue.shared.state).rows.is_empty()
        });
        queue.push(record(1), 100_000).await;
        release_tx.send(()).unwrap();
        holder.join().unwrap();
        // Seen the moment the first batch is done: the writer lingers before it takes row
        // 1, and cannot take it while the state is locked here.
        wait_for("the first batch to be written", || {
            lock(&queue.shared.state).done >= 1
        });
        {
            let st = lock(&queue.shared.state);
            let left: Vec<String> = journal_rows(&std::fs::read(&path).unwrap())
                .into_iter()
                .map(|r| r.call_id)
                .collect();
            if st.rows.len() == 1 {
                assert_eq!(left, ["c1"], "row 0 is written, row 1 not yet");
            } else {
                assert!(left.iter().all(|id| id != "c0"), "{left:?}");
            }
        }
        queue.flush();
        assert_eq!(count(&conn), 2);
    }

    #[test]
    fn a_row_journaled_twice_is_replayed_once() {
        let dir = tempfile::tempdir().unwrap();
        let conn = database();
        let engine = Engine::sqlite_only(conn.clone());
        let line = serde_json::to_string(&record(8)).unwrap() + "\n";
        std::fs::write(dir.path().join("1-dead.log"), line.repeat(2)).unwrap();
        assert_eq!(replay_journals(&engine, dir.path()), 1);
        assert_eq!(count(&conn), 1);
    }

    #[test]
    fn journal_rows_skip_what_a_kill_cut_short() {
        let line = |i| serde_json::to_string(&record(i)).unwrap() + "\n";
        // Two whole rows, then one cut in the middle by a kill, then the zeros.
        let mut bytes = (line(1) + &line(2)).into_bytes();
        bytes.extend_from_slice(&line(3).as_bytes()[..20]);
        bytes.resize(bytes.len() + 4096, 0);
        let ids: Vec<String> = journal_rows(&bytes)
            .into_iter()
            .map(|r| r.call_id)
            .collect();
        assert_eq!(ids, ["c1", "c2"]);
        // A journal being zeroed when its process was killed: a row's head zeroed, its
        // tail left; the tail is no row, the next whole row is.
        let mut bytes = (line(1) + &line(2)).into_bytes();
        bytes[..line(1).len() + 10].fill(0);
        let mut with_next = bytes.clone();
        with_next.extend_from_slice(line(7).as_bytes());
        let ids: Vec<String> = journal_rows(&with_next)
            .into_iter()
            .map(|r| r.call_id)
            .collect();
        assert_eq!(ids, ["c7"]);
    }

    #[tokio::test]
    async fn flush_waits_for_every_queued_row() {
        let conn = database();
        let queue = AuditQueue::start(Engine::sqlite_only(conn.clone()), None).unwrap();
        for i in 0..1000 {
            queue.push(record(i), 100_000).await;
        }
        queue.flush();
        assert_eq!(count(&conn), 1000);
    }

    #[tokio::test]
    async fn dropping_the_queue_writes_what_is_left() {
        let conn = database();
        let queue = AuditQueue::start(Engine::sqlite_only(conn.clone()), None).unwrap();
        for i in 0..10 {
            queue.push(record(i), 100_000).await;
        }
        drop(queue);
        assert_eq!(count(&conn), 10);
    }

    #[tokio::test]
    async fn a_full_queue_makes_callers_wait_and_loses_nothing() {
        let conn = database();
        let queue = AuditQueue::start(Engine::sqlite_only(conn.clone()), None).unwrap();
        // Hold the database on another thread so the writer cannot finish a batch.
        let (release_tx, holder) = hold(&conn);
        queue.push(record(0), 100_000).await;
        wait_for("the writer to take the first row", || {
            lock(&queue.shared.state).rows.is_empty()
        });
        for i in 1..=CAPACITY as i64 {
            queue.push(record(i), 100_000).await;
        }
        let mut blocked = pin!(queue.push(record(-1), 100_000));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(
            blocked.as_mut().poll(&mut cx).is_pending(),
            "a push into a full queue must wait"
        );
        release_tx.send(()).unwrap();
        holder.join().unwrap();
        tokio::time::timeout(Duration::from_secs(10), blocked)
            .await
            .expect("the waiting push goes through once the writer takes the queued rows");
        queue.flush();
        assert_eq!(count(&conn), CAPACITY as i64 + 2);
    }
}
