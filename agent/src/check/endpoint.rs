//! The `endpoint peers` row of `lifeline check`: the node's established TCP sockets on each
//! endpoint's port (a `sock_diag` dump of this network namespace, both families), against
//! the addresses the check itself resolves for the endpoint, as `run` would (an IP literal
//! is its own set). A socket to another address is not the endpoint's connection for
//! `run` (`endpoint::Members`): it is judged by stall and silence only, never by DNS. That
//! is right for another service on the port, and worth knowing when it is the API server
//! reached through an address lifeline's answers lack (`/etc/hosts`, split-horizon DNS).
//! The check sees one answer, not the history `run` keeps, so this is a warning, not a fail.

use std::{
    collections::BTreeSet,
    net::{IpAddr, SocketAddr},
};

use crate::{
    check::row::Row,
    endpoint::{
        EndpointSet, Resolver,
        setup::{self, Configured},
    },
    kernel::diag::{STATE_ESTABLISHED, SockDiag},
    settings::run::Endpoint as Settings,
};

const NAME: &str = "endpoint peers";

/// One row per configured endpoint; none without an endpoint (the `endpoint` row says so).
pub(super) fn rows(args: &Settings) -> Vec<Row> {
    let Ok(Configured::Endpoints { list, .. }) = setup::configured(args) else {
        return Vec::new();
    };
    let peers = match established() {
        Ok(p) => p,
        Err(e) => {
            return vec![Row::warn(
                NAME,
                format!("cannot list the node's sockets: {e}"),
            )];
        }
    };
    list.iter()
        .map(|(host, port)| row(args, host, *port, &peers))
        .collect()
}

/// Every established TCP socket's peer in this network namespace.
fn established() -> Result<Vec<SocketAddr>, crate::kernel::diag::DiagError> {
    let mut diag = SockDiag::open()?;
    let mut out = Vec::new();
    for family in [libc::AF_INET, libc::AF_INET6] {
        let family = u8::try_from(family).unwrap_or_default();
        out.extend(
            diag.dump(family, STATE_ESTABLISHED)?
                .into_iter()
                .map(|d| d.peer),
        );
    }
    Ok(out)
}

fn row(args: &Settings, host: &str, port: u16, peers: &[SocketAddr]) -> Row {
    let set = EndpointSet::new(host, port);
    let addrs = if set.fixed {
        set.current.clone()
    } else {
        match resolve(args, host) {
            Ok(a) => a,
            Err(e) => {
                return Row::warn(
                    NAME,
                    format!("{}: cannot resolve it to compare: {e}", set.name),
                );
            }
        }
    };
    let on_port: Vec<&SocketAddr> = peers.iter().filter(|p| p.port() == port).collect();
    let outside: BTreeSet<String> = on_port
        .iter()
        .filter(|p| !addrs.contains(&p.ip()))
        .map(ToString::to_string)
        .collect();
    let answer: Vec<String> = addrs.iter().map(ToString::to_string).collect();
    let answer = answer.join(", ");
    if outside.is_empty() {
        return Row::pass(
            NAME,
            format!(
                "{}: {} established socket(s) on port {port}, all to its addresses [{answer}]",
                set.name,
                on_port.len()
            ),
        );
    }
    let n = on_port.iter().filter(|p| !addrs.contains(&p.ip())).count();
    Row::warn(
        NAME,
        format!(
            "{}: {n} established socket(s) on port {port} go to addresses its answer [{answer}] does not hold ({}): \
             not the endpoint's connections, judged by stall and silence only, never by DNS \
             (if one is the API server, this node resolves the name differently from lifeline)",
            set.name,
            outside.into_iter().collect::<Vec<_>>().join(", ")
        ),
    )
}

/// The endpoint's addresses as `run` resolves them.
fn resolve(args: &Settings, host: &str) -> anyhow::Result<BTreeSet<IpAddr>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let resolver = Resolver::new(&args.dns_servers, &args.hosts_file)?;
        Ok(resolver.resolve(host).await?.addrs)
    })
}
