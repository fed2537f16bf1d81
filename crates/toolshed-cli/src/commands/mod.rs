//! One module per command.

pub mod call;
pub mod doctor;
pub mod plugins;
pub mod tools;
