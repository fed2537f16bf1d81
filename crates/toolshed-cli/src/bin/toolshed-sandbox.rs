//! `toolshed-sandbox sandbox-exec <policy> -- <command…>`: the command sandbox's helper as a
//! binary of its own. `toolshed sandbox-exec` does the same; this one is small, so it
//! starts in a fraction of the time, and toolshed uses it when it sits next to the
//! `toolshed` binary. See docs/sandbox.md.
//!
//! It has no Rust `main`: the C library calls [`main`] directly, so Rust's runtime setup
//! (checking the standard descriptors, ignoring `SIGPIPE`, reading `/proc/self/maps` for
//! the main thread's stack guard, an alternate signal stack) is skipped. None of it serves
//! a process that sets up a sandbox and executes a command, and each command paid for it
//! (bench/sandbox_stages.py). The arguments still reach `std::env::args_os`: on Linux the
//! standard library takes them from the C library at load time.

// (In a test build the test harness brings its own `main`; the binary has no tests.)
#![cfg_attr(not(test), no_main)]
// `no_mangle` exports the C `main`; nothing else here is unsafe.
#![allow(unsafe_code)]

/// The C entry point.
#[cfg(not(test))]
#[unsafe(no_mangle)]
pub extern "C" fn main(
    _argc: std::ffi::c_int,
    _argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    toolshed_ops::sandbox::run_if_asked();
    eprintln!(
        "toolshed-sandbox is the command sandbox's helper, run by toolshed as \
         `toolshed-sandbox sandbox-exec <policy> -- <command…>`; see docs/sandbox.md"
    );
    2
}
