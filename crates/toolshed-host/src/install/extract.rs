//! The extractor: names checked, entry types whitelisted, bytes counted as they flow.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::{InstallError, Limits, Progress, io_err};

/// The deepest directory nesting accepted.
const MAX_DEPTH: usize = 32;

/// How often progress is reported while bytes flow.
const PROGRESS_BYTES: u64 = 8 * 1024 * 1024;

/// How often progress is reported as entries pass.
const PROGRESS_ENTRIES: u64 = 100;

/// The components of an entry name, or why it is refused. An empty list is the root.
fn entry_components(name: &str) -> Result<Vec<String>, String> {
    if name.contains('\0') {
        return Err("the name contains a NUL byte".into());
    }
    // A newline or an escape sequence in a name forges lines and colours wherever the name
    // is printed (logs, listings, a terminal); no plugin needs one.
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Err(format!(
            "the name contains the control character {}; names may not",
            c.escape_default()
        ));
    }
    if name.contains('\\') {
        return Err("the name contains a backslash; archive paths use `/`".into());
    }
    let bytes = name.as_bytes();
    if name.starts_with('/') || (bytes.len() >= 2 && bytes[1] == b':') {
        return Err("absolute paths are not allowed; entries must be relative".into());
    }
    let mut parts = Vec::new();
    for part in name.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err("`..` components are not allowed".into()),
            other if other.len() > 255 => {
                return Err("a path component is longer than 255 bytes".into());
            }
            other => parts.push(other.to_string()),
        }
    }
    if parts.len() > MAX_DEPTH {
        return Err(format!("nested deeper than {MAX_DEPTH} directories"));
    }
    Ok(parts)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
}

/// The names seen so far, by lowercased path, to refuse duplicates, file/directory clashes
/// and names that differ only by case (they collide on case-insensitive file systems).
#[derive(Default)]
struct Names {
    seen: HashMap<String, (String, Kind, bool)>,
}

impl Names {
    fn add(&mut self, parts: &[String], kind: Kind) -> Result<(), String> {
        for i in 1..parts.len() {
            let path = parts[..i].join("/");
            match self.seen.get(&path.to_lowercase()) {
                None => {
                    self.seen
                        .insert(path.to_lowercase(), (path, Kind::Dir, false));
                }
                Some((other, Kind::File, _)) => {
                    return Err(format!(
                        "`{other}` is a file, and this entry puts something inside it"
                    ));
                }
                Some((other, Kind::Dir, _)) if other != &path => {
                    return Err(format!(
                        "`{path}` differs from `{other}` only by case; such names clash on some file systems"
                    ));
                }
                Some(_) => {}
            }
        }
        let path = parts.join("/");
        let key = path.to_lowercase();
        match self.seen.get_mut(&key) {
            None => {
                self.seen.insert(key, (path, kind, true));
                Ok(())
            }
            Some((other, _, _)) if other != &path => Err(format!(
                "`{path}` differs from `{other}` only by case; such names clash on some file systems"
            )),
            Some((_, Kind::Dir, explicit)) if kind == Kind::Dir && !*explicit => {
                *explicit = true;
                Ok(())
            }
            Some((_, seen_kind, _)) if *seen_kind != kind => {
                Err("the name is both a file and a directory".into())
            }
            Some(_) => Err("the name appears twice in the archive".into()),
        }
    }
}

/// Counts what a reader yields and fails past a cap, so even data the extractor skips
/// (a directory entry with a body, padding) cannot decompress without bound.
struct CappedReader<R> {
    inner: R,
    read: u64,
    cap: u64,
}

impl<R: Read> Read for CappedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        if self.read > self.cap {
            return Err(io::Error::other(CAP_MESSAGE));
        }
        Ok(n)
    }
}

const CAP_MESSAGE: &str = "the decompressed stream exceeds the size cap";

pub(super) struct Extractor<'a> {
    root: PathBuf,
    names: Names,
    limits: Limits,
    /// The archive's size in bytes; 0 for a directory (no ratio).
    archive_len: u64,
    entries: u64,
    bytes: u64,
    next_report: u64,
    progress: &'a mut dyn FnMut(Progress),
}

impl<'a> Extractor<'a> {
    pub(super) fn new(
        root: PathBuf,
        limits: Limits,
        archive_len: u64,
        progress: &'a mut dyn FnMut(Progress),
    ) -> Self {
        Self {
            root,
            names: Names::default(),
            limits,
            archive_len,
            entries: 0,
            bytes: 0,
            next_report: PROGRESS_BYTES,
            progress,
        }
    }

    /// Reports completion; returns the entries and bytes extracted.
    pub(super) fn finish(&mut self) -> (u64, u64) {
        (self.progress)(Progress {
            entries: self.entries,
            bytes: self.bytes,
            done: true,
        });
        (self.entries, self.bytes)
    }

    fn report(&mut self) {
        (self.progress)(Progress {
            entries: self.entries,
            bytes: self.bytes,
            done: false,
        });
    }

    fn count_entry(&mut self) -> Result<(), InstallError> {
        self.entries += 1;
        if self.entries > self.limits.max_entries {
            return Err(InstallError::Limit(format!(
                "more than {} entries (the limit)",
                self.limits.max_entries
            )));
        }
        if self.entries.is_multiple_of(PROGRESS_ENTRIES) {
            self.report();
        }
        Ok(())
    }

    fn check(name: &str, kind: Kind, names: &mut Names) -> Result<Vec<String>, InstallError> {
        let refuse = |reason: String| InstallError::Entry {
            entry: name.to_string(),
            reason,
        };
        let parts = entry_components(name).map_err(refuse)?;
        if parts.is_empty() {
            return match kind {
                Kind::Dir => Ok(parts),
                Kind::File => Err(refuse("a file entry has an empty name".into())),
            };
        }
        names.add(&parts, kind).map_err(refuse)?;
        Ok(parts)
    }

    fn dir(&mut self, name: &str) -> Result<(), InstallError> {
        let parts = Self::check(name, Kind::Dir, &mut self.names)?;
        let path = parts.iter().fold(self.root.clone(), |p, c| p.join(c));
        std::fs::create_dir_all(&path).map_err(io_err("create", &path))
    }

    fn file(
        &mut self,
        name: &str,
        mode: Option<u32>,
        reader: &mut dyn Read,
        archive: &Path,
    ) -> Result<(), InstallError> {
        let parts = Self::check(name, Kind::File, &mut self.names)?;
        let path = parts.iter().fold(self.root.clone(), |p, c| p.join(c));
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io_err("create", parent))?;
        }
        // Only the executable bits are kept: no setuid, no world-writable files.
        let mode = if mode.is_some_and(|m| m & 0o111 != 0) {
            0o755
        } else {
            0o644
        };
        let mut out = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&path)
            .map_err(io_err("create", &path))?;
        let ratio_cap = self
            .limits
            .ratio_floor_bytes
            .max(self.archive_len.saturating_mul(self.limits.max_ratio));
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match reader.read(&mut buf) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.read_error(archive, e)),
            };
            if n == 0 {
                break;
            }
            self.bytes += n as u64;
            if self.bytes > self.limits.max_total_bytes {
                return Err(InstallError::Limit(format!(
                    "the content exceeds {} bytes (the limit)",
                    self.limits.max_total_bytes
                )));
            }
            if self.archive_len > 0 && self.bytes > ratio_cap {
                return Err(InstallError::Limit(format!(
                    "the archive ({} bytes) decompresses to more than {} times its size, the limit; it looks like a compression bomb",
                    self.archive_len, self.limits.max_ratio
                )));
            }
            out.write_all(&buf[..n]).map_err(io_err("write", &path))?;
            if self.bytes >= self.next_report {
                self.next_report = self.bytes + PROGRESS_BYTES;
                self.report();
            }
        }
        Ok(())
    }

    fn read_error(&self, archive: &Path, e: io::Error) -> InstallError {
        if e.to_string().contains(CAP_MESSAGE) {
            InstallError::Limit(format!(
                "the archive decompresses to more than {} bytes (the limit)",
                self.limits.max_total_bytes
            ))
        } else {
            InstallError::Corrupt {
                path: archive.to_path_buf(),
                reason: e.to_string(),
            }
        }
    }

    pub(super) fn tar_gz(&mut self, path: &Path, file: File) -> Result<(), InstallError> {
        use tar::EntryType;
        // Several gzip members in a row are one stream (as gzip itself reads them); reading
        // only the first would install a silently truncated plugin.
        let gz = flate2::read::MultiGzDecoder::new(io::BufReader::new(file));
        // Headers and padding add at most a few blocks per entry to the content.
        let cap = self
            .limits
            .max_total_bytes
            .saturating_add(self.limits.max_entries.saturating_mul(4096))
            .saturating_add(1024 * 1024);
        let mut archive = tar::Archive::new(CappedReader {
            inner: gz,
            read: 0,
            cap,
        });
        let entries = archive.entries().map_err(|e| self.read_error(path, e))?;
        for entry in entries {
            let mut entry = entry.map_err(|e| self.read_error(path, e))?;
            self.count_entry()?;
            let name = String::from_utf8(entry.path_bytes().into_owned()).map_err(|e| {
                InstallError::Entry {
                    entry: String::from_utf8_lossy(e.as_bytes()).into_owned(),
                    reason: "the name is not UTF-8".into(),
                }
            })?;
            let refuse = |reason: String| InstallError::Entry {
                entry: name.clone(),
                reason,
            };
            let only = "plugins may hold regular files and directories only";
            match entry.header().entry_type() {
                EntryType::Regular | EntryType::Continuous => {
                    let mode = entry.header().mode().ok();
                    self.file(&name, mode, &mut entry, path)?;
                }
                EntryType::Directory => self.dir(&name)?,
                EntryType::Symlink => {
                    return Err(refuse(format!("it is a symbolic link; {only}")));
                }
                EntryType::Link => return Err(refuse(format!("it is a hard link; {only}"))),
                EntryType::Char | EntryType::Block => {
                    return Err(refuse(format!("it is a device; {only}")));
                }
                EntryType::Fifo => return Err(refuse(format!("it is a FIFO; {only}"))),
                // Metadata for the archive as a whole (pax global header): nothing to write.
                EntryType::XGlobalHeader => {}
                other => {
                    return Err(refuse(format!(
                        "its type {other:?} is not supported; {only}"
                    )));
                }
            }
        }
        Ok(())
    }

    pub(super) fn zip(&mut self, path: &Path, file: File) -> Result<(), InstallError> {
        let corrupt = |e: zip::result::ZipError| InstallError::Corrupt {
            path: path.to_path_buf(),
            reason: e.to_string(),
        };
        let mut archive = zip::ZipArchive::new(io::BufReader::new(file)).map_err(corrupt)?;
        if archive.has_duplicate_names() {
            return Err(InstallError::Limit(
                "the archive lists a name twice (duplicate names are refused)".into(),
            ));
        }
        if archive.len() as u64 > self.limits.max_entries {
            return Err(InstallError::Limit(format!(
                "{} entries, more than {} (the limit)",
                archive.len(),
                self.limits.max_entries
            )));
        }
        let only = "plugins may hold regular files and directories only";
        for i in 0..archive.len() {
            let mut entry = archive.by_index(i).map_err(corrupt)?;
            self.count_entry()?;
            let name = entry.name().map_err(corrupt)?.into_owned();
            let refuse = |reason: String| InstallError::Entry {
                entry: name.clone(),
                reason,
            };
            let mode = entry.unix_mode();
            let file_type = mode.map_or(0, |m| m & 0o170_000);
            if entry.is_symlink() || file_type == 0o120_000 {
                return Err(refuse(format!("it is a symbolic link; {only}")));
            }
            match file_type {
                0 | 0o100_000 | 0o040_000 => {}
                0o020_000 | 0o060_000 => return Err(refuse(format!("it is a device; {only}"))),
                0o010_000 => return Err(refuse(format!("it is a FIFO; {only}"))),
                _ => return Err(refuse(format!("its file type is not supported; {only}"))),
            }
            if entry.is_dir() || file_type == 0o040_000 {
                self.dir(&name)?;
            } else {
                self.file(&name, mode, &mut entry, path)?;
            }
        }
        Ok(())
    }

    pub(super) fn copy_dir(
        &mut self,
        dir: &Path,
        rel: &mut Vec<String>,
    ) -> Result<(), InstallError> {
        let mut children: Vec<_> = std::fs::read_dir(dir)
            .map_err(io_err("read", dir))?
            .filter_map(Result::ok)
            .collect();
        children.sort_by_key(|e| e.file_name());
        for child in children {
            let path = child.path();
            let Some(name) = child.file_name().to_str().map(str::to_string) else {
                return Err(InstallError::Entry {
                    entry: path.display().to_string(),
                    reason: "the name is not UTF-8".into(),
                });
            };
            rel.push(name);
            let joined = rel.join("/");
            self.count_entry()?;
            let meta = std::fs::symlink_metadata(&path).map_err(io_err("read", &path))?;
            let kind = meta.file_type();
            let only = "plugins may hold regular files and directories only";
            if kind.is_symlink() {
                return Err(InstallError::Entry {
                    entry: joined,
                    reason: format!("it is a symbolic link; {only}"),
                });
            } else if kind.is_dir() {
                self.dir(&joined)?;
                self.copy_dir(&path, rel)?;
            } else if kind.is_file() {
                use std::os::unix::fs::PermissionsExt;
                let mut file = File::open(&path).map_err(io_err("read", &path))?;
                self.file(&joined, Some(meta.permissions().mode()), &mut file, &path)?;
            } else {
                return Err(InstallError::Entry {
                    entry: joined,
                    reason: format!("it is a device, FIFO or socket; {only}"),
                });
            }
            rel.pop();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert_eq!(entry_components("a/./b/").unwrap(), ["a", "b"]);
        assert!(entry_components("./").unwrap().is_empty());
        for bad in [
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a\\b",
            "C:/x",
            "a\0b",
            "a\x01b",
            "evil\nname",
            "colour\x1b[31m.js",
            "tab\there",
        ] {
            assert!(entry_components(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn duplicates_and_clashes_are_refused() {
        let p = |s: &str| entry_components(s).unwrap();
        let mut names = Names::default();
        names.add(&p("a/b"), Kind::File).unwrap();
        names.add(&p("a"), Kind::Dir).unwrap();
        assert!(names.add(&p("a"), Kind::Dir).is_err());
        assert!(names.add(&p("a/b"), Kind::File).is_err());
        assert!(names.add(&p("a/B"), Kind::File).is_err());
        assert!(names.add(&p("a/b/c"), Kind::File).is_err());
        assert!(names.add(&p("A/c"), Kind::File).is_err());
        names.add(&p("x"), Kind::File).unwrap();
        assert!(names.add(&p("x"), Kind::Dir).is_err());
    }
}
