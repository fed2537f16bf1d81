//! The integration tests of `toolshed-ops`, one binary: each module is one behaviour area.
//! (One binary links once; a failure still names its module and test.)
// Tests build fixtures with whatever std and the crates offer; the rules in clippy.toml
// keep the product code to one copy of each security check.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use toolshed_test_support::http as server;
mod support;

mod commit;
mod contract;
mod feed;
mod jail;
mod net;
mod process;
mod search;
mod ssrf;
