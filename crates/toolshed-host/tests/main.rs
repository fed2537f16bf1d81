//! The integration tests of `toolshed-host`, one binary: each module is one behaviour area.
//! (One binary links once; a failure still names its module and test.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod audit;
mod install;
mod lifecycle;
mod manifests;
mod memory;
mod pipeline;
mod registry;
mod secrets;
mod watching;
