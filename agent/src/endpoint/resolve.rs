//! One name in, a sorted address set and its TTL out, or one typed error per way a lookup
//! can fail. The name is looked up as the node's clients look it up: in the hosts file and
//! DNS (hickory-resolver, with resolv.conf's search domains and `ndots`), in the order of
//! nsswitch.conf's `hosts:` line. Every failure is uncertain evidence, so callers keep
//! their last good set and never orphan anything on an error.

use std::{
    collections::BTreeSet,
    net::IpAddr,
    path::{Path, PathBuf},
    time::Duration,
};

use hickory_resolver::{
    ResolveError, ResolveErrorKind, TokioResolver,
    config::{LookupIpStrategy, NameServerConfigGroup, ResolveHosts, ResolverConfig, ResolverOpts},
    name_server::TokioConnectionProvider,
    proto::{ProtoErrorKind, op::ResponseCode},
};

use super::{
    hosts,
    nsswitch::{self, NssSource},
};

/// Why a resolution gave no usable answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DnsError {
    #[error("timeout: no answer from the DNS server")]
    Timeout,
    #[error("SERVFAIL from the DNS server")]
    ServFail,
    #[error("NXDOMAIN: the name does not exist")]
    NxDomain,
    #[error("empty answer: no A or AAAA records")]
    Empty,
    #[error("DNS server unreachable: {0}")]
    Unreachable(String),
    #[error("DNS error: {0}")]
    Other(String),
    /// The hosts file exists but cannot be read: the name may be pinned there.
    #[error(transparent)]
    Hosts(#[from] super::hosts::HostsError),
    /// Not in the hosts file, and nsswitch.conf names no `dns` source.
    #[error("not in the hosts file {0}, and the hosts: line of nsswitch.conf names no dns")]
    NotInHosts(String),
}

impl DnsError {
    fn from_resolve(e: &ResolveError) -> Self {
        let ResolveErrorKind::Proto(p) = e.kind() else {
            return Self::Other(e.to_string());
        };
        match p.kind() {
            ProtoErrorKind::Timeout => Self::Timeout,
            ProtoErrorKind::NoRecordsFound {
                response_code: ResponseCode::NXDomain,
                ..
            } => Self::NxDomain,
            ProtoErrorKind::NoRecordsFound {
                response_code: ResponseCode::ServFail,
                ..
            } => Self::ServFail,
            ProtoErrorKind::NoRecordsFound { .. } => Self::Empty,
            ProtoErrorKind::NoConnections | ProtoErrorKind::Io(_) | ProtoErrorKind::Busy => {
                Self::Unreachable(p.to_string())
            }
            _ => Self::Other(p.to_string()),
        }
    }
}

/// Which source answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ResolvedBy {
    Hosts,
    Dns,
}

impl ResolvedBy {
    #[must_use]
    pub(crate) const fn label(self) -> &'static str {
        match self {
            Self::Hosts => "hosts file",
            Self::Dns => "DNS",
        }
    }
}

/// One good answer: every address the hosts file names, or every A and AAAA address at the
/// end of the CNAME chain; `ttl` is `hosts::HOSTS_REFRESH` for a hosts answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Answer {
    pub addrs: BTreeSet<IpAddr>,
    pub ttl: Duration,
    pub from: ResolvedBy,
}

pub(crate) struct Resolver {
    inner: TokioResolver,
    hosts: PathBuf,
    order: Vec<NssSource>,
}

impl Resolver {
    /// `servers` empty: the system's resolver configuration (/etc/resolv.conf: its servers,
    /// search domains and `ndots`). `hosts`: the hosts file (`--hosts-file`); the order of
    /// it and DNS is nsswitch.conf's, logged once here.
    ///
    /// # Errors
    /// When /etc/resolv.conf cannot be read or parsed.
    pub(crate) fn new(servers: &[std::net::SocketAddr], hosts: &Path) -> anyhow::Result<Self> {
        let order = nsswitch::read(Path::new(nsswitch::NSSWITCH));
        tracing::info!(target: "lifeline::endpoint", hosts_file = %hosts.display(),
            "names are looked up in {}", order.describe(hosts));
        Ok(Self {
            inner: Self::dns(servers)?,
            hosts: hosts.to_owned(),
            order: order.sources,
        })
    }

    fn dns(servers: &[std::net::SocketAddr]) -> anyhow::Result<TokioResolver> {
        let (config, mut opts) = if servers.is_empty() {
            hickory_resolver::system_conf::read_system_conf().map_err(|e| {
                anyhow::anyhow!("cannot read the DNS configuration in /etc/resolv.conf: {e}")
            })?
        } else {
            let mut group = NameServerConfigGroup::new();
            for s in servers {
                group.merge(NameServerConfigGroup::from_ips_clear(
                    &[s.ip()],
                    s.port(),
                    true,
                ));
            }
            (
                ResolverConfig::from_parts(None, vec![], group),
                ResolverOpts::default(),
            )
        };
        // We schedule refreshes from the TTL ourselves; a cache would hide a changed answer
        // (and a round-robin server's other subsets) until its own expiry.
        opts.cache_size = 0;
        opts.ip_strategy = LookupIpStrategy::Ipv4AndIpv6;
        // The hosts file is read by `resolve` itself, on every lookup and from `--hosts-file`:
        // hickory reads /etc/hosts once, at build time.
        opts.use_hosts_file = ResolveHosts::Never;
        opts.timeout = Duration::from_secs(2);
        opts.attempts = 2;
        Ok(
            TokioResolver::builder_with_config(config, TokioConnectionProvider::default())
                .with_options(opts)
                .build(),
        )
    }

    /// `name`'s addresses from the first source, in nsswitch order, that knows it. A hosts
    /// file that cannot be read ends the lookup with an error (the name may be pinned
    /// there); a DNS failure goes on to the next source, as glibc's default actions do.
    ///
    /// # Errors
    /// The hosts file's error, else the last DNS error, else `NotInHosts`.
    pub(crate) async fn resolve(&self, name: &str) -> Result<Answer, DnsError> {
        lookup(&self.order, &self.hosts, name, |n| self.resolve_dns(n)).await
    }

    /// Resolve `name` in DNS (search domains and `ndots` as resolv.conf says, CNAMEs
    /// followed) to its A and AAAA addresses.
    async fn resolve_dns(&self, name: &str) -> Result<Answer, DnsError> {
        let lookup = self
            .inner
            .lookup_ip(name)
            .await
            .map_err(|e| DnsError::from_resolve(&e))?;
        let addrs: BTreeSet<IpAddr> = lookup.iter().collect();
        if addrs.is_empty() {
            return Err(DnsError::Empty);
        }
        let ttl = lookup
            .valid_until()
            .saturating_duration_since(std::time::Instant::now());
        Ok(Answer {
            addrs,
            ttl,
            from: ResolvedBy::Dns,
        })
    }
}

/// `Resolver::resolve` with DNS as `dns`: the order of the sources, on its own.
async fn lookup<'a, F, Fut>(
    order: &[NssSource],
    hosts_file: &Path,
    name: &'a str,
    dns: F,
) -> Result<Answer, DnsError>
where
    F: Fn(&'a str) -> Fut,
    Fut: std::future::Future<Output = Result<Answer, DnsError>>,
{
    let mut last = None;
    for source in order {
        match source {
            NssSource::Files => {
                let addrs = hosts::lookup(&hosts::read(hosts_file)?, name);
                if !addrs.is_empty() {
                    return Ok(Answer {
                        addrs,
                        ttl: hosts::HOSTS_REFRESH,
                        from: ResolvedBy::Hosts,
                    });
                }
            }
            NssSource::Dns => match dns(name).await {
                Ok(a) => return Ok(a),
                Err(e) => last = Some(e),
            },
        }
    }
    Err(last.unwrap_or_else(|| DnsError::NotInHosts(hosts_file.display().to_string())))
}

#[cfg(test)]
#[path = "resolve_tests.rs"]
mod tests;
