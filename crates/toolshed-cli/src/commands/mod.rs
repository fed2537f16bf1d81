//! One module per command.

pub mod approvals;
pub mod audit;
pub mod call;
pub mod config;
pub mod doctor;
pub mod gateway;
pub mod mcp;
pub mod memory;
pub mod plugins;
pub mod policy;
pub mod sandbox;
pub mod serve;
pub mod token;
pub mod tools;
