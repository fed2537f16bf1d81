//! A new operations backend: file operations of your own, held to the same contract as the
//! built-in backends.
//!
//! ```sh
//! cargo run -p toolshed-ops --example metered_ops
//! cargo test -p toolshed-ops --example metered_ops   # the contract suite, one test per case
//! ```
//!
//! `Metered` wraps another backend and counts what passes through it — operations, bytes
//! read and bytes written — the way a platform bills or charts an agent's use of its
//! workspace. A remote backend (SSH, a container, a worker process) is built the same way:
//! implement [`FileOps`], run `toolshed_ops::file_contract!` on it in your tests (the
//! `contract` feature of `toolshed-ops` in your dev-dependencies), and hand it to the host
//! (`HostBuilder::ops` with an `Ops` whose `files` it is; wrapping it in
//! `toolshed_ops::search::FileSearch` gives it search with the built-in rules).
//! Every tool then runs on it unchanged; what the contract refuses — a path climbing out,
//! a link pointing out, the reserved `.toolshed/` — the backend must refuse too.

use std::sync::atomic::{AtomicU64, Ordering};

use toolshed_ops::{
    Change, DirListing, FileContents, FileOps, Follow, MemoryOps, Metadata, OpsError, Overwrite,
    Parents, Written,
};

/// What went through a [`Metered`] backend.
#[derive(Debug, Default)]
pub struct Meter {
    /// Operations of every kind.
    pub operations: AtomicU64,
    /// Bytes returned by reads.
    pub bytes_read: AtomicU64,
    /// Bytes written, appended or committed.
    pub bytes_written: AtomicU64,
}

impl Meter {
    fn count(&self, read: u64, written: u64) {
        self.operations.fetch_add(1, Ordering::Relaxed);
        self.bytes_read.fetch_add(read, Ordering::Relaxed);
        self.bytes_written.fetch_add(written, Ordering::Relaxed);
    }
}

/// Another backend's file operations, metered.
pub struct Metered<F> {
    inner: F,
    meter: Meter,
}

impl<F: FileOps> Metered<F> {
    /// Meters `inner`.
    pub fn new(inner: F) -> Self {
        Self {
            inner,
            meter: Meter::default(),
        }
    }

    /// What has gone through so far.
    pub fn meter(&self) -> &Meter {
        &self.meter
    }
}

impl<F: FileOps> FileOps for Metered<F> {
    fn read(&self, path: &str, max_bytes: u64) -> Result<FileContents, OpsError> {
        let read = self.inner.read(path, max_bytes);
        let bytes = read.as_ref().map_or(0, |r| r.bytes.len() as u64);
        self.meter.count(bytes, 0);
        read
    }

    fn write(&self, path: &str, data: &[u8], parents: Parents) -> Result<Written, OpsError> {
        self.meter.count(0, data.len() as u64);
        self.inner.write(path, data, parents)
    }

    fn commit(&self, changes: &[Change<'_>]) -> Result<(), OpsError> {
        let bytes = changes.iter().map(written_by).sum();
        self.meter.count(0, bytes);
        self.inner.commit(changes)
    }

    fn append(&self, path: &str, data: &[u8]) -> Result<(), OpsError> {
        self.meter.count(0, data.len() as u64);
        self.inner.append(path, data)
    }

    fn stat(&self, path: &str, follow: Follow) -> Result<Metadata, OpsError> {
        self.meter.count(0, 0);
        self.inner.stat(path, follow)
    }

    fn quick(&self) -> bool {
        self.inner.quick()
    }

    fn read_dir(&self, path: &str) -> Result<DirListing, OpsError> {
        self.meter.count(0, 0);
        self.inner.read_dir(path)
    }

    fn mkdir(&self, path: &str, parents: Parents) -> Result<(), OpsError> {
        self.meter.count(0, 0);
        self.inner.mkdir(path, parents)
    }

    fn remove(&self, path: &str, recursive: bool) -> Result<(), OpsError> {
        self.meter.count(0, 0);
        self.inner.remove(path, recursive)
    }

    fn rename(&self, from: &str, to: &str, overwrite: Overwrite) -> Result<(), OpsError> {
        self.meter.count(0, 0);
        self.inner.rename(from, to, overwrite)
    }

    fn realpath(&self, path: &str) -> Result<String, OpsError> {
        self.meter.count(0, 0);
        self.inner.realpath(path)
    }

    fn root_display(&self) -> String {
        format!("{} (metered)", self.inner.root_display())
    }
}

/// The bytes one change of a commit writes.
fn written_by(change: &Change<'_>) -> u64 {
    match change {
        Change::Write { data, .. } | Change::Move { data, .. } => data.len() as u64,
        Change::Remove { .. } => 0,
    }
}

fn main() -> Result<(), OpsError> {
    let ops = Metered::new(MemoryOps::new());
    ops.write("notes/todo.txt", b"ship it\n", Parents::Create)?;
    let read = ops.read("notes/todo.txt", 1024)?;
    let refused = match ops.read("../outside", 1024) {
        Ok(_) => "read (it must not be)".to_string(),
        Err(e) => e.to_string(),
    };
    let meter = ops.meter();
    println!(
        "{}: {} operations, {} bytes read, {} bytes written; read {:?}; `../outside`: {refused}",
        ops.root_display(),
        meter.operations.load(Ordering::Relaxed),
        meter.bytes_read.load(Ordering::Relaxed),
        meter.bytes_written.load(Ordering::Relaxed),
        String::from_utf8_lossy(&read.bytes),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use toolshed_ops::contract::Fixture;

    /// A metered in-memory workspace; the fixture makes hostile files (links, FIFOs, the
    /// reserved directory) in the backend underneath.
    fn metered() -> (Metered<MemoryOps>, ()) {
        (Metered::new(MemoryOps::new()), ())
    }

    fn underneath<'a>(ops: &'a Metered<MemoryOps>, _: &'a ()) -> &'a dyn Fixture {
        &ops.inner
    }

    // One `#[test]` per case of the contract every backend passes.
    toolshed_ops::file_contract!(contract, metered, underneath);

    #[test]
    fn the_meter_counts_what_went_through() {
        let ops = Metered::new(MemoryOps::new());
        ops.write("a.txt", b"12345", Parents::Create).unwrap();
        ops.append("a.txt", b"678").unwrap();
        assert_eq!(ops.read("a.txt", 100).unwrap().bytes, b"12345678");
        assert!(ops.read("../escape", 100).is_err());
        let meter = ops.meter();
        assert_eq!(meter.operations.load(Ordering::Relaxed), 4);
        assert_eq!(meter.bytes_written.load(Ordering::Relaxed), 8);
        assert_eq!(meter.bytes_read.load(Ordering::Relaxed), 8);
    }
}
