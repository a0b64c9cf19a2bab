//! The probe's record decoded, once, into the judge's typed `Record`: each `#[repr(C)]`
//! sentinel code of `SockState` (`lifeline_common::sock`, `keepalive`, `restore`) becomes an
//! enum, each stamp a `Mono`. Everything above the kernel stage reads the decoded record.

use lifeline_common::{
    SockState,
    keepalive::{KA_ARMED, KA_NO_ITERATOR, KA_OFF, KA_PENDING, KA_SET_UNREAD},
    restore::{DEFER_OFF, DEFERRED_NONE},
    sock::{
        ADOPT_ALREADY, ADOPT_ARMED, ADOPT_NO_ITERATOR, ADOPT_PENDING, LTO_ARMED, LTO_OFF,
        LTO_PAUSED, SOURCE_ADOPTED,
    },
};

use crate::judge::{
    Adoption, Arming, Comm, Deferred, Errno, LinearTimeouts, Mono, Origin, Record, TcpState,
};

/// `SockState::defer` with keepalive off.
#[allow(clippy::cast_possible_wrap, reason = "a small constant")]
const DEFERRED_OFF: i32 = DEFER_OFF as i32;

/// The record as the rules read it.
#[must_use]
pub(crate) fn decode(s: &SockState) -> Record {
    Record {
        local: s.local(),
        peer: s.peer(),
        state: TcpState::from_code(s.state),
        origin: if s.source == SOURCE_ADOPTED {
            Origin::Adopted(adoption(s.adopt))
        } else {
            Origin::SockOps
        },
        established: Mono::from_nanos(s.established_ns),
        last_ack: Mono::from_nanos(s.last_ack_ns),
        trouble: (s.trouble_ns != 0).then(|| Mono::from_nanos(s.trouble_ns)),
        packets_out: s.packets_out,
        unacked_bytes: s.unacked_bytes(),
        rto_count: s.rto_count,
        retrans_count: s.retrans_count,
        bytes_acked: s.bytes_acked,
        bytes_received: s.bytes_received,
        owner_pid: s.owner_pid,
        owner_comm: Comm(s.owner_comm),
        reasons: s.reasons,
        arming: arming(s.ka_result),
        keepalive: s.keepalive,
        linear: match s.lto {
            LTO_OFF => LinearTimeouts::Off,
            LTO_ARMED => LinearTimeouts::Armed,
            LTO_PAUSED => LinearTimeouts::Paused,
            e => LinearTimeouts::Refused(Errno(-e)),
        },
        probe_bytes: s.probe_bytes,
        probe_srtt_us: s.probe_srtt_us,
        deferred: match s.defer {
            DEFERRED_NONE => Deferred::No,
            DEFERRED_OFF => Deferred::Off,
            d if d > 0 => Deferred::ToDeadline,
            e => Deferred::Refused(Errno(-e)),
        },
    }
}

/// `SockState::adopt` of an adopted socket.
#[must_use]
pub(crate) const fn adoption(code: i32) -> Adoption {
    match code {
        ADOPT_ARMED => Adoption::Armed,
        ADOPT_ALREADY => Adoption::AlreadyArmed,
        ADOPT_PENDING => Adoption::Pending,
        ADOPT_NO_ITERATOR => Adoption::NoIterator,
        e => Adoption::Refused(Errno(-e)),
    }
}

/// `SockState::ka_result`.
#[must_use]
pub(crate) const fn arming(code: i32) -> Arming {
    match code {
        KA_ARMED => Arming::Armed,
        KA_SET_UNREAD => Arming::SetUnread,
        KA_OFF => Arming::Off,
        KA_PENDING => Arming::Pending,
        KA_NO_ITERATOR => Arming::NoIterator,
        e => Arming::Refused(Errno(-e)),
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use lifeline_common::restore::DEFER_ALIGN;

    use super::*;

    #[test]
    fn every_sentinel_becomes_its_variant_and_errnos_turn_positive() {
        let local: SocketAddr = "[2001:db8::2]:40000".parse().expect("address");
        let peer: SocketAddr = "[2001:db8::1]:6443".parse().expect("address");
        let mut s = SockState::for_endpoints(local, peer);
        s.state = 1;
        s.source = SOURCE_ADOPTED;
        s.adopt = -22;
        s.ka_result = KA_SET_UNREAD;
        s.lto = LTO_PAUSED;
        s.defer = i32::try_from(DEFER_ALIGN).expect("small");
        s.snd_una = 100;
        s.snd_nxt = 160;
        s.owner_comm[..7].copy_from_slice(b"kubelet");
        let r = decode(&s);
        assert_eq!((r.local.port(), r.peer), (40_000, peer));
        assert_eq!(r.state, TcpState::Established);
        assert_eq!(r.origin, Origin::Adopted(Adoption::Refused(Errno(22))));
        assert!(r.origin.polled());
        assert_eq!(r.arming, Arming::SetUnread);
        assert!(r.arming.in_force());
        assert_eq!(r.linear, LinearTimeouts::Paused);
        assert_eq!(r.deferred, Deferred::ToDeadline);
        assert_eq!((r.trouble, r.unacked_bytes), (None, 60));
        assert_eq!(r.comm(), Some("kubelet"));
        s.defer = -1;
        s.ka_result = -95;
        s.trouble_ns = 5;
        s.source = 1;
        let r = decode(&s);
        assert_eq!(r.deferred, Deferred::Refused(Errno(1)));
        assert_eq!(r.arming, Arming::Refused(Errno(95)));
        assert_eq!(r.trouble, Some(Mono::from_nanos(5)));
        assert_eq!(r.origin, Origin::SockOps);
        assert_eq!(decode(&SockState::default()), Record::default(), "all zero");
    }
}
