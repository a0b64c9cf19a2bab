//! A node-local API proxy, the real one from Debian's packages (`nginx-light` with
//! `libnginx-mod-stream`, `haproxy`), run in the foreground in a lab namespace with its
//! configuration in a temporary directory: kubelet's kubeconfig says `https://127.0.0.1:6443`
//! and the proxy carries the connection on to the API servers (`proxy_conf.rs`).

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context as _, Result, ensure};

use crate::cgroup::Cgroup;
use crate::netns::NetNs;
use crate::proc::Proc;
use crate::ss::{SsSocket, established};
use crate::util::{TempDir, wait_until};

pub use crate::proxy_conf::{PROXY_LISTEN, ProxyKind};

/// A running proxy. Drop: SIGTERM, a bounded wait, then SIGKILL (its cgroup's teardown kills
/// any worker left).
pub struct NodeProxy {
    pub kind: ProxyKind,
    pub proc: Proc,
    /// The addresses of its upstreams (with `resolving`: what the name answers now, kept by
    /// the test that changes the answer).
    pub upstreams: Vec<SocketAddr>,
    /// `(HOST:PORT, DNS server)`: the configuration names the servers so, re-resolved at run
    /// time (haproxy only); None: it lists `upstreams`.
    pub resolving: Option<(String, SocketAddr)>,
    /// Where it listens: `PROXY_LISTEN`, and what a reload adds (`reload_listening`).
    pub listens: Vec<SocketAddr>,
    /// Dropped after the process: its teardown kills any worker left.
    pub cgroup: Cgroup,
    dir: TempDir,
}

impl NodeProxy {
    /// Writes the configuration for `upstreams`, has the proxy check it, starts it in `ns`
    /// and waits until it listens on `PROXY_LISTEN`.
    ///
    /// # Errors
    /// When the package is missing, the configuration is refused or it does not listen
    /// within 10 s.
    pub fn start(ns: &NetNs, kind: ProxyKind, upstreams: &[SocketAddr]) -> Result<Self> {
        Self::start_with(ns, kind, upstreams, None)
    }

    /// `start` with `resolving` (see the field; haproxy only): `upstreams` are then the
    /// addresses the name answers.
    ///
    /// # Errors
    /// As `start`; nginx with `resolving`.
    pub fn start_with(
        ns: &NetNs,
        kind: ProxyKind,
        upstreams: &[SocketAddr],
        resolving: Option<(String, SocketAddr)>,
    ) -> Result<Self> {
        ensure!(
            resolving.is_none() || kind == ProxyKind::Haproxy,
            "only haproxy re-resolves its servers' names at run time in this lab"
        );
        let dir = TempDir::new()?;
        let conf = crate::proxy_conf::path(&dir, kind);
        crate::proxy_conf::write(&dir, kind, (&[PROXY_LISTEN], upstreams), resolving.as_ref())?;
        let check: Vec<&str> = match kind {
            ProxyKind::Nginx => vec!["-e", "stderr", "-t", "-c", &conf],
            ProxyKind::Haproxy => vec!["-c", "-f", &conf],
        };
        ns.exec(kind.name(), &check)
            .with_context(|| format!("{} refused its configuration", kind.name()))?;
        // A node component's cgroup, as the agent requires of the proxy: kubespray's nginx
        // is a static pod, the kubeadm guide's haproxy here a systemd unit.
        let cgroup = match kind {
            ProxyKind::Nginx => Cgroup::static_pod()?,
            ProxyKind::Haproxy => Cgroup::unit("haproxy")?,
        };
        let proc = Self::spawn(ns, kind, &cgroup, &conf)?;
        let mut p = Self {
            kind,
            proc,
            upstreams: upstreams.to_vec(),
            resolving,
            listens: vec![PROXY_LISTEN],
            cgroup,
            dir,
        };
        p.wait_listening(ns)?;
        Ok(p)
    }

    fn spawn(ns: &NetNs, kind: ProxyKind, cgroup: &Cgroup, conf: &str) -> Result<Proc> {
        let run: Vec<&str> = match kind {
            ProxyKind::Nginx => vec!["-e", "stderr", "-c", conf],
            // -W: master-worker, so SIGUSR2 reloads; -db: stay in the foreground.
            ProxyKind::Haproxy => vec!["-W", "-db", "-f", conf],
        };
        Proc::spawn(
            kind.name(),
            cgroup.command_in_netns(ns.name(), kind.name(), &run),
        )
    }

    /// Stops the proxy (SIGTERM, then SIGKILL after 5 s) and waits until it is gone;
    /// returns its pid, now free.
    pub fn stop(&mut self) -> u32 {
        let pid = self.proc.pid();
        self.proc.signal(libc::SIGTERM);
        if self.proc.wait_timeout(Duration::from_secs(5)).is_none() {
            self.proc.kill();
        }
        pid
    }

    /// Starts the proxy again in its cgroup with its configuration (a unit's or a static
    /// pod's restart), once `stop`ped; waits until it listens.
    ///
    /// # Errors
    /// As `start`.
    pub fn start_again(&mut self, ns: &NetNs) -> Result<()> {
        let conf = crate::proxy_conf::path(&self.dir, self.kind);
        self.proc = Self::spawn(ns, self.kind, &self.cgroup, &conf)?;
        self.wait_listening(ns)
    }

    /// The configuration's path.
    #[must_use]
    pub fn conf(&self) -> String {
        crate::proxy_conf::path(&self.dir, self.kind)
    }

    fn wait_listening(&mut self, ns: &NetNs) -> Result<()> {
        let (kind, p) = (self.kind, self);
        wait_until(
            &format!("{} to listen on {PROXY_LISTEN}", kind.name()),
            Duration::from_secs(10),
            Duration::from_millis(50),
            || {
                ensure!(
                    p.proc.try_status().is_none(),
                    "{} exited: {}",
                    kind.name(),
                    p.proc.stderr_text()
                );
                let out = ns.exec("ss", &["-Hltn", "sport", "=", ":6443"])?;
                Ok(out.contains(&PROXY_LISTEN.to_string()).then_some(()))
            },
        )
    }

    /// Rewrites the upstream list and reloads as an operator would: nginx SIGHUP (new
    /// workers; the old ones keep their connections up to `worker_shutdown_timeout`),
    /// haproxy's master SIGUSR2 (a new worker; the old one keeps its connections).
    ///
    /// # Errors
    /// When the configuration cannot be written.
    pub fn reload(&mut self, upstreams: &[SocketAddr]) -> Result<()> {
        let listens = self.listens.clone();
        self.reload_listening(&listens, upstreams)
    }

    /// `reload`, listening on `listens` from now on (an operator moving the proxy's port).
    ///
    /// # Errors
    /// When the configuration cannot be written.
    pub fn reload_listening(
        &mut self,
        listens: &[SocketAddr],
        upstreams: &[SocketAddr],
    ) -> Result<()> {
        upstreams.clone_into(&mut self.upstreams);
        listens.clone_into(&mut self.listens);
        crate::proxy_conf::write(
            &self.dir,
            self.kind,
            (listens, upstreams),
            self.resolving.as_ref(),
        )?;
        self.proc.signal(match self.kind {
            ProxyKind::Nginx => libc::SIGHUP,
            ProxyKind::Haproxy => libc::SIGUSR2,
        });
        Ok(())
    }

    /// The proxy's established connections to its upstreams in `ns` (its node namespace),
    /// those present in two looks 300 ms apart: haproxy's health-check connections come and
    /// go at once.
    ///
    /// # Errors
    /// When ss fails.
    pub fn upstream_flows(&self, ns: &NetNs) -> Result<Vec<SsSocket>> {
        let look = || -> Result<Vec<SsSocket>> {
            Ok(established(ns)?
                .into_iter()
                .filter(|s| self.upstreams.contains(&s.peer))
                .collect())
        };
        let first = look()?;
        std::thread::sleep(Duration::from_millis(300));
        Ok(look()?
            .into_iter()
            .filter(|s| first.iter().any(|f| f.local == s.local))
            .collect())
    }
}

impl Drop for NodeProxy {
    fn drop(&mut self) {
        self.proc.signal(libc::SIGTERM);
        if self.proc.wait_timeout(Duration::from_secs(5)).is_none() {
            self.proc.kill();
        }
    }
}
