//! `toolshed-sandbox sandbox-exec <policy> -- <command…>`: the command sandbox's helper as a
//! binary of its own. `toolshed sandbox-exec` does the same; this one is small, so it
//! starts in a fraction of the time, and toolshed uses it when it sits next to the
//! `toolshed` binary. See docs/sandbox.md.

fn main() {
    toolshed_ops::sandbox::run_if_asked();
    eprintln!(
        "toolshed-sandbox is the command sandbox's helper, run by toolshed as \
         `toolshed-sandbox sandbox-exec <policy> -- <command…>`; see docs/sandbox.md"
    );
    std::process::exit(2);
}
