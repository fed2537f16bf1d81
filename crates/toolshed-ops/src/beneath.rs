//! Reading a file inside a directory that is not the workspace (a plugin's own files):
//! the one "is this file inside that directory" check, done by the kernel.
//!
//! The file is opened with `openat2(RESOLVE_BENEATH)` relative to the directory, so no
//! `..`, absolute link or link leading out can take it elsewhere, and the final name may
//! not be a link at all. What was checked is what is read: the same descriptor, never the
//! path again (a check by `canonicalize` and a second open by path could be raced by a
//! rename in between).

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use rustix::fs::{Mode, OFlags, ResolveFlags, openat2};
use rustix::io::Errno;

/// Opens the regular file `rel` (relative, inside `dir`) for reading. Refused: a path that
/// leaves `dir` (through `..` or a link), a final name that is a link, anything but a
/// regular file.
pub fn open_beneath(dir: &Path, rel: &Path) -> io::Result<File> {
    if rel.is_absolute() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "`{}` is absolute; give a path inside the directory",
                rel.display()
            ),
        ));
    }
    let root = rustix::fs::open(
        dir,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut tries = 0;
    let fd = loop {
        match openat2(
            &root,
            rel,
            OFlags::RDONLY | OFlags::NOCTTY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
        ) {
            Ok(fd) => break fd,
            Err(Errno::AGAIN) if tries < 8 => tries += 1,
            Err(Errno::XDEV) => {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!("`{}` leads outside {}", rel.display(), dir.display()),
                ));
            }
            Err(Errno::LOOP) => {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!(
                        "`{}` is a symbolic link (links are not followed)",
                        rel.display()
                    ),
                ));
            }
            Err(e) => return Err(e.into()),
        }
    };
    let st = rustix::fs::fstat(&fd)?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{}` is not a regular file", rel.display()),
        ));
    }
    Ok(File::from(fd))
}

/// Reads the regular file `rel` inside `dir` ([`open_beneath`]), refusing one larger than
/// `max` bytes (checked on the open file, and again while reading).
pub fn read_beneath(dir: &Path, rel: &Path, max: u64) -> io::Result<Vec<u8>> {
    let file = open_beneath(dir, rel)?;
    let size = file.metadata()?.len();
    if size > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("`{}` is {size} bytes; the limit is {max}", rel.display()),
        ));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("`{}` is larger than {max} bytes", rel.display()),
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_inside_the_directory_are_read() {
        let outer = tempfile::tempdir().unwrap();
        let dir = outer.path().join("plugin");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/ok.js"), "ok").unwrap();
        std::fs::write(outer.path().join("secret"), "secret").unwrap();
        std::os::unix::fs::symlink("../secret", dir.join("link")).unwrap();
        std::os::unix::fs::symlink(outer.path(), dir.join("out")).unwrap();
        assert_eq!(
            read_beneath(&dir, Path::new("sub/ok.js"), 10).unwrap(),
            b"ok"
        );
        for refused in ["../secret", "link", "out/secret", "sub", "/etc/hostname"] {
            assert!(
                read_beneath(&dir, Path::new(refused), 100).is_err(),
                "{refused}"
            );
        }
        assert!(read_beneath(&dir, Path::new("sub/ok.js"), 1).is_err());
    }
}
