//! Resolving the server's name (fresh every time) and dialing its addresses in turn.

use std::net::SocketAddr;
use std::time::Duration;

use hickory_resolver::Resolver;
use hickory_resolver::config::{
    LookupIpStrategy, NameServerConfigGroup, ResolverConfig, ResolverOpts,
};
use hickory_resolver::name_server::TokioConnectionProvider;
use tokio::net::TcpStream;

use crate::Args;
use crate::report::{Report, emit};

/// A TCP connection to one of the server's addresses.
pub(crate) struct Dialed {
    pub stream: TcpStream,
    pub peer: SocketAddr,
    pub port: u16,
}

/// Resolves and dials until a connection is made, 500 ms between rounds (a round: one
/// resolution, then each address once). Bounded by the process lifetime.
pub(crate) async fn dial_until_connected(args: &Args) -> Dialed {
    loop {
        if let Some(d) = dial_once(args).await {
            emit(
                &Report::new("connected")
                    .port(d.port)
                    .text("peer", &d.peer.to_string()),
            );
            return d;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn dial_once(args: &Args) -> Option<Dialed> {
    let mut addrs = resolve(args).await?;
    if args.shuffle {
        shuffle(&mut addrs);
    }
    for ip in addrs {
        let peer = SocketAddr::new(ip, args.port);
        match tokio::time::timeout(args.connect_timeout, TcpStream::connect(peer)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                crate::tuning::apply_user_timeout(&stream, args.user_timeout);
                crate::tuning::apply_go_keepalive(&stream, args.go_keepalive);
                let port = stream.local_addr().map_or(0, |a| a.port());
                return Some(Dialed { stream, peer, port });
            }
            Ok(Err(e)) => emit(&Report::io("connect", &e, 0).text("peer", &peer.to_string())),
            Err(_) => emit(
                &Report::new("error")
                    .text("op", "connect")
                    .text("peer", &peer.to_string())
                    .text("error", "connect timed out"),
            ),
        }
    }
    None
}

/// A fresh resolver per resolution: client-go asks the resolver on every dial, and a cache
/// here would hide exactly the DNS changes the lab makes. Addresses are tried in sorted
/// order (IPv4 first, then lowest), so a test knows where a client with several lands.
async fn resolve(args: &Args) -> Option<Vec<std::net::IpAddr>> {
    if let Some(addrs) = args
        .hosts_file
        .as_deref()
        .and_then(|f| from_hosts(f, &args.server))
    {
        let list: Vec<String> = addrs.iter().map(ToString::to_string).collect();
        emit(
            &Report::new("resolved")
                .text("addrs", &list.join(","))
                .text("from", "hosts"),
        );
        return Some(addrs);
    }
    let servers = NameServerConfigGroup::from_ips_clear(&[args.dns_server], 53, true);
    let config = ResolverConfig::from_parts(None, vec![], servers);
    let mut opts = ResolverOpts::default();
    opts.cache_size = 0;
    opts.timeout = Duration::from_secs(1);
    opts.attempts = 2;
    opts.ip_strategy = LookupIpStrategy::Ipv4AndIpv6;
    let resolver = Resolver::builder_with_config(config, TokioConnectionProvider::default())
        .with_options(opts)
        .build();
    match resolver.lookup_ip(format!("{}.", args.server)).await {
        Ok(found) => {
            let mut addrs: Vec<_> = found.iter().collect();
            addrs.sort_unstable();
            addrs.dedup();
            let list: Vec<String> = addrs.iter().map(ToString::to_string).collect();
            emit(&Report::new("resolved").text("addrs", &list.join(",")));
            Some(addrs).filter(|a| !a.is_empty())
        }
        Err(e) => {
            emit(
                &Report::new("error")
                    .text("op", "resolve")
                    .text("error", &e.to_string()),
            );
            None
        }
    }
}

/// `name`'s addresses in the hosts file `path`, sorted; None when it lists none.
fn from_hosts(path: &std::path::Path, name: &str) -> Option<Vec<std::net::IpAddr>> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut addrs: Vec<std::net::IpAddr> = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or_default())
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let ip = f.next()?.parse().ok()?;
            f.any(|n| n.eq_ignore_ascii_case(name)).then_some(ip)
        })
        .collect();
    addrs.sort_unstable();
    addrs.dedup();
    Some(addrs).filter(|a| !a.is_empty())
}

/// Fisher-Yates with the standard library's randomly keyed hasher as the source: a fresh
/// order per dial, with no random-number crate for one shuffle.
fn shuffle<T>(items: &mut [T]) {
    use std::hash::{BuildHasher, Hasher};
    let state = std::collections::hash_map::RandomState::new();
    for i in (1..items.len()).rev() {
        let mut h = state.build_hasher();
        h.write_usize(i);
        let j = usize::try_from(h.finish() % (i as u64 + 1)).unwrap_or(0);
        items.swap(i, j);
    }
}
