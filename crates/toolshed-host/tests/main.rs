//! The integration tests of `toolshed-host`, one binary: each module is one behaviour area.
//! (One binary links once; a failure still names its module and test.)
// Tests build fixtures with whatever std and the crates offer; the rules in clippy.toml
// keep the product code to one copy of each security check.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod audit;
mod install;
mod lifecycle;
mod manifests;
mod memory;
mod pins;
mod pipeline;
mod registry;
mod secrets;
mod watching;
