//! Pseudo-terminals.

use std::io;
use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::{Mode, OFlags};
use rustix::pty::OpenptFlags;
use rustix::termios::Winsize;

/// Both ends of a new terminal.
pub(super) struct Pty {
    /// The side toolshed reads and writes.
    pub(super) master: OwnedFd,
    /// The side the child gets as stdin, stdout and stderr.
    pub(super) slave: OwnedFd,
}

/// Opens a terminal of `rows` × `cols`.
pub(super) fn open(rows: u16, cols: u16) -> io::Result<Pty> {
    let master = rustix::pty::openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY)?;
    rustix::io::fcntl_setfd(&master, rustix::io::FdFlags::CLOEXEC)?;
    rustix::pty::grantpt(&master)?;
    rustix::pty::unlockpt(&master)?;
    let name = rustix::pty::ptsname(&master, Vec::new())?;
    let slave = rustix::fs::open(
        name.as_c_str(),
        OFlags::RDWR | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    set_size(&slave, rows, cols)?;
    Ok(Pty { master, slave })
}

/// Sets the size of the terminal behind `fd` (either end).
pub(super) fn set_size(fd: impl AsFd, rows: u16, cols: u16) -> io::Result<()> {
    rustix::termios::tcsetwinsize(
        fd,
        Winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        },
    )?;
    Ok(())
}
