//! A mounted server's log: what it writes to stderr, kept in its plugin's
//! `.state/plugin.log` with a line for each start and exit, so that `toolshed plugins logs
//! NAME` shows it from any process. Bounded: past [`MAX_LOG_BYTES`] the file moves to
//! `plugin.log.1` (replacing the one before) and a new one begins.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use toolshed_ops::process::{Process, Stream};

/// The most one log file holds before it is rotated; with the one rotated before, a
/// server's log never takes more than twice this.
pub const MAX_LOG_BYTES: u64 = 256 * 1024;

/// The log file inside a plugin's directory.
pub fn log_path(plugin_dir: &Path) -> PathBuf {
    plugin_dir
        .join(toolshed_core::PLUGIN_STATE_DIR)
        .join("plugin.log")
}

fn rotated(path: &Path) -> PathBuf {
    path.with_extension("log.1")
}

/// Appends `bytes` to the log at `path`, rotating it first when it would pass
/// [`MAX_LOG_BYTES`]. Makes the `.state` directory when it is missing, but never the
/// plugin's directory: a plugin removed while its server still writes (`toolshed mcp
/// remove` beside a running `serve`) stays removed, its last lines dropped.
pub(crate) fn append(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        match std::fs::create_dir(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        }
    }
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    if size > 0 && size + bytes.len() as u64 > MAX_LOG_BYTES {
        std::fs::rename(path, rotated(path))?;
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    // A single write larger than a whole file keeps only its end.
    let start = bytes.len().saturating_sub(MAX_LOG_BYTES as usize);
    file.write_all(&bytes[start..])
}

/// `secs` since the epoch as `YYYY-MM-DDTHH:MM:SSZ` (days to a civil date as in Howard
/// Hinnant's `civil_from_days`).
fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rest = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3_600,
        rest % 3_600 / 60,
        rest % 60
    )
}

/// A line saying what happened, with the time (UTC).
pub(crate) fn note(path: &Path, text: &str) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let line = format!("--- toolshed {}: {text} ---\n", utc(now));
    if let Err(e) = append(path, line.as_bytes()) {
        tracing::debug!(error = %e, log = %path.display(), "cannot write the MCP server's log");
    }
}

/// Copies the process's stderr into the log as it comes, until the process has exited
/// and all it wrote is copied; then notes how it ended.
pub(crate) fn follow(process: Arc<Process>, path: PathBuf) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut since = 0;
        loop {
            let chunk = process
                .read_wait(Stream::Stderr, since, 64 * 1024, Duration::from_secs(5))
                .await;
            if chunk.skipped > 0 {
                note(
                    &path,
                    &format!("{} bytes of stderr came too fast to keep", chunk.skipped),
                );
            }
            if !chunk.bytes.is_empty()
                && let Err(e) = append(&path, &chunk.bytes)
            {
                tracing::debug!(error = %e, log = %path.display(), "cannot write the MCP server's log");
            }
            since = chunk.next;
            if let Some(exit) = process.exit()
                && since >= chunk.total
                && process.output_len(Stream::Stderr) <= since
            {
                let _ = exit;
                note(
                    &path,
                    &format!("the server {}", crate::upstream::exited(&process)),
                );
                return;
            }
        }
    })
}

/// The end of a plugin's log: at most its last `lines` lines, across the rotated file and
/// the current one. `None` when there is no log.
pub fn tail(plugin_dir: &Path, lines: usize) -> Option<String> {
    let path = log_path(plugin_dir);
    let current = std::fs::read(&path).ok();
    let older = std::fs::read(rotated(&path)).ok();
    if current.is_none() && older.is_none() {
        return None;
    }
    let mut all = older.unwrap_or_default();
    all.extend(current.unwrap_or_default());
    let text = String::from_utf8_lossy(&all);
    let kept: Vec<&str> = text.lines().collect();
    let start = kept.len().saturating_sub(lines);
    Some(kept[start..].join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_as_utc_dates() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc(1_796_199_311), "2026-12-02T08:15:11Z");
    }

    #[test]
    fn the_log_rotates_and_stays_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let path = log_path(dir.path());
        let line = vec![b'x'; 1023];
        for i in 0..600 {
            let mut bytes = format!("{i:04}").into_bytes();
            bytes.extend_from_slice(&line[4..]);
            bytes.push(b'\n');
            append(&path, &bytes).unwrap();
        }
        let current = std::fs::metadata(&path).unwrap().len();
        let older = std::fs::metadata(rotated(&path)).unwrap().len();
        assert!(current <= MAX_LOG_BYTES && older <= MAX_LOG_BYTES);
        let shown = tail(dir.path(), 3).unwrap();
        let firsts: Vec<&str> = shown.lines().map(|l| &l[..4]).collect();
        assert_eq!(firsts, ["0597", "0598", "0599"]);
        assert!(tail(&dir.path().join("none"), 3).is_none());
    }
}
