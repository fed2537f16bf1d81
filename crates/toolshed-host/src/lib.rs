//! The toolshed host.
