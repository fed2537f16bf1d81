//! The integration tests of `toolshed-server`, one binary: each module is one behaviour area.
//! (One binary links once; a failure still names its module and test.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod api;
mod guard;
mod oauth;
mod proxy;
