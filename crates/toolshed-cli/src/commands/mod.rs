//! One module per command.

pub(crate) mod approvals;
pub(crate) mod audit;
pub(crate) mod call;
pub(crate) mod config;
pub(crate) mod doctor;
pub(crate) mod gateway;
pub(crate) mod mcp;
pub(crate) mod memory;
pub(crate) mod plugins;
pub(crate) mod policy;
pub(crate) mod remote;
pub(crate) mod sandbox;
pub(crate) mod serve;
pub(crate) mod store;
pub(crate) mod token;
pub(crate) mod tools;
pub(crate) mod workspace;
