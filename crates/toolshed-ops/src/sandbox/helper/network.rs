//! The network a command gets: the keeper's namespaces joined, or a loopback of its own.

use std::ffi::OsString;

use std::path::PathBuf;

use super::{os_error, threads, write_file};
use crate::sandbox::NetworkMode;

/// Joins the keeper's user and network namespaces through the inherited descriptors, and
/// closes them.
pub(super) fn join_network(user: libc::c_int, net: libc::c_int) -> Result<(), String> {
    for (fd, kind, what) in [
        (user, libc::CLONE_NEWUSER, "user"),
        (net, libc::CLONE_NEWNET, "network"),
    ] {
        // SAFETY: plain system calls on descriptors the host passed for this.
        let rc = unsafe { libc::setns(fd, kind) };
        let error = os_error();
        // SAFETY: as above; each is closed once.
        unsafe { libc::close(fd) };
        if rc != 0 {
            return Err(format!(
                "joining the sandbox network's {what} namespace: {error}"
            ));
        }
    }
    Ok(())
}

/// The network keeper (`<exe> sandbox-net --network off|filtered [--egress SOCKET]`): one
/// private network shared by the host's sandboxed commands, made once instead of per
/// command (a network namespace costs about a millisecond to create). It enters new user
/// and network namespaces, brings up their loopback, with `filtered` carries connections to
/// `127.0.0.1:PROXY_PORT` to the egress proxy's socket, says `ready` on stdout and lives
/// until its stdin closes — when the host drops it or dies.
pub(super) fn keeper(args: &[OsString]) -> Result<(), String> {
    let mut network = None;
    let mut egress = None;
    let mut rest = args.iter();
    while let Some(flag) = rest.next() {
        let value = rest
            .next()
            .ok_or_else(|| format!("{} needs a value", flag.to_string_lossy()))?;
        match flag.to_str() {
            Some("--network") => {
                network =
                    Some(NetworkMode::parse(&value.to_string_lossy()).map_err(|e| e.to_string())?)
            }
            Some("--egress") => egress = Some(PathBuf::from(value)),
            _ => return Err(format!("unknown option {}", flag.to_string_lossy())),
        }
    }
    match (network, &egress) {
        (Some(NetworkMode::Off), None) | (Some(NetworkMode::Filtered), Some(_)) => {}
        _ => return Err("sandbox-net takes --network off, or filtered with --egress".into()),
    }
    if threads() != Some(1) {
        return Err("the network keeper must start single-threaded".into());
    }
    // SAFETY: plain system calls without pointers.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    // SAFETY: no pointers; single-threaded (checked above).
    if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) } != 0 {
        return Err(format!(
            "cannot create the network namespace ({}): unprivileged user namespaces may be \
             disabled",
            os_error()
        ));
    }
    write_file("/proc/self/setgroups", "deny")?;
    write_file("/proc/self/uid_map", &format!("{uid} {uid} 1"))?;
    write_file("/proc/self/gid_map", &format!("{gid} {gid} 1"))?;
    loopback_up()?;
    if let Some(socket) = egress {
        let listener = std::net::TcpListener::bind(("127.0.0.1", crate::sandbox::PROXY_PORT))
            .map_err(|e| {
                format!(
                    "the egress bridge on 127.0.0.1:{}: {e}",
                    crate::sandbox::PROXY_PORT
                )
            })?;
        std::thread::spawn(move || crate::sandbox::egress::bridge(listener, socket));
    }
    println!("ready");
    let mut sink = [0u8; 64];
    // Until the host closes our stdin (dropped, or gone).
    while std::io::Read::read(&mut std::io::stdin(), &mut sink).is_ok_and(|n| n > 0) {}
    Ok(())
}

/// Brings up the loopback interface of a new network namespace.
pub(super) fn loopback_up() -> Result<(), String> {
    // SAFETY: a socket we own and close; `ifreq` is zeroed and filled within bounds.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(format!("socket: {}", os_error()));
        }
        let mut request: libc::ifreq = std::mem::zeroed();
        for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
            *slot = libc::c_char::from_ne_bytes([*byte]);
        }
        let mut rc = libc::ioctl(fd, libc::SIOCGIFFLAGS, &raw mut request);
        if rc == 0 {
            let up = libc::c_short::try_from(libc::IFF_UP | libc::IFF_RUNNING).unwrap_or(1);
            request.ifr_ifru.ifru_flags |= up;
            rc = libc::ioctl(fd, libc::SIOCSIFFLAGS, &raw const request);
        }
        let error = os_error();
        libc::close(fd);
        if rc == 0 {
            Ok(())
        } else {
            Err(format!("bringing up the loopback: {error}"))
        }
    }
}
