//! The command line and the config file turned into the values the stages run with.

pub mod config;
pub mod targets;

pub use targets::{CgroupTarget, DEFAULT_CGROUP, Targets};
