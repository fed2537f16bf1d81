//! The integration tests of the `toolshed` binary, one test binary: each module is one
//! area, all driving the built binary as a user would.
// Tests build fixtures with whatever std and the crates offer; the rules in clippy.toml
// keep the product code to one copy of each security check.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod catalog;
mod cli;
mod first_hour;
mod hardening;
mod house;
mod identity;
mod policy;
mod remote;
mod sandbox;
mod support;
