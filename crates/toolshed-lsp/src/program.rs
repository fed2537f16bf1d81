//! Finding a language server's program. A name found on `PATH` is not always a server: a
//! rustup proxy (`~/.cargo/bin/rust-analyzer`, a link to `rustup`) is there whether or not
//! the toolchain has the component, and without it every start fails with rustup's error
//! and backtrace. Such a proxy counts as installed only when `rustup which` finds the
//! program in the toolchain in force.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::languages::Language;

/// How long `rustup which` may take.
const RUSTUP_WAIT: Duration = Duration::from_secs(5);

/// The program of `language`'s server, or why it cannot run (the message says "is not
/// installed", which the caller answers as unconfigured, with the fix).
pub(crate) fn locate(
    language: &Language,
    program: &str,
    workdir: &Path,
) -> Result<PathBuf, String> {
    let path = crate::find_program(program).ok_or_else(|| language.missing(program))?;
    let Some(rustup) = rustup_behind(&path) else {
        return Ok(path);
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| program.to_string());
    if rustup_has(&rustup, &name, workdir) {
        Ok(path)
    } else {
        Err(format!(
            "the {} language server `{program}` is not installed: `{}` is a rustup proxy, and the toolchain in force has no `{name}` component; install it — {} — or set `[lsp.{}] command`",
            language.name,
            path.display(),
            language.install,
            language.name
        ))
    }
}

/// Why no tool of the plugin can work — no language's server is there to run — if so. A
/// plain program found is enough; only when none is, a rustup proxy is asked whether its
/// component is there (which costs a process), and a proxy without it is named.
pub(crate) fn unavailable(languages: &[Language], workspace: &Path) -> Option<String> {
    let first = |l: &Language| l.command.first().cloned().unwrap_or_default();
    let plain = |l: &Language| {
        crate::find_program(&first(l)).is_some_and(|path| rustup_behind(&path).is_none())
    };
    if languages.iter().any(plain) {
        return None;
    }
    let mut proxies = Vec::new();
    for language in languages {
        if crate::find_program(&first(language)).is_none() {
            continue;
        }
        match locate(language, &first(language), workspace) {
            Ok(_) => return None,
            Err(why) => proxies.push(why),
        }
    }
    let hints: Vec<String> = languages
        .iter()
        .map(|l| format!("{} — {}", l.name, l.install))
        .collect();
    let mut message = format!(
        "no language server is installed; install one: {}",
        hints.join("; ")
    );
    for why in proxies {
        message.push_str(&format!(". Note: {why}"));
    }
    Some(message)
}

/// Whether the path resolved is a rustup proxy, or the same file as one, or a link to one;
/// the `rustup` to ask, if so.
// A program on the host's PATH, not a workspace path: only its name is looked at.
#[allow(clippy::disallowed_methods)]
pub(crate) fn rustup_behind(path: &Path) -> Option<PathBuf> {
    let real = std::fs::canonicalize(path).ok()?;
    let named = |p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n == "rustup" || n == "rustup-init")
    };
    if named(&real) {
        return (!named(path)).then_some(real);
    }
    // A hard link to rustup (some installs make them): the same file as the rustup on PATH.
    use std::os::unix::fs::MetadataExt;
    let rustup = crate::find_program("rustup")?;
    let (a, b) = (
        std::fs::metadata(&real).ok()?,
        std::fs::metadata(&rustup).ok()?,
    );
    (a.dev() == b.dev() && a.ino() == b.ino()).then_some(rustup)
}

/// Whether `rustup which NAME`, run in `workdir` (where a toolchain file may choose the
/// toolchain), finds it. Never installs a toolchain; gives up after [`RUSTUP_WAIT`].
fn rustup_has(rustup: &Path, name: &str, workdir: &Path) -> bool {
    let child = Command::new(rustup)
        .args(["which", name])
        .current_dir(workdir)
        .env("RUSTUP_AUTO_INSTALL", "0")
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else {
        return false;
    };
    let deadline = Instant::now() + RUSTUP_WAIT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.success(),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return false;
            }
        }
    }
}
