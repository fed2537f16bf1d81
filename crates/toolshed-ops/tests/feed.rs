//! An operations backend outside toolshed-ops: processes it runs elsewhere reach tools as
//! the same [`Process`] handle, fed through the public [`ProcessFeed`]. The backend here runs
//! a "child" on a thread that upper-cases its input, as a remote shell would run a command.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use toolshed_ops::process::{
    Drain, Exit, ExitStatus, OutputLimits, ProcessControl, ProcessFeed, ProcessStart, Stdin, Stop,
    StopReason, Stream, Tty,
};
use toolshed_ops::{OpsError, Process, ProcessOps, SpawnRequest};

const LONG: Duration = Duration::from_secs(10);

/// Wakes the backend's loop.
struct Wake(Mutex<mpsc::Sender<()>>);

impl ProcessControl for Wake {
    fn wake(&self) {
        let _ = self.0.lock().unwrap().send(());
    }
}

/// What the backend saw, for the test to check.
#[derive(Default, Debug)]
struct Seen {
    stops: Vec<StopReason>,
    abandoned: bool,
}

/// A child's thread and what it saw.
type Run = (JoinHandle<()>, Arc<Mutex<Seen>>);

/// A backend whose children upper-case their input.
#[derive(Default)]
struct Upper {
    limits: OutputLimits,
    runs: Mutex<Vec<Run>>,
}

fn exit(status: ExitStatus, stopped: Option<StopReason>) -> Exit {
    Exit {
        status,
        duration: Duration::ZERO,
        drain: Drain::Complete,
        stopped,
        limit: None,
        diverted: Vec::new(),
    }
}

/// The child's life: runs until its input ends, a stop comes, or every handle is gone.
fn run(feed: ProcessFeed, woken: mpsc::Receiver<()>, seen: Arc<Mutex<Seen>>) {
    loop {
        let _ = woken.recv_timeout(Duration::from_millis(200));
        let input = feed.take_input(4096);
        feed.output(Stream::Stdout, &input.bytes.to_ascii_uppercase());
        if let Some(stop) = feed.take_stop() {
            seen.lock().unwrap().stops.push(stop);
            feed.exited(exit(ExitStatus::Signal(15), Some(stop)));
            feed.stop_done();
        } else if input.close {
            feed.exited(exit(ExitStatus::Code(0), None));
        }
        if feed.is_abandoned() {
            seen.lock().unwrap().abandoned = true;
            feed.exited(exit(ExitStatus::Signal(15), None));
            return;
        }
    }
}

impl ProcessOps for Upper {
    fn spawn(&self, request: &SpawnRequest) -> Result<Process, OpsError> {
        let (tx, rx) = mpsc::channel();
        let (process, feed) = Process::from_backend(
            ProcessStart {
                pid: 4242,
                tty: Tty::No,
                program: request.program.clone(),
                limits: self.limits,
                stdin: Stdin::Piped,
            },
            Arc::new(Wake(Mutex::new(tx))),
        );
        let seen = Arc::new(Mutex::new(Seen::default()));
        let for_thread = Arc::clone(&seen);
        let thread = std::thread::spawn(move || run(feed, rx, for_thread));
        self.runs.lock().unwrap().push((thread, seen));
        Ok(process)
    }
}

impl Upper {
    /// Waits for the child threads to end and returns what each saw.
    fn finish(&self) -> Vec<Seen> {
        let runs = std::mem::take(&mut *self.runs.lock().unwrap());
        runs.into_iter()
            .map(|(thread, seen)| {
                thread.join().unwrap();
                Arc::try_unwrap(seen).unwrap().into_inner().unwrap()
            })
            .collect()
    }
}

#[tokio::test]
async fn a_process_fed_from_outside_reads_writes_and_exits_like_a_local_one() {
    let backend = Upper::default();
    let p = backend.spawn(&SpawnRequest::new("upper")).unwrap();
    assert_eq!(
        (p.pid(), p.program(), p.is_running()),
        (4242, "upper", true)
    );

    p.write(b"hello\n").unwrap();
    let chunk = p.read_wait(Stream::Stdout, 0, 1024, LONG).await;
    assert_eq!(chunk.bytes, b"HELLO\n");
    assert_eq!(p.read(Stream::Combined, 0, 1024).bytes, b"HELLO\n");

    p.write(b"world").unwrap();
    p.close_stdin();
    let exit = p.wait(LONG).await.expect("exits once its input ends");
    assert_eq!(exit.status, ExitStatus::Code(0));
    assert_eq!(p.snapshot(Stream::Stdout).head, b"HELLO\nWORLD");
    let refused = p.write(b"more").unwrap_err();
    assert!(refused.to_string().contains("closed"), "{refused}");

    drop(p);
    let seen = backend.finish();
    assert!(seen[0].abandoned && seen[0].stops.is_empty(), "{seen:?}");
}

#[tokio::test]
async fn terminate_reaches_the_backend_and_returns_once_it_is_done() {
    let backend = Upper::default();
    let p = backend.spawn(&SpawnRequest::new("upper")).unwrap();
    let exit = p.terminate(Stop::Forced).await.expect("stopped");
    assert_eq!(exit.status, ExitStatus::Signal(15));
    assert_eq!(exit.stopped, Some(StopReason::Requested(Stop::Forced)));
    drop(p);
    let seen = backend.finish();
    assert_eq!(seen[0].stops, [StopReason::Requested(Stop::Forced)]);
}

#[tokio::test]
async fn too_much_output_asks_the_backend_to_stop_the_tree() {
    let backend = Upper {
        limits: OutputLimits {
            kill_after_bytes: Some(8),
            ..OutputLimits::default()
        },
        ..Upper::default()
    };
    let p = backend.spawn(&SpawnRequest::new("upper")).unwrap();
    p.write(b"more than eight bytes\n").unwrap();
    let exit = p.wait(LONG).await.expect("stopped for its output");
    assert_eq!(exit.stopped, Some(StopReason::OutputLimit));
    drop(p);
    assert_eq!(backend.finish()[0].stops, [StopReason::OutputLimit]);
}

#[test]
fn a_backend_without_a_terminal_refuses_resize_and_pipes_only_when_asked() {
    let (tx, _rx) = mpsc::channel();
    let (p, _feed) = Process::from_backend(
        ProcessStart {
            pid: 1,
            tty: Tty::No,
            program: "x".into(),
            limits: OutputLimits::default(),
            stdin: Stdin::Closed,
        },
        Arc::new(Wake(Mutex::new(tx))),
    );
    assert!(p.resize(24, 80).is_err());
    let refused = p.write(b"x").unwrap_err().to_string();
    assert!(refused.contains("without a terminal"), "{refused}");
}
