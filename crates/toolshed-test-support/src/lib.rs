//! Fixtures toolshed's tests share, so that no crate keeps a copy of another's: a loopback
//! HTTP server that records what it is sent and answers what the test scripts ([`http`]),
//! plugin files on disk ([`files`]) and the starter config uncommented ([`config`]). A
//! dev-dependency only; nothing here ships.

#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod config;
pub mod files;
pub mod http;
