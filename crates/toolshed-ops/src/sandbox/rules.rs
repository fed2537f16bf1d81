//! The rules the command process restricts itself with: Landlock and seccomp.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// The Landlock ABI this kernel offers; `None` when Landlock is missing or disabled.
pub(super) fn landlock_abi() -> Option<i32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: asking for the version takes no pointer (NULL, size 0) and creates nothing.
    #[allow(unsafe_code)]
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    (version > 0).then(|| i32::try_from(version).unwrap_or(i32::MAX))
}

/// The crate's name for the kernel's ABI (the newest it knows when the kernel is newer), so
/// that every right the kernel can enforce is asked for, and nothing it cannot.
fn abi_of(version: i32) -> ABI {
    match version {
        ..=1 => ABI::V1,
        2 => ABI::V2,
        3 => ABI::V3,
        4 => ABI::V4,
        5 => ABI::V5,
        6 => ABI::V6,
        7 => ABI::V7,
        8 => ABI::V8,
        9 => ABI::V9,
        _ => ABI::V10,
    }
}

/// The devices a command may open for writing whatever the mode.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// The Landlock ruleset: read everywhere, write `writable` (and the devices); with ABI 6 or
/// later, signals and abstract UNIX sockets scoped to the sandbox. Every right is a hard
/// requirement: what the kernel cannot enforce is an error, never dropped.
pub(super) fn landlock(writable: &[PathBuf], min_abi: u32) -> Result<RulesetCreated, String> {
    let version = landlock_abi().ok_or_else(|| {
        "Landlock is not available in this kernel (it needs Linux 5.13 or later with \
         Landlock enabled at boot, e.g. lsm=landlock,…)"
            .to_string()
    })?;
    if u32::try_from(version).unwrap_or(0) < min_abi {
        return Err(format!(
            "this kernel's Landlock ABI is {version}, older than the {min_abi} required by \
             [sandbox] min_landlock_abi"
        ));
    }
    let abi = abi_of(version);
    let err = |what: &str, e: &dyn std::fmt::Display| format!("Landlock {what}: {e}");
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .map_err(|e| err("ruleset", &e))?;
    if version >= 6 {
        ruleset = ruleset
            .scope(Scope::from_all(abi))
            .map_err(|e| err("scopes", &e))?;
    }
    let mut created = ruleset.create().map_err(|e| err("ruleset", &e))?;
    let mut rules: Vec<(&Path, landlock::BitFlags<AccessFs>)> =
        vec![(Path::new("/"), AccessFs::from_read(abi))];
    rules.extend(
        writable
            .iter()
            .map(|p| (p.as_path(), AccessFs::from_all(abi))),
    );
    rules.extend(
        DEVICES
            .iter()
            .map(Path::new)
            .filter(|p| p.exists())
            .map(|p| (p, AccessFs::from_file(abi))),
    );
    for (path, access) in rules {
        let fd = PathFd::new(path).map_err(|e| err(&path.display().to_string(), &e))?;
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|e| err(&format!("rule for {}", path.display()), &e))?;
    }
    Ok(created)
}

/// Applies `ruleset` to this process; an error unless it is fully enforced.
pub(super) fn restrict(ruleset: RulesetCreated) -> Result<(), String> {
    let status = ruleset
        .restrict_self()
        .map_err(|e| format!("Landlock restrict_self: {e}"))?;
    match status.ruleset {
        RulesetStatus::FullyEnforced if status.no_new_privs => Ok(()),
        other => Err(format!(
            "Landlock is only partly enforced here ({other:?}, no_new_privs {})",
            status.no_new_privs
        )),
    }
}

/// System calls denied to a command whatever it passes.
const DENIED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_bpf,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_open_by_handle_at,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_mount_setattr,
];

/// The namespace flags `clone` may not carry.
const NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWNS,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWCGROUP,
];

/// The seccomp filter: the deny list above fails with EPERM, `clone` with a namespace flag
/// too, `clone3` with ENOSYS (its flags are behind a pointer; C libraries fall back to
/// `clone`), `socket` of a family other than UNIX, IPv4 and IPv6, and `ioctl(TIOCSTI)`
/// (typing into the terminal's input).
pub(super) fn seccomp() -> Result<Vec<BpfProgram>, String> {
    let err = |e: &dyn std::fmt::Display| format!("seccomp filter: {e}");
    let cond = |arg: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(|e| err(&e))
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        DENIED.iter().map(|nr| (*nr, Vec::new())).collect();
    let mut clone = Vec::new();
    for flag in NAMESPACE_FLAGS {
        let bit = u64::from(flag.unsigned_abs());
        clone.push(
            SeccompRule::new(vec![cond(0, SeccompCmpOp::MaskedEq(bit), bit)?])
                .map_err(|e| err(&e))?,
        );
    }
    rules.insert(libc::SYS_clone, clone);
    let family = |f: libc::c_int| u64::from(f.unsigned_abs());
    rules.insert(
        libc::SYS_socket,
        vec![
            SeccompRule::new(vec![
                cond(0, SeccompCmpOp::Ne, family(libc::AF_UNIX))?,
                cond(0, SeccompCmpOp::Ne, family(libc::AF_INET))?,
                cond(0, SeccompCmpOp::Ne, family(libc::AF_INET6))?,
            ])
            .map_err(|e| err(&e))?,
        ],
    );
    rules.insert(
        libc::SYS_socketpair,
        vec![
            SeccompRule::new(vec![cond(0, SeccompCmpOp::Ne, family(libc::AF_UNIX))?])
                .map_err(|e| err(&e))?,
        ],
    );
    rules.insert(
        libc::SYS_ioctl,
        vec![
            SeccompRule::new(vec![cond(1, SeccompCmpOp::Eq, libc::TIOCSTI)?])
                .map_err(|e| err(&e))?,
        ],
    );
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| err(&e))?;
    let eperm = SeccompAction::Errno(u32::try_from(libc::EPERM).unwrap_or(1));
    let filter =
        SeccompFilter::new(rules, SeccompAction::Allow, eperm, arch).map_err(|e| err(&e))?;
    let program: BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| err(&e))?;
    // clone3 cannot be filtered by its flags: make it look absent, so C libraries use clone.
    let enosys = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(u32::try_from(libc::ENOSYS).unwrap_or(38)),
        arch,
    )
    .map_err(|e| err(&e))?;
    let enosys: BpfProgram = enosys
        .try_into()
        .map_err(|e: seccompiler::BackendError| err(&e))?;
    // Two filters: the kernel runs both and the stricter answer wins.
    Ok(vec![program, enosys])
}

/// Installs the filters on this process (and everything it starts).
pub(super) fn apply_seccomp(programs: &[BpfProgram]) -> Result<(), String> {
    for program in programs {
        seccompiler::apply_filter(program).map_err(|e| format!("seccomp: {e}"))?;
    }
    Ok(())
}
