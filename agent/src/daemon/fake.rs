//! A kernel for the sweep tests, without root: sockets whose peer answers or has gone
//! silent since a moment, on a clock the test moves. The records and `tcp_info` it hands
//! out follow from those moments the way the kernel's do (retransmission timeouts from
//! 200 ms, doubling), so the judge's rules decide on what a real stall looks like; kills
//! are recorded, not carried out on anything.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::Duration,
};

use lifeline_common::news::News;

use crate::{
    judge::{Cookie, Mono, Record},
    kernel::{clock::Clock, diag::DiagSock},
};

/// One socket: its record as the probe wrote it at ESTABLISHED (or adoption), and the
/// moments that decide what it looks like now.
pub(super) struct Sock {
    pub rec: Record,
    /// The last ACK of new data from the peer.
    pub acked: Mono,
    /// The peer stopped answering at this moment (a segment was in flight).
    pub silent_since: Option<Mono>,
    /// Whether the probe's callbacks are armed (else only `sock_diag` tells: polled).
    pub armed: bool,
    /// The RTOs of the current episode the probe has sent TROUBLE news for (one item at
    /// its start and one per RTO, `agent-ebpf/src/sockops.rs` `on_trouble`).
    pub(super) told: u32,
    /// Keepalive probes unanswered (`icsk_probes_out`; any ACK zeroes it).
    pub probes_out: u8,
    /// The record as the last callback of an episode that ended left it (no callback runs
    /// for the ACK that ends one: `tcp_info` tells).
    ended: Option<Record>,
}

impl Sock {
    #[must_use]
    pub(super) fn new(rec: Record, armed: bool) -> Self {
        Self {
            acked: rec.established,
            rec,
            silent_since: None,
            armed,
            told: 0,
            probes_out: 0,
            ended: None,
        }
    }

    /// The peer stops answering at `now` (a segment in flight), or answers again.
    pub(super) fn silent(&mut self, silent: bool, now: Mono) {
        if silent {
            self.silent_since = Some(now);
            self.told = 0;
            self.ended = None;
        } else {
            self.ended = Some(self.record(now));
            self.silent_since = None;
            self.acked = now;
        }
    }

    /// Retransmission timeouts since the peer went silent: the n-th fires at
    /// 200 ms * (2^n - 1), as a fresh socket's backed-off timer does.
    fn rtos(&self, now: Mono) -> u8 {
        let Some(since) = self.silent_since else {
            return 0;
        };
        let quiet = now.saturating_duration_since(since);
        let mut n = 0u8;
        while n < 15 && Duration::from_millis(200) * ((1u32 << (n + 1)) - 1) <= quiet {
            n += 1;
        }
        n
    }

    /// The record as the probe's callbacks leave it at `now` (an armed socket's RTOs
    /// open a trouble episode; no callback runs per ACK, so a return leaves it as it was).
    pub(super) fn record(&self, now: Mono) -> Record {
        let rtos = u32::from(self.rtos(now));
        match self.silent_since {
            Some(since) if self.armed && rtos > 0 => Record {
                trouble: Some(since + Duration::from_millis(200)),
                rto_count: rtos,
                retrans_count: rtos,
                packets_out: 1,
                unacked_bytes: 100,
                last_ack: self.acked,
                ..self.rec
            },
            _ => self.ended.unwrap_or(self.rec),
        }
    }

    pub(super) fn diag(&self, cookie: Cookie, now: Mono) -> DiagSock {
        let ms = |t: Mono| u32::try_from(now.ms_since(t)).unwrap_or(u32::MAX);
        let silent = self.silent_since.is_some();
        DiagSock {
            local: self.rec.local,
            peer: self.rec.peer,
            state: 1,
            cookie: cookie.0,
            inode: 1,
            uid: 0,
            send_q: if silent { 100 } else { 0 },
            cgroup_id: None,
            info: Some(crate::kernel::diag::TcpInfo {
                state: 1,
                retransmits: self.rtos(now),
                unacked: u32::from(silent),
                rto_us: 200_000,
                probes: self.probes_out,
                last_ack_recv_ms: ms(self.acked),
                last_data_recv_ms: ms(self.acked),
                ..Default::default()
            }),
        }
    }
}

/// What the fake kernel holds; the test changes it between sweeps.
#[derive(Default)]
pub(super) struct Host {
    pub now: Mono,
    pub socks: BTreeMap<Cookie, Sock>,
    pub news: Vec<News>,
    /// Sockets the next watch stage adopts (older than the agent).
    pub adopt: BTreeSet<Cookie>,
    /// Every `SOCK_DESTROY`, in order.
    pub destroyed: Vec<Cookie>,
    /// The peers each sweep handed to the fast probes' device lookup, in order.
    pub fast_peers: Vec<Vec<std::net::IpAddr>>,
    /// `sock_diag` requests for one socket (`Diag::get`) so far.
    pub gets: u64,
    /// The fast probes' interval (`None`: no fast probes, as by default).
    pub fast: Option<Duration>,
    /// The open fast phases the probe keeps (`POKE`): the test opens them, a pass closes
    /// those whose socket has no probe unanswered, as the iterator does.
    pub poke: BTreeSet<Cookie>,
    /// TCP iterator passes for the fast probes so far.
    pub passes: u64,
}

/// The kernel and the clock of one test: clones share the host.
#[derive(Clone, Default)]
pub(super) struct Fake(Arc<Mutex<Host>>);

impl Fake {
    pub(super) fn host(&self) -> MutexGuard<'_, Host> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Clock for Fake {
    fn now(&self) -> Mono {
        self.host().now
    }
}
