//! The operations layer: how tools touch the world.
//!
//! Tools never call `std::fs` or spawn processes themselves. They receive an `Ops` value in
//! their [`CallContext`](toolshed_core::CallContext) extensions and go through it, so that the
//! same tool runs against the real system (`LocalOps`), a sandbox, or an in-memory double in
//! tests. The traits arrive with the workspace tools; this crate reserves the layer's place in
//! the dependency graph (core ← ops ← host) so later work does not reshuffle the crates.
