//! A small wrapper around hickory-resolver: one name in, a sorted address set and its TTL
//! out, or one typed error per way DNS can fail. Every failure is uncertain evidence, so
//! callers keep their last good set and never orphan anything on an error.

use std::{collections::BTreeSet, net::IpAddr, time::Duration};

use hickory_resolver::{
    ResolveError, ResolveErrorKind, TokioResolver,
    config::{LookupIpStrategy, NameServerConfigGroup, ResolveHosts, ResolverConfig, ResolverOpts},
    name_server::TokioConnectionProvider,
    proto::{ProtoErrorKind, op::ResponseCode},
};

/// Why a resolution gave no usable answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DnsError {
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

/// One good answer: every A and AAAA address at the end of the CNAME chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub addrs: BTreeSet<IpAddr>,
    pub ttl: Duration,
}

pub struct Resolver {
    inner: TokioResolver,
}

impl Resolver {
    /// `servers` empty: the system's resolver configuration (/etc/resolv.conf).
    ///
    /// # Errors
    /// When /etc/resolv.conf cannot be read or parsed.
    pub fn new(servers: &[std::net::SocketAddr]) -> anyhow::Result<Self> {
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
        opts.use_hosts_file = ResolveHosts::Never;
        opts.timeout = Duration::from_secs(2);
        opts.attempts = 2;
        let inner = TokioResolver::builder_with_config(config, TokioConnectionProvider::default())
            .with_options(opts)
            .build();
        Ok(Self { inner })
    }

    /// Resolve `name` (following CNAMEs) to its A and AAAA addresses.
    ///
    /// # Errors
    /// One `DnsError` per way the lookup failed; an answer without addresses is `Empty`.
    pub async fn resolve(&self, name: &str) -> Result<Answer, DnsError> {
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
        Ok(Answer { addrs, ttl })
    }
}
