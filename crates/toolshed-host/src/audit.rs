//! The audit writer: rows are queued by the pipeline and committed by one thread, many
//! rows per transaction (group commit).
//!
//! A call's row must be in the database before its reply leaves — a server killed right
//! after replying must not have acknowledged a call it never recorded. Writing each row in
//! its own transaction, on the blocking pool, under the store's connection lock, cost more
//! CPU than the file read it recorded and serialised concurrent calls on the lock. Here a
//! call appends its row to a queue and waits ([`AuditQueue::push`]) until the writer
//! thread has committed it; the writer commits whatever has gathered in one transaction,
//! so rows that arrive while a commit runs share the next one. A call made alone pays one
//! small WAL commit; many concurrent calls share each commit.
//!
//! Nothing is dropped. When [`CAPACITY`] rows are waiting, [`AuditQueue::push`] waits for
//! the writer to take them (back-pressure on the callers, never a silent loss).
//! [`AuditQueue::flush`] waits until every row queued before it is written; the store
//! calls it before reading the audit log (so a reader sees its own calls) and the host on
//! shutdown. Dropping the queue writes what is left and stops the thread. A batch that
//! SQLite refuses is logged as a warning with its row count: it is not retried, since the
//! same rows would fail again.

use rusqlite::Connection;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use tokio::sync::{Notify, watch};

use crate::store::{AuditRecord, StoreError, insert_audit_rows};

/// The most rows waiting to be written; past this, callers wait for the writer.
pub(crate) const CAPACITY: usize = 8192;

/// The queue and its writer thread.
pub(crate) struct AuditQueue {
    shared: Arc<Shared>,
    conn: Arc<Mutex<Connection>>,
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
    /// How many rows (counted from the start) are committed; `u64::MAX` once the writer
    /// is gone, so that no caller waits for it forever.
    committed: watch::Sender<u64>,
}

#[derive(Default)]
struct State {
    rows: Vec<AuditRecord>,
    /// The retention of the newest queued row.
    max_rows: u64,
    /// Rows queued since the start.
    queued: u64,
    /// Rows handed to SQLite since the start (written, or failed and logged).
    done: u64,
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
    /// Starts the writer thread over `conn`.
    pub(crate) fn start(conn: Arc<Mutex<Connection>>) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            written: Condvar::new(),
            room: Notify::new(),
            committed: watch::channel(0).0,
        });
        let writer = {
            let shared = shared.clone();
            let conn = conn.clone();
            std::thread::Builder::new()
                .name("toolshed-audit".into())
                .spawn(move || write_loop(&shared, &conn))?
        };
        Ok(Self {
            shared,
            conn,
            writer: Mutex::new(Some(writer)),
        })
    }

    /// Records one row, keeping at most `max_rows` in the log: returns once the row is
    /// committed (or, should SQLite refuse its batch, logged as lost).
    pub(crate) async fn push(&self, record: AuditRecord, max_rows: u64) {
        let ticket = self.enqueue(record, max_rows).await;
        let mut committed = self.shared.committed.subscribe();
        let _ = committed.wait_for(|done| *done >= ticket).await;
    }

    /// Queues one row; returns its ticket (the rows queued up to and including it). Waits
    /// only when [`CAPACITY`] rows are already waiting.
    async fn enqueue(&self, record: AuditRecord, max_rows: u64) -> u64 {
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
                    return 0;
                }
                if st.rows.len() < CAPACITY {
                    if let Some(record) = record.take() {
                        st.rows.push(record);
                    }
                    st.queued += 1;
                    st.max_rows = max_rows;
                    if st.idle {
                        st.idle = false;
                        self.shared.wake.notify_one();
                    }
                    return st.queued;
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
        self.shared.wake.notify_one();
        while st.done < target && !st.gone {
            st = self
                .shared
                .written
                .wait(st)
                .unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Used only when the writer thread is gone (it crashed): the row is written on the
    /// caller's thread rather than lost.
    fn write_directly(&self, record: &AuditRecord, max_rows: u64) {
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = insert_audit_rows(&mut conn, std::slice::from_ref(record), max_rows) {
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
        self.0.committed.send_replace(u64::MAX);
        self.0.written.notify_all();
        self.0.room.notify_waiters();
    }
}

fn write_loop(shared: &Shared, conn: &Mutex<Connection>) {
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
        // No lingering: callers wait for their rows, and those that arrive while this
        // batch commits form the next one.
        let batch = std::mem::take(&mut st.rows);
        let max_rows = st.max_rows;
        let upto = st.queued;
        drop(st);
        shared.room.notify_waiters();
        if let Err(e) = write_batch(conn, &batch, max_rows) {
            tracing::warn!(rows = batch.len(), error = %e, "cannot write audit rows");
        }
        drop(batch);
        st = lock(&shared.state);
        st.done = upto;
        shared.committed.send_replace(upto);
        shared.written.notify_all();
    }
}

fn write_batch(
    conn: &Mutex<Connection>,
    batch: &[AuditRecord],
    max_rows: u64,
) -> Result<(), StoreError> {
    let mut conn = conn.lock().unwrap_or_else(|p| p.into_inner());
    insert_audit_rows(&mut conn, batch, max_rows)
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Waker};
    use std::time::{Duration, Instant};

    use super::*;
    use crate::store::MIGRATIONS;

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
        }
    }

    fn database() -> Arc<Mutex<Connection>> {
        let conn = Connection::open_in_memory().unwrap();
        for migration in MIGRATIONS {
            conn.execute_batch(migration).unwrap();
        }
        Arc::new(Mutex::new(conn))
    }

    fn count(conn: &Mutex<Connection>) -> i64 {
        conn.lock()
            .unwrap()
            .query_row("SELECT count(*) FROM audit", [], |r| r.get(0))
            .unwrap()
    }

    /// Polls until `done` holds, for at most ten seconds.
    fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::yield_now();
        }
    }

    #[tokio::test]
    async fn flush_waits_for_every_queued_row() {
        let conn = database();
        let queue = AuditQueue::start(conn.clone()).unwrap();
        for i in 0..1000 {
            queue.push(record(i), 100_000).await;
        }
        queue.flush();
        assert_eq!(count(&conn), 1000);
    }

    #[tokio::test]
    async fn dropping_the_queue_writes_what_is_left() {
        let conn = database();
        let queue = AuditQueue::start(conn.clone()).unwrap();
        for i in 0..10 {
            queue.push(record(i), 100_000).await;
        }
        drop(queue);
        assert_eq!(count(&conn), 10);
    }

    #[tokio::test]
    async fn a_full_queue_makes_callers_wait_and_loses_nothing() {
        let conn = database();
        let queue = AuditQueue::start(conn.clone()).unwrap();
        // Hold the database on another thread so the writer cannot finish a batch.
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let holder = {
            let conn = conn.clone();
            std::thread::spawn(move || {
                let _held = conn.lock().unwrap();
                held_tx.send(()).unwrap();
                let _ = release_rx.recv();
            })
        };
        held_rx.recv().unwrap();
        let first = queue.enqueue(record(0), 100_000).await;
        wait_for("the writer to take the first row", || {
            lock(&queue.shared.state).rows.is_empty()
        });
        for i in 1..=CAPACITY as i64 {
            queue.enqueue(record(i), 100_000).await;
        }
        let mut blocked = pin!(queue.enqueue(record(-1), 100_000));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(
            blocked.as_mut().poll(&mut cx).is_pending(),
            "a push into a full queue must wait"
        );
        release_tx.send(()).unwrap();
        holder.join().unwrap();
        assert!(first > 0);
        tokio::time::timeout(Duration::from_secs(10), blocked)
            .await
            .expect("the waiting push goes through once the writer takes the queued rows");
        queue.flush();
        assert_eq!(count(&conn), CAPACITY as i64 + 2);
    }

    #[tokio::test]
    async fn a_push_returns_only_once_its_row_is_committed() {
        let conn = database();
        let queue = AuditQueue::start(conn.clone()).unwrap();
        let held = conn.lock().unwrap();
        let mut push = pin!(queue.push(record(1), 100_000));
        let mut cx = Context::from_waker(Waker::noop());
        for _ in 0..50 {
            assert!(push.as_mut().poll(&mut cx).is_pending());
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(held);
        tokio::time::timeout(Duration::from_secs(10), push)
            .await
            .expect("the push returns once its row is committed");
        assert_eq!(count(&conn), 1);
    }
}
