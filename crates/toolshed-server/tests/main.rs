//! The integration tests of `toolshed-server`, one binary: each module is one behaviour area.
//! (One binary links once; a failure still names its module and test.)
// Tests build fixtures with whatever std and the crates offer; the rules in clippy.toml
// keep the product code to one copy of each security check.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod agents;
mod api;
mod guard;
mod oauth;
mod openapi;
mod operators;
mod proxy;
