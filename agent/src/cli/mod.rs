//! Command line.

pub(crate) mod node_args;

use std::{path::PathBuf, time::Duration};

use clap::{Args, Parser, Subcommand, ValueEnum};

mod parse;
pub(crate) use parse::parse_duration;
use parse::{
    FastProbesArg, parse_dns_server, parse_endpoint, parse_fast_probes, parse_keepalive,
    parse_port, parse_user_timeout,
};

pub(crate) const DEFAULT_STATUS_SOCKET: &str = "/run/lifeline/status.sock";

/// lifeline finds black-holed TCP connections of a node daemon (kubelet -> API server)
/// and heals them: a socket whose data has gone unacknowledged past --stall-timeout is
/// destroyed (SOCK_DESTROY, as `ss -K` does) so that its owner re-dials at once, instead of hanging for
/// the ~15 minutes the kernel retransmits for.
#[allow(
    clippy::doc_markdown,
    reason = "this doc comment is the --help text, where backticks would show"
)]
#[derive(Debug, Parser)]
#[command(name = "lifeline", version, propagate_version = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: CliCommand,
}

#[allow(
    clippy::large_enum_variant,
    reason = "parsed once at start; boxing would only add noise"
)]
#[derive(Debug, Subcommand)]
pub(crate) enum CliCommand {
    /// Run the agent: attach the kernel probe, watch, decide, act (needs root). A clean stop
    /// (SIGTERM, SIGINT) puts the socket options lifeline set back to each application's own
    /// values; the next start after a crash does it for the sockets the crashed agent armed
    /// (Linux 5.15: the TCP iterator; before, they stay, and the stop log says so).
    Run(Box<RunArgs>),
    /// Show the watched sockets and their health, read from the running agent.
    Status(StatusArgs),
    /// Preflight: kernel, mounts, probe attach, socket destroy, D-Bus (same flags as run).
    Check(Box<RunArgs>),
}

#[allow(
    clippy::doc_markdown,
    reason = "these doc comments are the --help text, where backticks would show"
)]
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// Watch the TCP sockets of this cgroup (v2) and its descendants (repeatable): a path
    /// under the cgroup2 mount, or relative to it as /proc/PID/cgroup prints it. It may not
    /// exist yet, and may be re-created (a unit restart): it is watched whenever it exists.
    /// Without --cgroup, --comm and --endpoint-clients the targets are
    /// system.slice/kubelet.service plus the endpoint's clients.
    #[arg(long = "cgroup", value_name = "PATH")]
    pub cgroups: Vec<PathBuf>,

    /// Watch the sockets opened by processes with this name, anywhere on the node
    /// (repeatable; 15 bytes max, as the kernel keeps them).
    #[arg(long = "comm", value_name = "NAME")]
    pub comms: Vec<String>,

    /// Watch every socket whose peer is one of the API endpoint's addresses (current, or
    /// within --orphan-grace of leaving), whatever process owns it: kube-proxy, the CNI
    /// agent, node daemons using the node's kubeconfig.
    #[arg(long)]
    pub endpoint_clients: bool,

    /// Remote ports to watch, comma separated.
    #[arg(long, value_name = "PORTS", value_delimiter = ',', default_value = "443,6443", value_parser = parse_port)]
    pub ports: Vec<u16>,

    /// A socket with unacknowledged data and no ACK of any kind for this long is stalled, once
    /// as many RTOs in a row have fired as the kernel's fastest backoff fits into it (5 for
    /// 10 s: 6 transmissions unanswered).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub stall_timeout: Duration,

    /// A socket whose data went unanswered this many transmissions in a row (RTOs) is stalled,
    /// whatever the time. Watched sockets get linear retransmission timeouts (Linux 6.1), so 8
    /// take about 2.4 s; a live connection at 5 % loss each way loses 8 in a row once in 10^8
    /// requests (docs/ARCHITECTURE.md, "The arithmetic"). 0: the time rule alone, and
    /// retransmission timing left to the kernel.
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u8).range(0..=15))]
    pub stall_unanswered: u8,

    /// TCP keepalive armed on every watched socket, as IDLE,INTERVAL,COUNT, or `off`, also
    /// against the application's own later keepalive calls. An application's stricter values
    /// are kept; COUNT is the kernel's own last resort and must exceed --silent-probes. The
    /// application's own values are recorded and put back when lifeline stops.
    #[arg(long, value_name = "IDLE,INTERVAL,COUNT", default_value = "1s,1s,20", value_parser = parse_keepalive)]
    pub keepalive: KeepaliveSpec,

    /// An idle socket with at least this many keepalive probes unanswered in a row, and
    /// nothing at all from the peer for --silent-timeout, is silent (dead) and killed. 12
    /// keeps a live connection's odds of being judged dead under 1e-7 a day at 5 % packet
    /// loss each way with a probe every second (docs/ARCHITECTURE.md, "Idle connections").
    #[arg(long, value_name = "N", default_value_t = 12, value_parser = clap::value_parser!(u8).range(1..=126))]
    pub silent_probes: u8,

    /// See --silent-probes. Default: INTERVAL + (N - 1) x the fast-probe interval (1 s +
    /// 11 x 100 ms = 2.1 s), or IDLE + N x INTERVAL (13 s) with --fast-probes off.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub silent_timeout: Option<Duration>,

    /// Once an idle socket's keepalive probe goes unanswered, send the next ones this often
    /// (50ms to 1s), each with one octet of old data that a live peer answers at once, until
    /// one is answered or the silent verdict's probes are in; `off`: the kernel's own
    /// INTERVAL. Linux 5.15 (docs/ARCHITECTURE.md, "Fast probes").
    #[arg(long, value_name = "DURATION|off", default_value = "100ms", value_parser = parse_fast_probes)]
    pub fast_probes: FastProbesArg,

    /// Also set TCP_USER_TIMEOUT on watched sockets (lowering only), so the kernel itself
    /// aborts a connection whose data stays unacknowledged this long, even if the agent is
    /// gone. Off by default. Not armed with --dry-run; while the guard holds, a socket in
    /// trouble gets the application's own value back.
    #[arg(long, value_name = "DURATION", value_parser = parse_user_timeout)]
    pub user_timeout: Option<Duration>,

    /// The API endpoint to follow, as NAME:PORT (repeatable). NAME is resolved (A and AAAA,
    /// CNAMEs followed, TTL honoured); an IP literal is a fixed set. Default: the `server:`
    /// of kubelet's kubeconfig (see --kubeconfig).
    #[arg(long = "endpoint", value_name = "NAME:PORT", value_parser = parse_endpoint)]
    pub endpoints: Vec<(String, u16)>,

    /// Kubelet's kubeconfig, read for the endpoint when no --endpoint is given. Default: the
    /// one the running kubelet was given (its --kubeconfig, read from /proc), else the first
    /// that exists of the distributions' places (kubeadm, EKS, kube-aws, k3s, RKE2); one
    /// found but unusable is a warning. lifeline check names the file.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,

    /// DNS server to ask, as IP or IP:PORT (repeatable); the name is then asked as given.
    /// Default: /etc/resolv.conf (its servers, search domains and ndots).
    #[arg(long = "dns-server", value_name = "ADDR", value_parser = parse_dns_server)]
    pub dns_servers: Vec<std::net::SocketAddr>,

    /// The hosts file, looked up before DNS as glibc and Go do (the order of the `hosts:`
    /// line of /etc/nsswitch.conf, else files then dns) and re-read every 5 s. In a
    /// container: the node's file where it is mounted.
    #[arg(long, value_name = "PATH", default_value = "/etc/hosts")]
    pub hosts_file: PathBuf,

    /// Re-resolve no sooner than this after an answer, whatever its TTL.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration)]
    pub min_refresh: Duration,

    /// Re-resolve no later than this after an answer, whatever its TTL.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    pub max_refresh: Duration,

    /// An address counts as gone from the endpoint only after every answer has lacked it
    /// for this long (round-robin DNS answering with rotating subsets orphans nobody).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub orphan_grace: Duration,

    /// What to do with a socket whose peer left the endpoint's set: kill it at a quiet
    /// moment so the client re-dials a current address (migrate), or only log.
    #[arg(long, value_enum, default_value_t = OnOrphan::Migrate)]
    pub on_orphan: OnOrphan,

    /// Migrations are spread at random over this window, so that a fleet hit by the same
    /// DNS change does not reconnect in lockstep.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    pub migrate_spread: Duration,

    /// How often the agent evaluates the probe's records.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration)]
    pub sweep_interval: Duration,

    /// Decide and log, but never kill, and let no probing of lifeline's end a connection:
    /// once a silent socket's evidence is in (logged as `outcome: dry-run`), its keepalive is
    /// re-timed so the kernel aborts it no sooner than the application's own settings would
    /// (never, where it set none), and --user-timeout is not armed. The same while the guard
    /// holds (no endpoint address accepts a connection). Before Linux 5.15 (no TCP iterator
    /// to take it back) a dry run arms no keepalive at all.
    #[arg(long)]
    pub dry_run: bool,

    /// Upper bound on kills per minute for each watch target (each --cgroup, each --comm) and
    /// for each owner of the endpoint's other clients (its unit, pod or user slice, and uid;
    /// 2x that for one cgroup's uids together, 10x for all endpoint clients), whatever the
    /// evidence.
    #[arg(long, value_name = "N", default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub max_kills_per_minute: u32,

    /// Capacity of the probe's socket map; when full, new sockets are reported, not watched.
    #[arg(long, value_name = "N", default_value_t = 65_536, value_parser = clap::value_parser!(u32).range(16..=4_194_304))]
    pub max_sockets: u32,

    /// Unix socket `lifeline status` reads from.
    #[arg(long, value_name = "PATH", default_value = DEFAULT_STATUS_SOCKET)]
    pub status_socket: PathBuf,

    /// Where logs go: journald when started by systemd (auto), stderr, or JSON lines.
    #[arg(long, value_enum, default_value_t = LogTargetArg::Auto)]
    pub log: LogTargetArg,

    /// Node integration: config file, restart escalation, metrics.
    #[command(flatten)]
    pub node: crate::cli::node_args::NodeArgs,
}

/// `--keepalive`: `off`, or the values armed on watched sockets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KeepaliveSpec(pub Option<KeepaliveArg>);

/// The values of an enabled `--keepalive`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KeepaliveArg {
    pub idle: Duration,
    pub interval: Duration,
    pub count: u32,
}

#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    /// Unix socket of the running agent.
    #[arg(long, value_name = "PATH", default_value = DEFAULT_STATUS_SOCKET)]
    pub status_socket: PathBuf,

    /// Print the raw JSON document instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum OnOrphan {
    Migrate,
    Log,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogTargetArg {
    Auto,
    Stderr,
    Journald,
    Json,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory as _;
        Cli::command().debug_assert();
    }
}
