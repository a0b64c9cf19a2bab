//! The command line and the config file turned into the values the stages run with: the
//! only module that reads `cli`.

pub(crate) mod command;
pub(crate) mod config;
mod kinds;
pub(crate) mod run;
pub(crate) mod targets;
mod watch;

pub(crate) use command::Command;
pub(crate) use kinds::{ActionMode, LogTarget, SystemdBus};
pub(crate) use run::Run;
pub(crate) use targets::{CgroupTarget, DEFAULT_CGROUP, Targets};

#[cfg(test)]
mod tests;
