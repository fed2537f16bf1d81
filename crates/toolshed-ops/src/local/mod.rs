//! `LocalOps`: the real file system, confined by the kernel.
//!
//! Every path is opened with `openat2(2)` and `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`
//! relative to a descriptor of the workspace root. The kernel refuses any resolution that
//! would leave the root — `..` past the top, absolute paths, absolute symbolic links, links
//! pointing out, and a directory swapped for such a link while the call runs — so no
//! string check stands between a tool and the rest of the machine. Creating, renaming and
//! removing happen with the `*at` calls on a parent descriptor opened the same way.
//!
//! The reserved `.toolshed/` directory is checked twice: on the path's words before
//! anything is opened, and on the kernel's own account of what was opened
//! (`/proc/self/fd`), so a link pointing into it does not get through either.

mod access;
mod commit;
pub(crate) mod process;
mod tree;

use std::borrow::Cow;
use std::ffi::OsStr;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::fs::{
    AtFlags, FileType, Mode, OFlags, RenameFlags, ResolveFlags, Stat, openat, openat2, renameat,
    renameat_with, statat, unlinkat,
};
use rustix::io::Errno;

use crate::error::OpsError;
use crate::file::{
    Change, DirEntry, DirListing, Expect, FileContents, FileKind, FileOps, Follow, MAX_DIR_ENTRIES,
    Metadata, Overwrite, Parents, Written,
};
use crate::path::{RESERVED_DIR, from_fs, names_reserved, normalize, shown, split_parent, to_fs};

/// The prefix of toolshed's temporary files; listings hide them.
pub const TEMP_PREFIX: &str = ".tsw-";

/// The real file system under one root.
pub struct LocalOps {
    root: PathBuf,
    root_fd: OwnedFd,
    /// `.toolshed/tmp`, opened on first write (see the `commit` module).
    scratch: OnceLock<Option<commit::Scratch>>,
    /// The root is on a local disk or in memory ([`FileOps::quick`]).
    quick: bool,
}

impl std::fmt::Debug for LocalOps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalOps")
            .field("root", &self.root)
            .finish()
    }
}

fn kind_of(st: &Stat) -> FileKind {
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => FileKind::File,
        FileType::Directory => FileKind::Dir,
        FileType::Symlink => FileKind::Symlink,
        _ => FileKind::Other,
    }
}

fn special_name(st: &Stat) -> &'static str {
    match FileType::from_raw_mode(st.st_mode) {
        FileType::Fifo => "FIFO",
        FileType::Socket => "socket",
        FileType::CharacterDevice => "character device",
        FileType::BlockDevice => "block device",
        FileType::Symlink => "symbolic link",
        FileType::Directory => "directory",
        _ => "special file",
    }
}

/// Refuses to write anything but a regular file with one name: a directory, a link, a
/// special file, or a file whose other hard links a write would change too.
fn check_writable(st: &Stat, path: &str) -> Result<(), OpsError> {
    match kind_of(st) {
        FileKind::File => {}
        FileKind::Dir => return Err(OpsError::IsADirectory { path: shown(path) }),
        _ => {
            return Err(OpsError::SpecialFile {
                path: shown(path),
                kind: special_name(st).into(),
                action: "written".into(),
            });
        }
    }
    if st.st_nlink > 1 {
        return Err(OpsError::MultipleLinks {
            path: shown(path),
            links: st.st_nlink,
        });
    }
    // Replacing goes through a rename, which the file's own mode does not stop: honour it.
    if st.st_mode & 0o200 == 0 {
        return Err(OpsError::ReadOnlyFile {
            path: shown(path),
            mode: st.st_mode & 0o7777,
        });
    }
    Ok(())
}

/// Refuses to change the entries of a directory whose owner took away its write
/// permission. The kernel refuses it too, but not to root (`CAP_DAC_OVERRIDE`): toolshed
/// honours the mode bits the same way whoever runs it.
pub(super) fn check_dir_writable(st: &Stat, path: &str) -> Result<(), OpsError> {
    if st.st_mode & 0o200 == 0 {
        return Err(OpsError::ReadOnlyDirectory {
            path: shown(path),
            mode: st.st_mode & 0o7777,
        });
    }
    Ok(())
}

fn metadata_of(st: &Stat, link_target: Option<String>) -> Metadata {
    let secs = u64::try_from(st.st_mtime).unwrap_or(0);
    let nanos = u32::try_from(st.st_mtime_nsec).unwrap_or(0);
    Metadata {
        kind: kind_of(st),
        size: u64::try_from(st.st_size).unwrap_or(0),
        mode: st.st_mode & 0o7777,
        modified: UNIX_EPOCH + Duration::new(secs, nanos),
        links: st.st_nlink,
        link_target,
    }
}

impl LocalOps {
    /// Opens the workspace root.
    // The jail itself: the root is resolved once, then every path is opened beneath it.
    #[allow(clippy::disallowed_methods)]
    pub fn new(root: &Path) -> Result<Self, OpsError> {
        let root = std::fs::canonicalize(root).map_err(|e| OpsError::Io {
            action: "open the workspace".into(),
            path: root.display().to_string(),
            message: e.to_string(),
        })?;
        let root_fd = rustix::fs::open(
            &root,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| OpsError::Io {
            action: "open the workspace".into(),
            path: root.display().to_string(),
            message: e.to_string(),
        })?;
        let quick = on_local_disk(&root_fd);
        let ops = Self {
            root,
            root_fd,
            scratch: OnceLock::new(),
            quick,
        };
        ops.recover();
        Ok(ops)
    }

    /// The canonical workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Opens a directory for a child's working directory, beneath the root and outside
    /// `.toolshed/`, like every other path.
    pub(crate) fn open_workdir(&self, path: &str) -> Result<OwnedFd, OpsError> {
        let rel = self.rel(path)?;
        let fd = self.open_beneath(
            &rel,
            OFlags::RDONLY | OFlags::DIRECTORY,
            path,
            "use as the working directory",
        )?;
        self.check_opened(&fd, path)?;
        Ok(fd)
    }

    fn rel(&self, path: &str) -> Result<String, OpsError> {
        let rel = normalize(&self.root, path)?;
        if names_reserved(&rel) {
            return Err(OpsError::Reserved { path: shown(path) });
        }
        Ok(rel)
    }

    /// Maps a system error on `path` to an [`OpsError`].
    fn error(path: &str, action: &'static str, e: Errno) -> OpsError {
        let path = shown(path);
        match e {
            Errno::XDEV => OpsError::Escape { path, detail: "it resolves outside the root (through `..`, an absolute path or a symbolic link)".into() },
            Errno::NOENT => OpsError::NotFound { path },
            Errno::EXIST => OpsError::AlreadyExists { path },
            Errno::ISDIR => OpsError::IsADirectory { path },
            Errno::NOTDIR => OpsError::NotADirectory { path },
            Errno::NOTEMPTY => OpsError::NotEmpty { path },
            Errno::ACCESS | Errno::PERM => OpsError::PermissionDenied { path },
            Errno::LOOP => OpsError::Escape { path, detail: "too many levels of symbolic links, or a link where none may be".into() },
            Errno::NAMETOOLONG => OpsError::InvalidPath { path, reason: "a name is too long".into() },
            other => OpsError::Io { action: action.into(), path, message: other.to_string() },
        }
    }

    /// Opens `rel` beneath the root. `openat2` may answer EAGAIN when a rename races the
    /// lookup; that is retried a few times.
    fn open_beneath(
        &self,
        rel: &str,
        flags: OFlags,
        shown_path: &str,
        action: &'static str,
    ) -> Result<OwnedFd, OpsError> {
        self.open_beneath_with(
            Path::new(&*to_fs(rel)),
            flags,
            ResolveFlags::empty(),
            shown_path,
            action,
        )
    }

    /// [`open_beneath`](Self::open_beneath) with more resolution flags.
    fn open_beneath_with(
        &self,
        rel: &Path,
        flags: OFlags,
        extra: ResolveFlags,
        shown_path: &str,
        action: &'static str,
    ) -> Result<OwnedFd, OpsError> {
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS | extra;
        let mut tries = 0;
        loop {
            match openat2(
                &self.root_fd,
                rel,
                flags | OFlags::CLOEXEC,
                Mode::empty(),
                resolve,
            ) {
                Ok(fd) => return Ok(fd),
                Err(Errno::AGAIN) if tries < 8 => tries += 1,
                Err(e) => return Err(Self::error(shown_path, action, e)),
            }
        }
    }

    /// Opens for reading a regular file that a search walk found, `rel` being
    /// workspace-relative as the file system spells it (names need not be UTF-8).
    ///
    /// The walk never follows links, so the path it reports has none, and opening with
    /// `RESOLVE_NO_SYMLINKS` refuses any that appeared since (a directory swapped for a
    /// link). With no link and no `.` or `..` in it, what the kernel opens is the path's
    /// own words — so checking the words for `.toolshed/` is exact here, and the
    /// `/proc/self/fd` check of [`check_opened`](Self::check_opened), which would cost
    /// about a fifth of a large search, has nothing left to catch.
    pub(crate) fn open_read(&self, rel: &Path) -> Result<File, OpsError> {
        use std::os::unix::ffi::OsStrExt;
        let bytes = rel.as_os_str().as_bytes();
        let lexical = !bytes.is_empty()
            && bytes[0] != b'/'
            && bytes
                .split(|b| *b == b'/')
                .all(|part| !part.is_empty() && part != b"." && part != b"..");
        if !lexical {
            return Err(OpsError::InvalidPath {
                path: shown(&rel.to_string_lossy()),
                reason: "a search path must be relative, without `.` or `..`".into(),
            });
        }
        if bytes.split(|b| *b == b'/').next() == Some(RESERVED_DIR.as_bytes()) {
            return Err(OpsError::Reserved {
                path: shown(&rel.to_string_lossy()),
            });
        }
        // NONBLOCK so that a FIFO put in place of the file cannot hang the search.
        let fd = self.open_beneath_with(
            rel,
            OFlags::RDONLY | OFlags::NOCTTY | OFlags::NONBLOCK,
            ResolveFlags::NO_SYMLINKS,
            &rel.to_string_lossy(),
            "read",
        )?;
        let st = rustix::fs::fstat(&fd)
            .map_err(|e| Self::error(&rel.to_string_lossy(), "inspect", e))?;
        if kind_of(&st) != FileKind::File {
            return Err(OpsError::SpecialFile {
                path: shown(&rel.to_string_lossy()),
                kind: special_name(&st).into(),
                action: "read".into(),
            });
        }
        Ok(File::from(fd))
    }

    /// Opens `rel` with no symbolic link allowed on the way, when it has no `..`: then what
    /// the kernel opened is exactly the path's words, which [`rel`](Self::rel) already
    /// judged. `None` when that cannot be had (a `..`, or a link on the way): the caller
    /// opens the checked way.
    fn open_by_words(
        &self,
        rel: &str,
        flags: OFlags,
        path: &str,
        action: &'static str,
    ) -> Option<Result<OwnedFd, OpsError>> {
        if rel.split('/').any(|part| part == "..") {
            return None;
        }
        match self.open_beneath_with(
            Path::new(&*to_fs(rel)),
            flags,
            ResolveFlags::NO_SYMLINKS,
            path,
            action,
        ) {
            Err(OpsError::Escape { .. }) => None,
            plain => Some(plain),
        }
    }

    /// Refuses an opened object inside the reserved directory, judged on the kernel's path.
    fn check_opened(&self, fd: &OwnedFd, path: &str) -> Result<PathBuf, OpsError> {
        let real = self.real_path_of(fd, path)?;
        let reserved = self.root.join(RESERVED_DIR);
        if real.starts_with(&reserved) {
            return Err(OpsError::Reserved { path: shown(path) });
        }
        if !real.starts_with(&self.root) {
            return Err(OpsError::Escape {
                path: shown(path),
                detail: "it resolves outside the root".into(),
            });
        }
        Ok(real)
    }

    /// `real` (beneath the root) as [`FileOps::realpath`] spells it: workspace-relative,
    /// `.` for the root.
    fn inner(&self, real: &Path) -> String {
        let inner = real.strip_prefix(&self.root).unwrap_or(Path::new(""));
        let text = from_fs(inner.as_os_str().as_bytes());
        if text.is_empty() {
            ".".into()
        } else {
            text.into_owned()
        }
    }

    fn real_path_of(&self, fd: &OwnedFd, path: &str) -> Result<PathBuf, OpsError> {
        let link = format!("/proc/self/fd/{}", fd.as_raw_fd());
        std::fs::read_link(&link).map_err(|e| OpsError::Io {
            action: "resolve".into(),
            path: shown(path),
            message: format!("{e} (toolshed needs /proc mounted)"),
        })
    }

    /// [`open_parent`](Self::open_parent) for a change in that directory: refused when its
    /// mode says it is read-only ([`check_dir_writable`]).
    fn writable_parent<'a>(
        &self,
        rel: &'a str,
        path: &str,
    ) -> Result<(OwnedFd, Cow<'a, OsStr>), OpsError> {
        let (fd, name) = self.open_parent(rel, path)?;
        let st = rustix::fs::fstat(&fd).map_err(|e| Self::error(path, "inspect", e))?;
        check_dir_writable(&st, path)?;
        Ok((fd, name))
    }

    /// Opens the parent directory of `rel` for `*at` calls and checks it.
    /// The name comes back as the file system spells it (see [`to_fs`]).
    fn open_parent<'a>(
        &self,
        rel: &'a str,
        path: &str,
    ) -> Result<(OwnedFd, Cow<'a, OsStr>), OpsError> {
        let (parent, name) = split_parent(rel);
        if name == ".." || rel == "." {
            return Err(OpsError::InvalidPath {
                path: shown(path),
                reason: "the path must end in a file or directory name".into(),
            });
        }
        let fd = self.open_beneath(
            parent,
            OFlags::RDONLY | OFlags::DIRECTORY,
            path,
            "open the directory of",
        )?;
        // Judged on where the parent really is, not on how it was spelled: `l/.toolshed`
        // with `l -> .` names the reserved directory too.
        let real = self.check_opened(&fd, path)?;
        if real == self.root && name == RESERVED_DIR {
            return Err(OpsError::Reserved { path: shown(path) });
        }
        Ok((fd, to_fs(name)))
    }

    /// The temporary file for writing `name` when the scratch directory is on another file
    /// system: one fixed name per target, so a writer killed mid-write leaves at most one
    /// leftover, which the next write of that file replaces. Two writers never share it:
    /// both hold the directory's exclusive lock.
    fn temp_name(name: &OsStr) -> String {
        // FNV-1a: stable across builds, so leftovers of older versions are found too.
        let hash = name
            .as_bytes()
            .iter()
            .copied()
            .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
        format!("{TEMP_PREFIX}{hash:016x}.tmp")
    }
}

/// The file systems whose data is on this machine: a disk or memory (`statfs` types).
const LOCAL_FILE_SYSTEMS: [i64; 8] = [
    0xEF53,      // ext2, ext3, ext4
    0x5846_5342, // xfs
    0x9123_683E, // btrfs
    0xF2F5_2010, // f2fs
    0x2FC1_2FC1, // zfs
    0x0102_1994, // tmpfs
    0x8584_58F6, // ramfs
    0x794C_7630, // overlayfs (containers)
];

/// Whether the file system of `fd` keeps its data on this machine, so that a stat or a small
/// read takes microseconds (not NFS, SMB, 9p or FUSE, where one can take seconds).
fn on_local_disk(fd: &OwnedFd) -> bool {
    rustix::fs::fstatfs(fd).is_ok_and(|s| {
        #[allow(clippy::useless_conversion)]
        let kind = i64::from(s.f_type);
        LOCAL_FILE_SYSTEMS.contains(&kind)
    })
}

impl FileOps for LocalOps {
    fn quick(&self) -> bool {
        self.quick
    }

    fn read(&self, path: &str, max_bytes: u64) -> Result<FileContents, OpsError> {
        let _span = tracing::info_span!(target: toolshed_core::TRACE, "fs.read").entered();
        let rel = self.rel(path)?;
        // NONBLOCK so that opening a FIFO does not hang; it is refused below.
        // A path without `..` is first opened with no symbolic link allowed on the way:
        // then what the kernel opened is the path's own words, which `rel` already judged,
        // and the `/proc/self/fd` lookup of `check_opened` (a fifth of a small read's cost)
        // is not needed. A link on the way is followed as usual, and checked. Either way
        // the file's real path comes with opening it (the read log keys on it).
        let flags = OFlags::RDONLY | OFlags::NOCTTY | OFlags::NONBLOCK;
        let (fd, real_path) = match self.open_by_words(&rel, flags, path, "read") {
            Some(opened) => (opened?, rel),
            None => {
                let fd = self.open_beneath(&rel, flags, path, "read")?;
                let real = self.check_opened(&fd, path)?;
                let inner = self.inner(&real);
                (fd, inner)
            }
        };
        let st = rustix::fs::fstat(&fd).map_err(|e| Self::error(path, "inspect", e))?;
        match kind_of(&st) {
            FileKind::File => {}
            FileKind::Dir => return Err(OpsError::IsADirectory { path: shown(path) }),
            _ => {
                return Err(OpsError::SpecialFile {
                    path: shown(path),
                    kind: special_name(&st).into(),
                    action: "read".into(),
                });
            }
        }
        let metadata = metadata_of(&st, None);
        let mut bytes = Vec::with_capacity(metadata.size.min(max_bytes).min(64 << 20) as usize);
        File::from(fd)
            .take(max_bytes)
            .read_to_end(&mut bytes)
            .map_err(|e| OpsError::Io {
                action: "read".into(),
                path: shown(path),
                message: e.to_string(),
            })?;
        Ok(FileContents {
            size: metadata.size.max(bytes.len() as u64),
            bytes,
            metadata,
            real_path: Some(real_path),
        })
    }

    fn write(&self, path: &str, data: &[u8], parents: Parents) -> Result<Written, OpsError> {
        let _span = tracing::info_span!(target: toolshed_core::TRACE, "fs.write").entered();
        let written = self.apply(&[Change::Write {
            path,
            data,
            expect: Expect::Anything,
            parents,
        }])?;
        Ok(written.first().copied().unwrap_or(Written::Created))
    }

    fn commit(&self, changes: &[Change<'_>]) -> Result<(), OpsError> {
        let _span = tracing::info_span!(target: toolshed_core::TRACE, "fs.commit").entered();
        self.apply(changes).map(|_| ())
    }

    fn append(&self, path: &str, data: &[u8]) -> Result<(), OpsError> {
        let _span = tracing::info_span!(target: toolshed_core::TRACE, "fs.append").entered();
        let rel = self.rel(path)?;
        let (dir, name) = self.writable_parent(&rel, path)?;
        let fd = openat(
            &dir,
            &*name,
            OFlags::WRONLY
                | OFlags::APPEND
                | OFlags::CREATE
                | OFlags::NOFOLLOW
                | OFlags::NONBLOCK
                | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .map_err(|e| Self::error(path, "append to", e))?;
        let st = rustix::fs::fstat(&fd).map_err(|e| Self::error(path, "inspect", e))?;
        check_writable(&st, path)?;
        File::from(fd).write_all(data).map_err(|e| OpsError::Io {
            action: "append to".into(),
            path: shown(path),
            message: e.to_string(),
        })
    }

    fn access(&self, path: &str) -> Result<crate::file::Access, OpsError> {
        self.access_local(path)
    }

    fn stat(&self, path: &str, follow: Follow) -> Result<Metadata, OpsError> {
        let _span = tracing::info_span!(target: toolshed_core::TRACE, "fs.stat").entered();
        let rel = self.rel(path)?;
        let mut flags = OFlags::PATH;
        if follow == Follow::No {
            flags |= OFlags::NOFOLLOW;
        }
        // Found by its words (no link on the way, no `..`), the object is where the path
        // says, which `rel` already judged: the `/proc/self/fd` check is not needed.
        let (fd, by_words) = match self.open_by_words(&rel, flags, path, "inspect") {
            Some(opened) => (opened?, true),
            None => (self.open_beneath(&rel, flags, path, "inspect")?, false),
        };
        let st = rustix::fs::fstat(&fd).map_err(|e| Self::error(path, "inspect", e))?;
        if kind_of(&st) == FileKind::Symlink {
            let target = rustix::fs::readlinkat(&fd, "", Vec::new())
                .map(|t| from_fs(t.as_bytes()).into_owned())
                .ok();
            return Ok(metadata_of(&st, target));
        }
        if !by_words {
            self.check_opened(&fd, path)?;
        }
        Ok(metadata_of(&st, None))
    }

    fn read_dir(&self, path: &str) -> Result<DirListing, OpsError> {
        let _span = tracing::info_span!(target: toolshed_core::TRACE, "fs.read_dir").entered();
        let rel = self.rel(path)?;
        let fd = self.open_beneath(&rel, OFlags::RDONLY | OFlags::DIRECTORY, path, "list")?;
        self.check_opened(&fd, path)?;
        let at_root = self.real_path_of(&fd, path)? == self.root;
        let dir = rustix::fs::Dir::read_from(&fd).map_err(|e| Self::error(path, "list", e))?;
        let mut listing = DirListing::default();
        for entry in dir {
            let entry = entry.map_err(|e| Self::error(path, "list", e))?;
            let name_c = entry.file_name();
            let name = from_fs(name_c.to_bytes()).into_owned();
            if name == "."
                || name == ".."
                || name.starts_with(TEMP_PREFIX)
                || (at_root && name == RESERVED_DIR)
            {
                continue;
            }
            if listing.entries.len() >= MAX_DIR_ENTRIES {
                listing.truncated = true;
                break;
            }
            // The entry may vanish between listing and stat; skip it then.
            let Ok(st) = statat(&fd, name_c, AtFlags::SYMLINK_NOFOLLOW) else {
                continue;
            };
            let target = (kind_of(&st) == FileKind::Symlink)
                .then(|| {
                    rustix::fs::readlinkat(&fd, name_c, Vec::new())
                        .ok()
                        .map(|t| from_fs(t.as_bytes()).into_owned())
                })
                .flatten();
            listing.entries.push(DirEntry {
                name,
                metadata: metadata_of(&st, target),
            });
        }
        listing.entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(listing)
    }

    fn mkdir(&self, path: &str, parents: Parents) -> Result<(), OpsError> {
        let _span = tracing::info_span!(target: toolshed_core::TRACE, "fs.mkdir").entered();
        let rel = self.rel(path)?;
        if rel == "." {
            return Ok(());
        }
        let parts: Vec<&str> = rel.split('/').collect();
        let first = if parents == Parents::Create {
            1
        } else {
            parts.len()
        };
        for i in first..=parts.len() {
            let prefix = parts[..i].join("/");
            match self.open_beneath(&prefix, OFlags::PATH | OFlags::DIRECTORY, path, "open") {
                Ok(_) => continue,
                Err(OpsError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
            let (dir, name) = self.writable_parent(&prefix, path)?;
            match rustix::fs::mkdirat(&dir, &*name, Mode::from_raw_mode(0o755)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(Self::error(path, "create directory", e)),
            }
        }
        // What exists now must be a directory inside the root.
        let fd = self.open_beneath(
            &rel,
            OFlags::PATH | OFlags::DIRECTORY,
            path,
            "create directory",
        )?;
        self.check_opened(&fd, path).map(|_| ())
    }

    fn remove(&self, path: &str, recursive: bool) -> Result<(), OpsError> {
        let _span = tracing::info_span!(target: toolshed_core::TRACE, "fs.remove").entered();
        let rel = self.rel(path)?;
        let (dir, name) = self.writable_parent(&rel, path)?;
        let name = &*name;
        let st = statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| Self::error(path, "remove", e))?;
        if kind_of(&st) == FileKind::Dir {
            if recursive {
                tree::remove_tree(&dir, name).map_err(|e| Self::error(path, "remove", e))
            } else {
                unlinkat(&dir, name, AtFlags::REMOVEDIR).map_err(|e| Self::error(path, "remove", e))
            }
        } else {
            unlinkat(&dir, name, AtFlags::empty()).map_err(|e| Self::error(path, "remove", e))
        }
    }

    fn rename(&self, from: &str, to: &str, overwrite: Overwrite) -> Result<(), OpsError> {
        let _span = tracing::info_span!(target: toolshed_core::TRACE, "fs.rename").entered();
        let from_rel = self.rel(from)?;
        let to_rel = self.rel(to)?;
        let (from_dir, from_name) = self.writable_parent(&from_rel, from)?;
        let (to_dir, to_name) = self.writable_parent(&to_rel, to)?;
        let (from_name, to_name) = (&*from_name, &*to_name);
        statat(&from_dir, from_name, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| Self::error(from, "move", e))?;
        // A file its owner made read-only is not replaced by a move either.
        if overwrite == Overwrite::Yes
            && let Ok(target) = statat(&to_dir, to_name, AtFlags::SYMLINK_NOFOLLOW)
            && kind_of(&target) == FileKind::File
            && target.st_mode & 0o200 == 0
        {
            return Err(OpsError::ReadOnlyFile {
                path: shown(to),
                mode: target.st_mode & 0o7777,
            });
        }
        let result = match overwrite {
            Overwrite::Yes => renameat(&from_dir, from_name, &to_dir, to_name),
            Overwrite::No => renameat_with(
                &from_dir,
                from_name,
                &to_dir,
                to_name,
                RenameFlags::NOREPLACE,
            ),
        };
        result.map_err(|e| match e {
            Errno::EXIST | Errno::NOTEMPTY => OpsError::AlreadyExists { path: shown(to) },
            Errno::INVAL => OpsError::InvalidPath {
                path: shown(to),
                reason: format!("cannot move `{}` inside itself", shown(from)),
            },
            other => Self::error(from, "move", other),
        })
    }

    fn realpath(&self, path: &str) -> Result<String, OpsError> {
        let rel = self.rel(path)?;
        // Found by its words, the path is where it is: the two `/proc/self/fd` lookups
        // below (a fifth of a small read) are not needed. `rel` is spelled already.
        if let Some(opened) = self.open_by_words(&rel, OFlags::PATH, path, "resolve") {
            return opened.map(|_| rel);
        }
        let fd = self.open_beneath(&rel, OFlags::PATH, path, "resolve")?;
        let real = self.check_opened(&fd, path)?;
        Ok(self.inner(&real))
    }

    fn root_display(&self) -> String {
        self.root.display().to_string()
    }
}

/// Seconds since the epoch of a modification time, for sorting and display.
pub fn unix_seconds(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[allow(dead_code)]
fn _assert_fd<T: AsFd>(_: &T) {}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_fd(path: &str) -> OwnedFd {
        rustix::fs::open(
            path,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap()
    }

    #[test]
    fn memory_file_systems_are_quick_and_kernel_ones_are_not_disks() {
        // /dev/shm is a tmpfs on every Linux with a C library that has POSIX shared memory.
        if std::path::Path::new("/dev/shm").is_dir() {
            assert!(on_local_disk(&dir_fd("/dev/shm")));
        }
        assert!(!on_local_disk(&dir_fd("/proc")), "procfs is not a disk");
        assert!(!on_local_disk(&dir_fd("/sys")), "sysfs is not a disk");
    }
}
