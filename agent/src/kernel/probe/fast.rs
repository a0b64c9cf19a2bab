//! Fast keepalive probes, the agent's kernel half (`lifeline_common::poke`): the tc egress
//! program on the devices the watched peers are routed through, the TCP iterator's passes
//! that poke, and the `POKE` map's entries.

use std::{
    collections::{HashMap, HashSet},
    fmt,
    net::IpAddr,
    time::{Duration, Instant},
};

use aya::{
    Ebpf,
    maps::{HashMap as BpfHashMap, MapData},
    programs::{SchedClassifier, TcAttachType, tc},
    util::KernelVersion,
};
use lifeline_common::{hooks::Hook, maps, poke::Poke};

use super::{Probe, attach::program, keepalive_fn};
use crate::kernel::{errors::explain_program, routes};

/// Routes are read again this often even when no new peer appeared (a route or device that
/// changed under a known peer); a new peer is looked up at once.
const RESCAN: Duration = Duration::from_secs(30);

/// The fast probes in force: the interval, and the devices the program is on.
pub struct FastProbes {
    pub interval: Duration,
    /// Device name → its index when attached (a re-created device gets a new index).
    devices: HashMap<String, u32>,
    /// Devices that could not be attached, with why (warned once each).
    refused: HashMap<String, String>,
    /// Peers looked up since the last full scan.
    seen: HashSet<IpAddr>,
    last_scan: Option<Instant>,
}

/// Why there are no fast probes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FastUnavailable {
    /// `--fast-probes off`.
    Off,
    /// The kernel lacks a part; the text says which.
    Kernel(String),
}

impl fmt::Display for FastUnavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Off => f.write_str("off (--fast-probes off)"),
            Self::Kernel(why) => f.write_str(why),
        }
    }
}

/// Load the tc program; `pokes`: the TCP iterator and the keepalive news are both there.
pub(super) fn load(
    ebpf: &mut Ebpf,
    interval: Option<Duration>,
    pokes: bool,
) -> Result<FastProbes, FastUnavailable> {
    let Some(interval) = interval else {
        return Err(FastUnavailable::Off);
    };
    let hook = Hook::ProbeByte;
    let since = hook.since();
    let result = if pokes {
        program::<SchedClassifier>(ebpf, hook)
            .and_then(|p| p.load().map_err(|e| explain_program(hook, &e)))
            .map_err(|e| format!("{e:#}"))
    } else {
        Err("the TCP iterator or the keepalive news is unavailable".to_owned())
    };
    match result {
        Ok(()) => Ok(FastProbes {
            interval,
            devices: HashMap::new(),
            refused: HashMap::new(),
            seen: HashSet::new(),
            last_scan: None,
        }),
        Err(why) => {
            tracing::warn!(error = %why, "fast keepalive probes unavailable (need Linux {}.{}): an idle socket's silent verdict takes IDLE + N x INTERVAL", since.0, since.1);
            Err(FastUnavailable::Kernel(why))
        }
    }
}

impl Probe {
    /// Attach the tc program to the devices `peers` are routed through: at once for a peer
    /// not seen before (its socket's first unanswered probe must already carry its octet),
    /// and every `RESCAN` for all. Ethernet devices only (the program parses from a 14-byte
    /// header).
    pub fn fast_devices(&mut self, peers: impl Iterator<Item = IpAddr>) {
        let Ok(fast) = self.fast.as_mut() else {
            return;
        };
        let peers: Vec<IpAddr> = peers.collect();
        let stale = fast.last_scan.is_none_or(|t| t.elapsed() >= RESCAN);
        if stale {
            fast.seen.clear();
        } else if peers.iter().all(|p| fast.seen.contains(p)) {
            return;
        }
        if stale {
            fast.last_scan = Some(Instant::now());
        }
        fast.seen.extend(peers.iter().copied());
        let table = routes::read();
        let mut wanted: Vec<String> = peers
            .into_iter()
            .filter_map(|p| routes::device_for(&table, p).map(str::to_owned))
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        for dev in wanted {
            let Some(index) = ethernet_index(&dev) else {
                continue;
            };
            if fast.devices.get(&dev) == Some(&index) || fast.refused.contains_key(&dev) {
                continue;
            }
            match attach(&mut self.ebpf, &dev) {
                Ok(()) => {
                    tracing::info!(device = %dev, "fast keepalive probes on this device");
                    fast.devices.insert(dev, index);
                }
                Err(why) => {
                    tracing::warn!(device = %dev, error = %why, "fast keepalive probes cannot use this device: its sockets' probes stay at the kernel's cadence");
                    fast.refused.insert(dev, why);
                }
            }
        }
    }

    /// The devices the tc program is on.
    #[must_use]
    pub fn fast_on(&self) -> Vec<String> {
        self.fast
            .as_ref()
            .map(|f| f.devices.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The devices the tc program could not attach to, with why.
    #[must_use]
    pub fn fast_refused(&self) -> Vec<(String, String)> {
        self.fast
            .as_ref()
            .map(|f| {
                f.refused
                    .iter()
                    .map(|(d, w)| (d.clone(), w.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// One pass of the TCP iterator: it pokes every socket in a fast phase that is due.
    ///
    /// # Errors
    /// When the iterator cannot run.
    pub fn fast_pass(&mut self) -> anyhow::Result<()> {
        keepalive_fn::run_iterator(&mut self.ebpf)
    }

    /// Whether `cookie`'s fast phase is still open (the kernel closes it).
    #[must_use]
    pub fn fast_open(&self, cookie: u64) -> bool {
        self.ebpf
            .map(maps::POKE)
            .and_then(|m| BpfHashMap::<&MapData, u64, Poke>::try_from(m).ok())
            .is_some_and(|m| m.get(&cookie, 0).is_ok())
    }

    /// Close `cookie`'s fast phase (its time bound passed, or the socket is gone).
    pub fn fast_close(&mut self, cookie: u64) {
        if let Some(mut m) = self
            .ebpf
            .map_mut(maps::POKE)
            .and_then(|m| BpfHashMap::<&mut MapData, u64, Poke>::try_from(m).ok())
        {
            let _ = m.remove(&cookie);
        }
    }
}

fn attach(ebpf: &mut Ebpf, dev: &str) -> Result<(), String> {
    // tcx (6.6) needs no qdisc; netlink's filters hang off clsact, which may already be there.
    let tcx = KernelVersion::current().is_ok_and(|v| v >= KernelVersion::new(6, 6, 0));
    if !tcx {
        match tc::qdisc_add_clsact(dev) {
            Ok(()) | Err(tc::TcError::AlreadyAttached) => {}
            Err(e) => return Err(format!("adding the clsact qdisc: {e}")),
        }
    }
    let hook = Hook::ProbeByte;
    let prog: &mut SchedClassifier = program(ebpf, hook).map_err(|e| format!("{e:#}"))?;
    prog.attach(dev, TcAttachType::Egress)
        .map(drop)
        .map_err(|e| format!("{:#}", explain_program(hook, &e)))
}

/// The device's index when it is Ethernet (`ARPHRD_ETHER`), asked of the agent's own
/// network namespace with `SIOCGIFHWADDR`/`SIOCGIFINDEX` (sysfs may be another namespace's).
fn ethernet_index(dev: &str) -> Option<u32> {
    use std::os::fd::AsRawFd as _;
    let sock = crate::kernel::sockopts::tcp_socket().ok()?;
    // SAFETY: a plain C struct; all zeroes is valid.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    let name = dev.as_bytes();
    if name.len() >= req.ifr_name.len() {
        return None;
    }
    for (d, s) in req.ifr_name.iter_mut().zip(name) {
        *d = libc::c_char::from_ne_bytes([*s]);
    }
    // SAFETY: `req` is a valid ifreq with a NUL-terminated name; the kernel fills the union.
    // `as _`: the request's type differs between glibc and musl.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFHWADDR as _, &raw mut req) } != 0 {
        return None;
    }
    // SAFETY: SIOCGIFHWADDR filled `ifru_hwaddr`.
    if unsafe { req.ifr_ifru.ifru_hwaddr.sa_family } != libc::ARPHRD_ETHER {
        return None;
    }
    // SAFETY: as above, for the index.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFINDEX as _, &raw mut req) } != 0 {
        return None;
    }
    // SAFETY: SIOCGIFINDEX filled `ifru_ifindex`.
    u32::try_from(unsafe { req.ifr_ifru.ifru_ifindex }).ok()
}
