//! Links the release `toolshed` binary with the functions a server session runs placed
//! first, in the order they first run (`text-order.txt`, made by
//! `scripts/text-order/generate`): the code a running server uses then sits together, and
//! it maps about a third of the code pages it would otherwise (docs/benchmarks.md, "Code
//! layout"). A name that no longer exists is skipped, so a stale list costs memory, never
//! correctness.
//!
//! The list is handed to the linker as `--symbol-ordering-file`, which LLD reads: Rust
//! links with its own LLD on x86_64 Linux since 1.90. With another linker (an older
//! toolchain, a linker named in the configuration, the environment or the flags) nothing is
//! passed.
//! `TOOLSHED_TEXT_ORDER=0` turns it off.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=text-order.txt");
    println!("cargo:rerun-if-env-changed=TOOLSHED_TEXT_ORDER");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    let own_linker = var("RUSTC_LINKER").is_empty()
        && ![
            "linker=",
            "fuse-ld",
            "linker-flavor",
            "linker-features",
            "link-self-contained",
        ]
        .iter()
        .any(|flag| flags.contains(flag));
    let wanted = var("TOOLSHED_TEXT_ORDER") != "0"
        && var("PROFILE") == "release"
        && var("TARGET") == "x86_64-unknown-linux-gnu"
        && own_linker
        && rustc_minor(&var("RUSTC")).is_some_and(|minor| minor >= 90);
    if wanted {
        let list = std::path::Path::new(&var("CARGO_MANIFEST_DIR")).join("text-order.txt");
        println!(
            "cargo:rustc-link-arg-bin=toolshed=-Wl,--symbol-ordering-file={}",
            list.display()
        );
        println!("cargo:rustc-link-arg-bin=toolshed=-Wl,--no-warn-symbol-ordering");
    }
}

/// The minor version of a 1.x rustc.
fn rustc_minor(rustc: &str) -> Option<u32> {
    let out = Command::new(rustc).arg("--version").output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let version = text.split_whitespace().nth(1)?;
    let mut parts = version.split('.');
    (parts.next()? == "1").then_some(())?;
    parts.next()?.parse().ok()
}
