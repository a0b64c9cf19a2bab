//! Fast keepalive probes, the agent's kernel half (`lifeline_common::poke`): the tc egress
//! program on the devices the watched peers are routed through (`attach.rs`: where in each
//! device's chain; `reach.rs`: whether its octets really go out; `stale.rs`: what a killed
//! agent left), the TCP iterator's passes that poke, and the `POKE` map's entries.

mod attach;
mod devices;
mod hasten;
mod measure;
mod place;
mod reach;
mod stale;
mod status;

use std::{
    collections::{HashMap, HashSet},
    fmt,
    net::IpAddr,
    time::{Duration, Instant},
};

use aya::{
    Ebpf,
    maps::{HashMap as BpfHashMap, MapData},
    programs::SchedClassifier,
};
use lifeline_common::{hooks::Hook, maps, poke::Poke};
pub(crate) use reach::Reach;
pub(crate) use status::{FastState, FastStatus};

use super::{Probe, attach::program, keepalive_fn};
use crate::kernel::{errors::explain_program, routes};

/// Routes are read again this often even when no new peer appeared (a route or device that
/// changed under a known peer); a new peer is looked up at once.
const RESCAN: Duration = Duration::from_secs(30);

/// The fast probes in force: the interval, and the devices the program is on.
pub(crate) struct FastProbes {
    pub interval: Duration,
    /// Unanswered probes from which a phase stops poking (`--silent-probes` + 2, as the
    /// kernel side's `POKE_LIMIT`).
    poke_limit: u32,
    /// Phases opened by the agent (`hasten.rs`).
    hastened: u64,
    /// Device name → the program there (a re-created device gets a new index).
    attached: HashMap<String, attach::Attachment>,
    /// Devices that could not be attached, with why (warned once each).
    refused: HashMap<String, String>,
    /// Devices whose clsact qdisc held nothing but a killed agent's filters (`stale.rs`).
    adopt: HashSet<String>,
    /// Peers looked up since the last full scan.
    seen: HashSet<IpAddr>,
    last_scan: Option<Instant>,
    last_measure: Option<Instant>,
}

/// Why there are no fast probes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FastUnavailable {
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
    silent_probes: u8,
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
            poke_limit: lifeline_common::poke::limit(silent_probes),
            hastened: 0,
            attached: HashMap::new(),
            refused: HashMap::new(),
            adopt: HashSet::new(),
            seen: HashSet::new(),
            last_scan: None,
            last_measure: None,
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
    /// and every `RESCAN` for all; then measure whether its octets go out (`reach.rs`).
    /// Ethernet devices only (the program parses from a 14-byte header).
    pub(crate) fn fast_devices(&mut self, peers: impl Iterator<Item = IpAddr>) {
        let Ok(fast) = self.fast.as_mut() else {
            return;
        };
        let peers: Vec<IpAddr> = peers.collect();
        let stale = fast.last_scan.is_none_or(|t| t.elapsed() >= RESCAN);
        if stale || !peers.iter().all(|p| fast.seen.contains(p)) {
            if stale {
                fast.seen.clear();
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
                fast.attach(&mut self.ebpf, &dev);
            }
        }
        if fast
            .last_measure
            .is_none_or(|t| t.elapsed() >= reach::EVERY)
        {
            self.fast_measure();
        }
    }

    /// The fast probes' state for status, check and the metrics.
    #[must_use]
    pub(crate) fn fast_status(&self) -> FastStatus {
        let st = match &self.fast {
            Err(FastUnavailable::Off) => FastStatus::default(),
            Err(FastUnavailable::Kernel(why)) => FastStatus {
                state: FastState::Unavailable,
                why: Some(why.clone()),
                ..FastStatus::default()
            },
            Ok(f) => f.status(),
        };
        st.with_summary()
    }

    /// Detach the tc program from every device (and remove a clsact qdisc lifeline added).
    pub(crate) fn fast_detach_all(&mut self) {
        if let Ok(f) = self.fast.as_mut() {
            f.attached.clear();
        }
    }

    /// One pass of the TCP iterator: it pokes every socket in a fast phase that is due.
    ///
    /// # Errors
    /// When the iterator cannot run.
    pub(crate) fn fast_pass(&mut self) -> anyhow::Result<()> {
        keepalive_fn::run_iterator(&mut self.ebpf)
    }

    /// Whether `cookie`'s fast phase is still open (the kernel closes it).
    #[must_use]
    pub(crate) fn fast_open(&self, cookie: crate::judge::Cookie) -> bool {
        self.ebpf
            .map(maps::POKE)
            .and_then(|m| BpfHashMap::<&MapData, u64, Poke>::try_from(m).ok())
            .is_some_and(|m| m.get(&cookie.0, 0).is_ok())
    }

    /// Close `cookie`'s fast phase (its time bound passed, or the socket is gone).
    pub(crate) fn fast_close(&mut self, cookie: crate::judge::Cookie) {
        if let Some(mut m) = self
            .ebpf
            .map_mut(maps::POKE)
            .and_then(|m| BpfHashMap::<&mut MapData, u64, Poke>::try_from(m).ok())
        {
            let _ = m.remove(&cookie.0);
        }
    }
}
