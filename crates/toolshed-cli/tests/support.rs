//! What the tests of the built `toolshed` binary share: an isolated environment per test.

use std::process::{Command, Output, Stdio};

/// A workspace and a data dir of its own.
pub(crate) struct Env {
    pub workspace: tempfile::TempDir,
    pub data: tempfile::TempDir,
}

impl Env {
    pub(crate) fn new() -> Self {
        Self {
            workspace: tempfile::tempdir().unwrap(),
            data: tempfile::tempdir().unwrap(),
        }
    }

    /// `toolshed` with an isolated home, data dir and workspace, and no inherited
    /// `TOOLSHED_*` variables.
    pub(crate) fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = self.bare();
        cmd.arg("--workspace")
            .arg(self.workspace.path())
            .arg("--data-dir")
            .arg(self.data.path())
            .args(args);
        cmd
    }

    /// `toolshed` with this env's home and no inherited `TOOLSHED_*` variables, but no
    /// `--workspace` or `--data-dir`: the caller chooses.
    pub(crate) fn bare(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolshed"));
        for (key, _) in std::env::vars() {
            if key.starts_with("TOOLSHED_") {
                cmd.env_remove(key);
            }
        }
        cmd.env("HOME", self.data.path().join("home"))
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_DATA_HOME")
            .stdin(Stdio::null());
        cmd
    }

    pub(crate) fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    /// Writes the user's own config (`~/.config/toolshed/config.toml` of this env's home):
    /// the layer where settings that widen access count.
    pub(crate) fn write_user_config(&self, text: &str) {
        let dir = self.data.path().join("home/.config/toolshed");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.toml"), text).unwrap();
    }

    pub(crate) fn write(&self, rel: &str, text: &str) {
        let path = self.workspace.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

/// Runs `cmd` with `input` on its standard input, collecting its output.
pub(crate) fn with_input(mut cmd: Command, input: &[u8]) -> Output {
    use std::io::Write as _;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub(crate) fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}
