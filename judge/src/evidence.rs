//! Evidence newer than life: no kill rests on evidence older than the socket's own last sign
//! of life. A socket that heard from its peer (an ACK, moving `snd_una` or not, data, a
//! keepalive answer) after the evidence against it was gathered is judged afresh.
//!
//! The kernel's `tcp_info` ages the last segment from the peer two ways: `tcpi_last_ack_recv`
//! (`tp->rcv_tstamp`, set by every acceptable ACK in `tcp_ack()`, duplicates and keepalive
//! answers included) and `tcpi_last_data_recv` (`icsk_ack.lrcvtime`, set for data): see
//! `tcp_get_info()` in <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp.c>. Both
//! are jiffies turned into milliseconds, so two reads of an unchanged moment may differ by a
//! few milliseconds: `SLACK`.

use std::time::Duration;

use super::{Mono, TcpInfo};

/// Two reads of the same sign of life agree within this (jiffies at HZ=100 are 10 ms, and
/// the read is a few ms after the sweep's clock).
pub const SLACK: Duration = Duration::from_millis(25);

/// The socket's last sign of life as `info`, read at `at`, shows it: the newer of the last
/// ACK and the last data from its peer.
#[must_use]
pub fn life(info: &TcpInfo, at: Mono) -> Mono {
    let ms = info.last_ack_recv_ms.min(info.last_data_recv_ms);
    at.checked_sub(Duration::from_millis(u64::from(ms)))
        .unwrap_or(at)
}

/// A peer probe's finding that the peer is dead: every fresh connection to it timed out
/// while another address of the endpoint accepted one (so the path to the endpoint works and
/// this peer does not). A probe that found no address accepting says the path is down, not
/// the peer: that is never a reason to kill (`Judge::path_down`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeadPeer {
    /// When the probe's first try left. The finding covers only sockets silent since before
    /// this: a socket that heard from the peer later, or was established later, is not dead
    /// by it.
    pub probe_started: Mono,
    /// When the last try timed out: the finding's moment.
    pub found: Mono,
}

/// The latest peer probe of a socket's peer, as the loop hands it in: how a blip is told
/// from a death. A flow or a peer is dead only while a fresh connection proves the path
/// works: to the same peer (`Alive`: the flow is dead, not the path) or, when the peer
/// does not answer, to another address of the endpoint (`Dead`). When nothing answers
/// (`PathDown`) it is the path, and no socket is killed for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerProbe {
    /// Still trying, since `started`.
    Running { started: Mono },
    /// Still trying the peer, but another address of the endpoint accepted a connection
    /// since `started`: the path to the endpoint works, whatever the peer answers, so a
    /// socket's own evidence against it is a death, not a blip.
    PathWorks { started: Mono },
    /// A fresh connection was accepted, or refused (a live host).
    Alive { started: Mono },
    /// Every try timed out while another address accepted.
    Dead(DeadPeer),
    /// Every try timed out and no other address accepted.
    PathDown { started: Mono },
}

impl PeerProbe {
    /// When the probe's first try left.
    #[must_use]
    pub const fn started(&self) -> Mono {
        match self {
            Self::Running { started }
            | Self::PathWorks { started }
            | Self::Alive { started }
            | Self::PathDown { started } => *started,
            Self::Dead(d) => d.probe_started,
        }
    }

    /// The finding, when the probe began after `life` (a probe from before the socket last
    /// heard from its peer says nothing about what happened since).
    #[must_use]
    pub fn since(self, life: Mono) -> Option<Self> {
        (self.started() + SLACK >= life).then_some(self)
    }
}

/// A peer probe the judge asks the loop for: why, and, when it must judge what happened
/// after a moment (a socket's last sign of life), that its first try leave after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeAsk {
    pub why: &'static str,
    pub after: Option<Mono>,
}

/// What a kill rests on, in time: when the evidence was confirmed, the socket's last sign
/// of life as that look saw it, and when the unanswered run (or the peer probe) began.
/// `since` is never before `life`: the fields are private and `new` is the only way to make
/// one, so a value with evidence older than the socket's last sign of life cannot exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Evidence {
    at: Mono,
    life: Mono,
    since: Mono,
}

impl Evidence {
    /// `None` when the socket heard from its peer after the evidence began.
    #[must_use]
    pub fn new(at: Mono, life: Mono, since: Mono) -> Option<Self> {
        (since + SLACK >= life).then_some(Self {
            at,
            life,
            since: since.max(life),
        })
    }

    /// When the evidence was confirmed (the look's moment).
    #[must_use]
    pub const fn at(&self) -> Mono {
        self.at
    }

    /// The socket's last sign of life as the confirming look saw it.
    #[must_use]
    pub const fn life(&self) -> Mono {
        self.life
    }

    /// When the unanswered run (or the peer probe) began: never before `life`.
    #[must_use]
    pub const fn since(&self) -> Mono {
        self.since
    }

    /// Whether the evidence still stands against a read of the socket taken later: nothing
    /// from the peer since the look.
    #[must_use]
    pub fn holds(&self, life_now: Mono) -> bool {
        life_now <= self.life + SLACK
    }

    /// How old the evidence is at `now` (from the start of the unanswered run).
    #[must_use]
    pub fn age(&self, now: Mono) -> Duration {
        now.saturating_duration_since(self.since)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(ack_ms: u32, data_ms: u32) -> TcpInfo {
        TcpInfo {
            state: 1,
            last_ack_recv_ms: ack_ms,
            last_data_recv_ms: data_ms,
            ..TcpInfo::default()
        }
    }

    #[test]
    fn life_is_the_newer_of_the_last_ack_and_the_last_data() {
        let at = Mono::from_secs(100);
        assert_eq!(
            life(&info(3_000, 9_000), at),
            at.checked_sub(Duration::from_secs(3)).unwrap()
        );
        assert_eq!(
            life(&info(9_000, 2_000), at),
            at.checked_sub(Duration::from_secs(2)).unwrap()
        );
    }

    #[test]
    fn evidence_older_than_life_cannot_be_made_and_new_life_undoes_it() {
        let t0 = Mono::from_secs(100);
        let s = Duration::from_secs;
        assert!(
            Evidence::new(t0 + s(5), t0 + s(3), t0 + s(2)).is_none(),
            "the peer answered after the run began"
        );
        let e = Evidence::new(t0 + s(5), t0 + s(1), t0 + s(2)).expect("run after life");
        assert!(
            e.holds(t0 + s(1) + Duration::from_millis(10)),
            "same moment"
        );
        assert!(!e.holds(t0 + s(4)), "heard from the peer after the look");
        assert_eq!(e.age(t0 + s(6)), s(4));
        let jiffy = Duration::from_millis(10);
        let e = Evidence::new(
            t0 + s(5),
            t0 + s(1),
            (t0 + s(1)).checked_sub(jiffy).unwrap(),
        )
        .expect("within a jiffy");
        assert_eq!(e.since, t0 + s(1), "never before life");
    }
}
