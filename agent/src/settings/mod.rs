//! The command line and the config file turned into the values the stages run with: the
//! only module that reads `cli`.

pub mod command;
pub mod config;
mod kinds;
pub mod run;
pub mod targets;
mod watch;

pub use command::Command;
pub use kinds::{ActionMode, LogTarget, SystemdBus};
pub use run::Run;
pub use targets::{CgroupTarget, DEFAULT_CGROUP, Targets};

#[cfg(test)]
mod tests;
