//! The `run`/`check` flags for running on a real node: config file, escalation
//! to a systemd restart, metrics. Kept apart from `cli/` and flattened into `RunArgs`, so
//! the core flags and these evolve without stepping on each other.

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use clap::{Args, ValueEnum};

pub(crate) const DEFAULT_CONFIG: &str = "/etc/lifeline/lifeline.toml";

#[allow(
    clippy::doc_markdown,
    reason = "these doc comments are the --help text, where backticks would show"
)]
#[derive(Debug, Args)]
pub(crate) struct NodeArgs {
    /// TOML file with defaults for every flag of `run` (flags win). A missing default file
    /// is fine; a missing file given here is an error. [default: /etc/lifeline/lifeline.toml]
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,

    /// What to do with a confirmed stalled socket: kill it (and restart --restart-unit only
    /// when that does not help), or restart --restart-unit straight away.
    #[arg(long, value_enum, default_value_t = ActionModeArg::Kill)]
    pub action: ActionModeArg,

    /// systemd unit to restart when killing the socket is impossible or does not help
    /// (e.g. kubelet.service). Without it lifeline never restarts anything.
    #[arg(long, value_name = "UNIT", value_parser = parse_unit)]
    pub restart_unit: Option<String>,

    /// After a kill, restart --restart-unit if the owner has no healthy connection to the
    /// endpoint within this long.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = crate::cli::parse_duration)]
    pub escalate_after: Duration,

    /// At most this many restarts of --restart-unit in any sliding hour.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=60))]
    pub max_restarts: u32,

    /// The pause after a restart of --restart-unit before another may start, doubled after
    /// each further restart within the hour (up to 30m), jittered by 20 %.
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = parse_backoff)]
    pub restart_backoff: Duration,

    /// Which systemd manager owns --restart-unit: "system" (the system bus), "user" (a user
    /// manager, on the session bus of DBUS_SESSION_BUS_ADDRESS), or a D-Bus address such as
    /// unix:path=/host/run/dbus/system_bus_socket (a container with the host's socket mounted).
    #[arg(long, value_name = "BUS", default_value = "system", value_parser = parse_bus)]
    pub systemd_bus: SystemdBusArg,

    /// Serve Prometheus metrics over HTTP at this address (off when not given).
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<SocketAddr>,

    /// Allow --metrics-addr on a non-loopback address (the metrics reveal peers and counts).
    #[arg(long)]
    pub metrics_allow_remote: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ActionModeArg {
    Kill,
    Restart,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SystemdBusArg {
    System,
    User,
    Address(String),
}

fn parse_bus(s: &str) -> Result<SystemdBusArg, String> {
    match s {
        "system" => Ok(SystemdBusArg::System),
        "user" => Ok(SystemdBusArg::User),
        a if a.starts_with("unix:") => Ok(SystemdBusArg::Address(a.to_owned())),
        _ => Err(format!(
            "invalid bus '{s}': expected system, user or a D-Bus address such as unix:path=/run/dbus/system_bus_socket"
        )),
    }
}

/// `--restart-backoff`: at least a second (a restart takes that long), at most the cap.
fn parse_backoff(s: &str) -> Result<Duration, String> {
    let d = crate::cli::parse_duration(s)?;
    if d < Duration::from_secs(1) || d > Duration::from_mins(30) {
        return Err(format!(
            "invalid --restart-backoff '{s}': expected 1s to 30m (the first pause after a restart)"
        ));
    }
    Ok(d)
}

/// A unit name as systemd accepts it: a known suffix, no path, no spaces.
fn parse_unit(s: &str) -> Result<String, String> {
    const SUFFIXES: [&str; 3] = [".service", ".scope", ".target"];
    let ok_chars = s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || ":-_.\\@".contains(c));
    if ok_chars && SUFFIXES.iter().any(|x| s.len() > x.len() && s.ends_with(x)) {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "invalid unit '{s}': expected a systemd unit name such as kubelet.service"
        ))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn unit_names_are_validated() {
        assert_eq!(
            super::parse_unit("kubelet.service").as_deref(),
            Ok("kubelet.service")
        );
        assert!(super::parse_unit("kubelet").is_err());
        assert!(super::parse_unit("/etc/x.service").is_err());
        assert!(super::parse_unit(".service").is_err());
    }

    #[test]
    fn the_restart_backoff_is_bounded() {
        use std::time::Duration;
        assert_eq!(super::parse_backoff("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(super::parse_backoff("30m"), Ok(Duration::from_mins(30)));
        for bad in ["500ms", "31m", "0s", "soon"] {
            let e = super::parse_backoff(bad).unwrap_err();
            assert!(e.contains(bad), "{e}");
        }
    }
}
