//! Command line.

use std::{path::PathBuf, time::Duration};

use clap::{Args, Parser, Subcommand, ValueEnum};

pub const DEFAULT_STATUS_SOCKET: &str = "/run/lifeline/status.sock";

/// lifeline finds black-holed TCP connections of a node daemon (kubelet -> API server)
/// and heals them: a socket whose data has gone unacknowledged past --stall-timeout is
/// destroyed (SOCK_DESTROY, as `ss -K` does) so that its owner re-dials at once, instead of hanging for
/// the ~15 minutes the kernel retransmits for.
#[allow(clippy::doc_markdown, reason = "this doc comment is the --help text, where backticks would show")]
#[derive(Debug, Parser)]
#[command(name = "lifeline", version, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[allow(clippy::large_enum_variant, reason = "parsed once at start; boxing would only add noise")]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the agent: attach the kernel probe, watch, decide, act (needs root).
    Run(RunArgs),
    /// Show the watched sockets and their health, read from the running agent.
    Status(StatusArgs),
    /// Preflight: kernel, mounts, probe attach, socket destroy, D-Bus (same flags as run).
    Check(RunArgs),
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Cgroup (v2) whose TCP sockets are watched: a path under the cgroup2 mount, or
    /// relative to it as /proc/PID/cgroup prints it. Default: system.slice/kubelet.service
    /// (or the whole hierarchy when only --comm is given).
    #[arg(long, value_name = "PATH")]
    pub cgroup: Option<PathBuf>,

    /// Watch only sockets opened by processes with this name (repeatable; 15 bytes max,
    /// as the kernel keeps them).
    #[arg(long = "comm", value_name = "NAME")]
    pub comms: Vec<String>,

    /// Remote ports to watch, comma separated.
    #[arg(long, value_name = "PORTS", value_delimiter = ',', default_value = "443,6443", value_parser = parse_port)]
    pub ports: Vec<u16>,

    /// A socket with unacknowledged data and no ACK progress for this long is stalled.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub stall_timeout: Duration,

    /// How often the agent evaluates the probe's records.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration)]
    pub sweep_interval: Duration,

    /// Decide and log, but never kill.
    #[arg(long)]
    pub dry_run: bool,

    /// Upper bound on kills per minute, whatever the evidence.
    #[arg(long, value_name = "N", default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub max_kills_per_minute: u32,

    /// Capacity of the probe's socket map; when full, new sockets are reported, not watched.
    #[arg(long, value_name = "N", default_value_t = 65_536, value_parser = clap::value_parser!(u32).range(16..=4_194_304))]
    pub max_sockets: u32,

    /// Unix socket `lifeline status` reads from.
    #[arg(long, value_name = "PATH", default_value = DEFAULT_STATUS_SOCKET)]
    pub status_socket: PathBuf,

    /// Where logs go: journald when started by systemd (auto), stderr, or JSON lines.
    #[arg(long, value_enum, default_value_t = LogTarget::Auto)]
    pub log: LogTarget,

    /// Node integration (issue 5): config file, restart escalation, metrics.
    #[command(flatten)]
    pub node: crate::node_args::NodeArgs,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Unix socket of the running agent.
    #[arg(long, value_name = "PATH", default_value = DEFAULT_STATUS_SOCKET)]
    pub status_socket: PathBuf,

    /// Print the raw JSON document instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogTarget {
    Auto,
    Stderr,
    Journald,
    Json,
}

fn parse_port(s: &str) -> Result<u16, String> {
    match s.trim().parse::<u32>() {
        Ok(p) if (1..=65_535).contains(&p) => Ok(u16::try_from(p).unwrap_or_default()),
        _ => Err(format!("invalid port '{s}': expected a number from 1 to 65535")),
    }
}

pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s).map_err(|e| format!("invalid duration '{s}': {e} (e.g. 10s, 500ms)"))?;
    if d.is_zero() {
        return Err(format!("invalid duration '{s}': must be greater than zero"));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_and_durations_are_validated() {
        assert_eq!(parse_port("6443"), Ok(6443));
        assert!(parse_port("70000").unwrap_err().contains("70000"));
        assert!(parse_port("0").is_err());
        assert!(parse_port("abc").unwrap_err().contains("port"));
        assert_eq!(parse_duration("1500ms"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("ten").is_err());
    }

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory as _;
        Cli::command().debug_assert();
    }
}
