//! One connection to a worker: the child process that carries it (`ssh …`, `docker exec
//! …`, or the worker itself), the thread that reads its lines, and the calls waiting for
//! their replies.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::RemoteError;
use super::wire::{Event, Hello, Incoming, MAX_LINE, PROTOCOL, Request};
use crate::error::OpsError;
use crate::process::{Drain, Exit, ExitStatus, ProcessFeed, Stream};
use crate::search::Cancel;

/// Processes whose events came before their spawn's reply, at most.
const MAX_EARLY_HANDLES: usize = 256;
/// Events kept per such process.
const MAX_EARLY_EVENTS: usize = 4096;

/// The most of the transport's standard error kept for messages.
const STDERR_TAIL: usize = 8 * 1024;

type Reply = Result<String, OpsError>;

/// A process's feed, or the events that came before its feed was made.
#[derive(Default)]
pub(super) struct Feeds {
    pub(super) live: HashMap<u64, ProcessFeed>,
    early: HashMap<u64, Vec<Event>>,
    /// Where the stdout of a relayed child ([`crate::process::Stdin::Stream`]) goes.
    streams: HashMap<u64, SyncSender<Vec<u8>>>,
}

/// A live connection to a worker.
pub(super) struct Connection {
    pub(super) hello: Hello,
    pub(super) display: String,
    writer: Mutex<Option<ChildStdin>>,
    pending: Mutex<HashMap<u64, SyncSender<Reply>>>,
    pub(super) feeds: Mutex<Feeds>,
    next: AtomicU64,
    alive: AtomicBool,
    child: Mutex<Child>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// Handles whose feed has something to send (input, a stop, a release).
    pub(super) wake: Mutex<std::sync::mpsc::Sender<u64>>,
}

impl Connection {
    /// Starts `command`, waits up to `timeout` for the worker's hello, and starts the
    /// threads that read its replies and carry processes' input.
    pub(super) fn open(
        command: &[String],
        display: &str,
        timeout: Duration,
    ) -> Result<Arc<Self>, RemoteError> {
        let (program, args) = command.split_first().ok_or_else(|| {
            RemoteError::Connect("the command that reaches the worker is empty".into())
        })?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| RemoteError::Connect(format!("cannot start `{program}`: {e}")))?;
        let stdin = child.stdin.take();
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| RemoteError::Connect("no stdout".into()))?;
        let stderr_pipe = child
            .stderr
            .take()
            .ok_or_else(|| RemoteError::Connect("no stderr".into()))?;
        let stderr = Arc::new(Mutex::new(Vec::new()));
        {
            let stderr = stderr.clone();
            std::thread::Builder::new()
                .name("worker-stderr".into())
                .spawn(move || keep_tail(stderr_pipe, &stderr))
                .map_err(|e| RemoteError::Connect(e.to_string()))?;
        }
        let mut reader = BufReader::with_capacity(256 * 1024, stdout);
        let (hello_tx, hello_rx) = sync_channel::<Result<Hello, RemoteError>>(1);
        // The hello is read on a thread so that a transport that never answers (a hung
        // ssh) is given up on after `timeout`.
        let first = std::thread::Builder::new()
            .name("worker-hello".into())
            .spawn(move || {
                let mut line = Vec::new();
                let said = |why: String| RemoteError::Connect(why);
                let hello = match read_line(&mut reader, &mut line) {
                    Ok(true) => serde_json::from_slice::<Incoming<'_>>(&line)
                        .map_err(|e| said(format!("the worker's first line is not its hello: {e}")))
                        .and_then(|i| {
                            i.hello
                                .ok_or_else(|| said("the worker did not say hello".into()))
                        }),
                    Ok(false) => Err(said(String::new())),
                    Err(e) => Err(said(e.to_string())),
                };
                let _ = hello_tx.send(hello);
                reader
            })
            .map_err(|e| RemoteError::Connect(e.to_string()))?;
        let hello = match hello_rx.recv_timeout(timeout) {
            Ok(Ok(hello)) => hello,
            Ok(Err(why)) => {
                let _ = child.kill();
                let _ = child.wait();
                let _ = first.join();
                return Err(RemoteError::Connect(failure(&why.to_string(), &stderr)));
            }
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                let _ = first.join();
                return Err(RemoteError::Connect(failure(
                    &format!("no answer within {} s", timeout.as_secs()),
                    &stderr,
                )));
            }
        };
        let reader = first
            .join()
            .map_err(|_| RemoteError::Connect("the hello reader failed".into()))?;
        if hello.protocol != PROTOCOL {
            let _ = child.kill();
            let _ = child.wait();
            return Err(RemoteError::Connect(format!(
                "the worker speaks protocol {} (toolshed {}), this toolshed speaks {PROTOCOL}; \
                 install the same toolshed version on both sides",
                hello.protocol, hello.version
            )));
        }
        let (wake_tx, wake_rx) = std::sync::mpsc::channel();
        let conn = Arc::new(Connection {
            hello,
            display: display.to_string(),
            writer: Mutex::new(stdin),
            pending: Mutex::default(),
            feeds: Mutex::default(),
            next: AtomicU64::new(1),
            alive: AtomicBool::new(true),
            child: Mutex::new(child),
            stderr,
            wake: Mutex::new(wake_tx),
        });
        {
            let conn = conn.clone();
            std::thread::Builder::new()
                .name("worker-reader".into())
                .spawn(move || conn.read_loop(reader))
                .map_err(|e| RemoteError::Connect(e.to_string()))?;
        }
        {
            let conn = Arc::downgrade(&conn);
            std::thread::Builder::new()
                .name("worker-input".into())
                .spawn(move || super::process::carry(conn, wake_rx))
                .map_err(|e| RemoteError::Connect(e.to_string()))?;
        }
        Ok(conn)
    }

    pub(super) fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }

    /// The error of a call on a connection that is gone.
    pub(super) fn lost(&self) -> OpsError {
        OpsError::Io {
            action: "reach".into(),
            path: self.display.clone(),
            message: failure("the connection was lost", &self.stderr),
        }
    }

    /// Sends a message that wants no reply.
    pub(super) fn tell<A: Serialize>(&self, op: &str, args: A) {
        let _ = self.send(&Request { id: 0, op, args });
    }

    fn send<A: Serialize>(&self, request: &Request<'_, A>) -> Result<(), OpsError> {
        let mut line = serde_json::to_vec(request).map_err(|e| OpsError::Io {
            action: "encode a request for".into(),
            path: self.display.clone(),
            message: e.to_string(),
        })?;
        line.push(b'\n');
        let mut writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let Some(stdin) = writer.as_mut() else {
            return Err(self.lost());
        };
        if stdin.write_all(&line).and_then(|()| stdin.flush()).is_err() {
            self.alive.store(false, Ordering::Release);
            return Err(self.lost());
        }
        Ok(())
    }

    /// Sends a request and waits up to `timeout` for its reply (the reply's JSON). With a
    /// `cancel` flag, a set flag is passed on to the worker, which answers with what it
    /// has so far.
    pub(super) fn call<A: Serialize>(
        &self,
        op: &str,
        args: A,
        timeout: Duration,
        cancel: Option<&Cancel>,
    ) -> Reply {
        if !self.is_alive() {
            return Err(self.lost());
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = sync_channel(1);
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, tx);
        if let Err(e) = self.send(&Request { id, op, args }) {
            self.pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id);
            return Err(e);
        }
        let result = self.wait(id, &rx, timeout, cancel);
        if result.is_none() {
            self.pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id);
        }
        result.unwrap_or_else(|| {
            Err(OpsError::Io {
                action: "reach".into(),
                path: self.display.clone(),
                message: format!(
                    "the worker did not answer `{op}` within {} s; the machine or the \
                     network is slow, or the worker is stuck",
                    timeout.as_secs()
                ),
            })
        })
    }

    fn wait(
        &self,
        id: u64,
        rx: &Receiver<Reply>,
        timeout: Duration,
        cancel: Option<&Cancel>,
    ) -> Option<Reply> {
        let deadline = Instant::now() + timeout;
        let mut cancelled = false;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            let step = if cancel.is_some() && !cancelled {
                left.min(Duration::from_millis(50))
            } else {
                left
            };
            match rx.recv_timeout(step) {
                Ok(reply) => return Some(reply),
                Err(RecvTimeoutError::Disconnected) => return Some(Err(self.lost())),
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(c) = cancel
                        && !cancelled
                        && c.is_set()
                    {
                        cancelled = true;
                        self.tell("cancel", serde_json::json!({ "h": 0, "request": id }));
                    }
                }
            }
        }
    }

    /// Ends the connection: the worker sees the end of its input, finishes what it does,
    /// stops its processes and exits.
    pub(super) fn close(&self) {
        self.writer.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    fn read_loop(self: Arc<Self>, mut reader: impl BufRead) {
        let mut line = Vec::new();
        loop {
            line.clear();
            match read_line(&mut reader, &mut line) {
                Ok(true) => {}
                Ok(false) | Err(_) => break,
            }
            let Ok(incoming) = serde_json::from_slice::<Incoming<'_>>(&line) else {
                tracing::warn!(worker = %self.display, "an unreadable line from the worker");
                continue;
            };
            if let Some(event) = incoming.ev {
                self.dispatch(event);
            } else if let Some(id) = incoming.id {
                let reply = match incoming.err {
                    Some(e) => Err(e),
                    None => Ok(incoming.ok.map_or("null", |r| r.get()).to_string()),
                };
                if let Some(tx) = self
                    .pending
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&id)
                {
                    let _ = tx.send(reply);
                }
            }
        }
        self.alive.store(false, Ordering::Release);
        self.close();
        // Calls waiting for a reply learn the connection is gone.
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        let feeds: Vec<ProcessFeed> = {
            let mut feeds = self.feeds.lock().unwrap_or_else(|e| e.into_inner());
            feeds.early.clear();
            feeds.streams.clear();
            feeds.live.drain().map(|(_, f)| f).collect()
        };
        if !feeds.is_empty() {
            let note = format!(
                "\n[toolshed: the connection to {} was lost; the process was stopped there]\n",
                self.display
            );
            for feed in feeds {
                feed.output(Stream::Stderr, note.as_bytes());
                end_lost(&feed);
            }
        }
        let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        let _ = child.kill();
        let _ = child.wait();
    }

    fn dispatch(&self, event: Event) {
        let h = match &event {
            Event::Out { h, .. }
            | Event::Exit { h, .. }
            | Event::StopDone { h }
            | Event::InputGone { h } => *h,
        };
        let mut feeds = self.feeds.lock().unwrap_or_else(|e| e.into_inner());
        if let Event::Out { s: 1, d, .. } = &event
            && let Some(stream) = feeds.streams.get(&h).cloned()
        {
            drop(feeds);
            // Waits while the caller's pipe is full: it reads as it goes.
            let _ = stream.send(d.0.clone());
            return;
        }
        if matches!(event, Event::Exit { .. }) {
            // The caller's stdout pipe ends once what came before is written.
            feeds.streams.remove(&h);
        }
        match feeds.live.get(&h) {
            Some(feed) => apply(feed, event),
            None => {
                // Handles nobody claims cannot pile events up without bound: a spawn's
                // reply comes a moment after its first events, never hundreds later.
                if feeds.early.len() >= MAX_EARLY_HANDLES && !feeds.early.contains_key(&h) {
                    return;
                }
                let early = feeds.early.entry(h).or_default();
                if early.len() < MAX_EARLY_EVENTS {
                    early.push(event);
                }
            }
        }
    }

    /// Starts feeding `feed` with the events of handle `h`, those that came early first.
    pub(super) fn adopt(&self, h: u64, feed: ProcessFeed, stream: Option<SyncSender<Vec<u8>>>) {
        let mut feeds = self.feeds.lock().unwrap_or_else(|e| e.into_inner());
        for event in feeds.early.remove(&h).unwrap_or_default() {
            match (&event, &stream) {
                (Event::Out { s: 1, d, .. }, Some(stream)) => {
                    let _ = stream.try_send(d.0.clone());
                }
                _ => apply(&feed, event),
            }
        }
        if let Some(stream) = stream
            && feed_running(&feed)
        {
            feeds.streams.insert(h, stream);
        }
        if self.is_alive() {
            feeds.live.insert(h, feed);
        } else {
            drop(feeds);
            end_lost(&feed);
        }
    }
}

/// Whether the process has not exited yet.
fn feed_running(feed: &ProcessFeed) -> bool {
    !feed.has_exited()
}

/// Ends a process whose connection is gone: the worker stopped it when the connection
/// ended, and no more will be heard of it.
fn end_lost(feed: &ProcessFeed) {
    feed.exited(Exit {
        status: ExitStatus::Signal(9),
        duration: Duration::ZERO,
        drain: Drain::Complete,
        stopped: None,
        limit: None,
        diverted: Vec::new(),
    });
    feed.stop_done();
}

fn apply(feed: &ProcessFeed, event: Event) {
    match event {
        Event::Out { s, k, d, .. } => {
            let stream = if s == 2 {
                Stream::Stderr
            } else {
                Stream::Stdout
            };
            feed.skipped(stream, k);
            feed.output(stream, &d.0);
        }
        Event::Exit { exit, .. } => feed.exited(exit.into()),
        Event::StopDone { .. } => feed.stop_done(),
        Event::InputGone { .. } => feed.input_gone(),
    }
}

/// `why`, with what the transport said on its standard error.
fn failure(why: &str, stderr: &Mutex<Vec<u8>>) -> String {
    // The transport may still be writing its last words.
    std::thread::sleep(Duration::from_millis(20));
    let tail = String::from_utf8_lossy(&stderr.lock().unwrap_or_else(|e| e.into_inner()))
        .trim()
        .to_string();
    match (why.is_empty(), tail.is_empty()) {
        (true, true) => "the worker ended without a word".into(),
        (true, false) => tail,
        (false, true) => why.to_string(),
        (false, false) => format!("{why}: {tail}"),
    }
}

fn keep_tail(mut pipe: impl Read, tail: &Mutex<Vec<u8>>) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = pipe.read(&mut buf) {
        if n == 0 {
            break;
        }
        let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
        tail.extend_from_slice(&buf[..n]);
        if tail.len() > STDERR_TAIL {
            let cut = tail.len() - STDERR_TAIL;
            tail.drain(..cut);
        }
    }
}

/// Reads one line (without its `\n`); `false` at the end. A line past [`MAX_LINE`] is an
/// error (the connection is then dropped).
fn read_line(reader: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<bool> {
    loop {
        let chunk = reader.fill_buf()?;
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
                "a line from the worker is too long",
            ));
        }
    }
}
