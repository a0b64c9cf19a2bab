//! The enums the stages take, owned here so that nothing below the loop imports the command
//! line: each is converted once from its clap twin in `cli/` (which must compile alone, by
//! path, in docgen, and so cannot name these).

use crate::cli;

/// Where logs go (`--log`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LogTarget {
    /// journald when stderr is the journal (started by systemd), else stderr.
    Auto,
    Stderr,
    Journald,
    /// JSON lines on stderr.
    Json,
}

/// Which systemd manager owns the restart unit (`--systemd-bus`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SystemdBus {
    System,
    /// A user manager, on the session bus of `DBUS_SESSION_BUS_ADDRESS`.
    User,
    /// A D-Bus address such as `unix:path=/host/run/dbus/system_bus_socket`.
    Address(String),
}

/// What to do with a confirmed stalled socket (`--action`): the judge's own enum, since the
/// judge is what answers with it.
pub(crate) use lifeline_judge::ActionMode;

impl From<cli::LogTargetArg> for LogTarget {
    fn from(t: cli::LogTargetArg) -> Self {
        match t {
            cli::LogTargetArg::Auto => Self::Auto,
            cli::LogTargetArg::Stderr => Self::Stderr,
            cli::LogTargetArg::Journald => Self::Journald,
            cli::LogTargetArg::Json => Self::Json,
        }
    }
}

impl From<&cli::node_args::SystemdBusArg> for SystemdBus {
    fn from(b: &cli::node_args::SystemdBusArg) -> Self {
        match b {
            cli::node_args::SystemdBusArg::System => Self::System,
            cli::node_args::SystemdBusArg::User => Self::User,
            cli::node_args::SystemdBusArg::Address(a) => Self::Address(a.clone()),
        }
    }
}

impl From<cli::node_args::ActionModeArg> for ActionMode {
    fn from(m: cli::node_args::ActionModeArg) -> Self {
        match m {
            cli::node_args::ActionModeArg::Kill => Self::Kill,
            cli::node_args::ActionModeArg::Restart => Self::Restart,
        }
    }
}
