//! Fixtures shared by the integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use toolshed_ops::contract::Fixture;

/// Builds hostile fixtures in a real workspace directory.
pub(crate) struct Disk(pub PathBuf);

impl Fixture for Disk {
    fn symlink(&self, path: &str, target: &str) {
        std::os::unix::fs::symlink(target, self.0.join(path)).unwrap();
    }
    fn hard_link(&self, path: &str, other: &str) {
        std::fs::hard_link(self.0.join(path), self.0.join(other)).unwrap();
    }
    fn fifo(&self, path: &str) {
        let status = std::process::Command::new("mkfifo")
            .arg(self.0.join(path))
            .status()
            .unwrap();
        assert!(status.success());
    }
    fn reserved_file(&self, name: &str, data: &[u8]) {
        std::fs::create_dir_all(self.0.join(".toolshed")).unwrap();
        std::fs::write(self.0.join(".toolshed").join(name), data).unwrap();
    }
    fn raw_file(&self, path: &[u8], data: &[u8]) {
        use std::os::unix::ffi::OsStrExt;
        let path = self.0.join(std::ffi::OsStr::from_bytes(path));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, data).unwrap();
    }
}
