//! A real dnsmasq in the lab's DNS host: it serves the API endpoint's name (A and AAAA,
//! TTL 5 s) from a hosts file the test rewrites. `set` rewrites the file and sends SIGHUP,
//! `stop`/`start` make a DNS outage, `rotate` (`dns_rotate.rs`) a round-robin of subsets.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, ensure};

use crate::infra::api_addrs::{API_NAME, DNS_V4, DNS_V6};
use crate::infra::dnsquery::{Answer, lookup};
use crate::infra::netns::NetNs;
use crate::infra::proc::Proc;
use crate::infra::util::{TempDir, wait_until};

/// The TTL of every answer (`--local-ttl`): short, so the agent re-resolves every 5 s.
pub const TTL_S: u32 = 5;

/// A dnsmasq process and its hosts file. Dropping it kills dnsmasq and removes the file.
pub struct Dnsmasq {
    proc: Option<Proc>,
    ns: String,
    pub(crate) hosts: PathBuf,
    _dir: TempDir,
}

impl Dnsmasq {
    /// Starts dnsmasq in `host` (which has `DNS_V4`/`DNS_V6`) answering `addrs` for
    /// `API_NAME`, and waits until it does.
    ///
    /// # Errors
    /// When dnsmasq cannot start or does not answer within 10 s.
    pub fn new(host: &NetNs, addrs: &[IpAddr]) -> Result<Self> {
        let dir = TempDir::new()?;
        let hosts = dir.path().join("hosts");
        write_hosts(&hosts, addrs)?;
        let mut dns = Self {
            proc: None,
            ns: host.name().to_owned(),
            hosts,
            _dir: dir,
        };
        dns.start()?;
        Ok(dns)
    }

    /// (Re)starts dnsmasq with the current hosts file; waits until it answers.
    ///
    /// # Errors
    /// When it is already running, cannot start, or does not answer within 10 s.
    pub fn start(&mut self) -> Result<()> {
        ensure!(self.proc.is_none(), "dnsmasq is already running");
        let hosts = format!("--addn-hosts={}", self.hosts.display());
        let (v4, v6) = (
            format!("--listen-address={DNS_V4}"),
            format!("--listen-address={DNS_V6}"),
        );
        let ttl = format!("--local-ttl={TTL_S}");
        // --no-daemon: foreground, no pid file, no change of user (root can read the file).
        // --conf-file=/dev/null: nothing from the machine's own dnsmasq configuration.
        // --bind-interfaces: only our two addresses, so it also binds the IPv6 one itself.
        let args = [
            "--no-daemon",
            "--conf-file=/dev/null",
            "--no-resolv",
            "--no-hosts",
            &hosts,
            &ttl,
            &v4,
            &v6,
            "--bind-interfaces",
            "--log-queries",
            "--log-facility=-",
        ];
        let proc = Proc::spawn(
            "dnsmasq",
            crate::infra::cmd::in_netns(&self.ns, "dnsmasq", &args),
        )?;
        self.proc = Some(proc);
        let want = read_hosts(&self.hosts)?;
        self.wait_answer(&want, Duration::from_secs(10))?;
        Ok(())
    }

    /// Stops dnsmasq (SIGKILL): queries now fail (ICMP port unreachable) until `start`.
    pub fn stop(&mut self) {
        if let Some(mut p) = self.proc.take() {
            p.kill();
        }
    }

    /// Answers `addrs` from now on: rewrites the hosts file, SIGHUP, and waits until
    /// dnsmasq really answers the new set (an empty set: the name has no address).
    ///
    /// # Errors
    /// When dnsmasq is stopped, or does not answer the new set within 5 s.
    pub fn set(&self, addrs: &[IpAddr]) -> Result<()> {
        write_hosts(&self.hosts, addrs)?;
        self.hup()?;
        let mut want = addrs.to_vec();
        want.sort_unstable();
        self.wait_answer(&want, Duration::from_secs(5))
    }

    /// SIGHUP: dnsmasq clears its cache and re-reads the hosts file.
    pub(crate) fn hup(&self) -> Result<()> {
        let p = self.proc.as_ref().context("dnsmasq is stopped")?;
        p.signal(libc::SIGHUP);
        Ok(())
    }

    /// What dnsmasq answers now for `API_NAME`, asked from its own namespace.
    ///
    /// # Errors
    /// When there is no answer.
    pub fn query(&self) -> Result<Answer> {
        lookup(&self.ns, IpAddr::V4(DNS_V4), API_NAME)
    }

    fn wait_answer(&self, want: &[IpAddr], timeout: Duration) -> Result<()> {
        wait_until(
            "dnsmasq to answer",
            timeout,
            Duration::from_millis(100),
            || Ok(self.query().ok().filter(|a| a.addrs == want).map(|_| ())),
        )
        .with_context(|| format!("want {want:?}, last answer {:?}", self.query()))
        .with_context(|| self.log())
    }

    /// dnsmasq's own log (queries and replies), for failure messages.
    #[must_use]
    pub fn log(&self) -> String {
        self.proc
            .as_ref()
            .map_or_else(String::new, Proc::stderr_text)
    }

    pub(crate) fn pid(&self) -> Option<u32> {
        self.proc.as_ref().map(Proc::pid)
    }
}

/// Writes the hosts file atomically (write, then rename), so a SIGHUP never reads half of it.
pub(crate) fn write_hosts(path: &std::path::Path, addrs: &[IpAddr]) -> Result<()> {
    let lines: Vec<String> = addrs.iter().map(|a| format!("{a} {API_NAME}")).collect();
    let text = lines.join("\n") + "\n";
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, text).with_context(|| format!("write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("rename to {}", path.display()))
}

fn read_hosts(path: &std::path::Path) -> Result<Vec<IpAddr>> {
    let text = std::fs::read_to_string(path)?;
    let mut addrs: Vec<IpAddr> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    addrs.sort_unstable();
    Ok(addrs)
}
