//! What lifeline changed on a watched socket, what the application had there before, and the
//! probe's part in putting it back (docs/ARCHITECTURE.md, "Nothing left behind" and "Dry
//! run observes, Hold holds").
//!
//! - `ORIGINALS` (one [`Original`] per armed socket, by cookie) is written when lifeline arms
//!   a socket, from what `bpf_getsockopt` reads first (Linux 6.1; before, an option set
//!   before the connection was established cannot be read and stays unknown), and whenever
//!   the application sets one of these options itself afterwards (the `cgroup/setsockopt`
//!   hook sees the value it asked for). The agent pins the map under bpffs, so the next
//!   start after a crash finds it.
//! - A TCP iterator pass with [`crate::watch::RESTORE`] set in `CONFIG` puts every changed
//!   option back to the application's value (`bpf_setsockopt` there: Linux 5.15) and writes
//!   what it could not into [`Original::left`].
//! - `DEFER` (one [`Defer`] per socket, written by the agent, applied and removed by the next
//!   iterator pass) moves a socket's keepalive abort while lifeline only observes: no sooner
//!   than the application's own settings would abort it (the plan is the judge's,
//!   `lifeline_judge::defer`), and lifeline's values back once it answers again.

/// Option bits of [`Original::changed`], [`Original::known`] and [`Original::left`].
pub mod opt {
    /// `SO_KEEPALIVE`.
    pub const KEEPALIVE: u32 = 1;
    /// `TCP_KEEPIDLE`.
    pub const IDLE: u32 = 2;
    /// `TCP_KEEPINTVL`.
    pub const INTVL: u32 = 4;
    /// `TCP_KEEPCNT`.
    pub const CNT: u32 = 8;
    /// `TCP_USER_TIMEOUT`.
    pub const USER_TIMEOUT: u32 = 16;
    /// `TCP_THIN_LINEAR_TIMEOUTS`.
    pub const LINEAR: u32 = 32;
    /// The `sock_ops` callback flags (`bpf_sock_ops_cb_flags_set`,
    /// `TCP_BPF_SOCK_OPS_CB_FLAGS`).
    pub const CALLBACKS: u32 = 64;
    /// `TCP_BPF_SNDCWND_CLAMP`, set at an RTO under BBR (`agent-ebpf/src/linear.rs`): it can be
    /// neither read nor set back (`bpf_setsockopt` takes no value above `INT_MAX`, and the
    /// kernel's own is `~0`), so it is only ever reported.
    pub const CWND_CLAMP: u32 = 128;
    /// The keepalive options.
    pub const KEEPALIVE_ALL: u32 = KEEPALIVE | IDLE | INTVL | CNT;
}

/// What the application had on one socket before lifeline changed it, and what lifeline
/// changed. Values are the socket's own, or the kernel's defaults it inherits (a value read
/// back is in force either way); each counts only when its bit is in `known`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Original {
    pub idle_s: u32,
    pub intvl_s: u32,
    pub cnt: u32,
    pub user_timeout_ms: u32,
    /// The `sock_ops` callback flags before lifeline added its own.
    pub cb_flags: u32,
    /// `SO_KEEPALIVE`: 0 or 1.
    pub keepalive: u32,
    /// `TCP_THIN_LINEAR_TIMEOUTS`: 0 or 1.
    pub linear: u32,
    /// Options lifeline set to a value other than the application's (`opt` bits).
    pub changed: u32,
    /// Options whose original value is known (`opt` bits).
    pub known: u32,
    /// Written by the restore pass: the changed options it did not put back exactly (`opt`
    /// bits; `CNT`: raised by the probes still unanswered, so the kernel does not abort the
    /// socket sooner than the application's own count would).
    pub left: u32,
    /// Written by the restore pass: `RESTORE_DONE` once it visited the socket.
    pub restored: u32,
    /// Explicit padding, always 0.
    pub pad: u32,
}

const _: () = assert!(core::mem::size_of::<Original>() == 48);

/// A boolean option's value as 0 or 1.
const fn flag(v: u32) -> u32 {
    if v == 0 { 0 } else { 1 }
}

/// `Original::restored`: the restore pass visited the socket.
pub const RESTORE_DONE: u32 = 1;

impl Original {
    /// Nothing known, nothing changed: the entry a socket starts with.
    pub const NONE: Self = Self {
        idle_s: 0,
        intvl_s: 0,
        cnt: 0,
        user_timeout_ms: 0,
        cb_flags: 0,
        keepalive: 0,
        linear: 0,
        changed: 0,
        known: 0,
        left: 0,
        restored: 0,
        pad: 0,
    };

    /// Record an original value seen when lifeline armed the socket or the application set
    /// it: `Some` is known, `None` could not be read.
    pub const fn note(&mut self, bit: u32, value: Option<u32>) {
        if let Some(v) = value {
            self.known |= bit;
            match bit {
                opt::KEEPALIVE => self.keepalive = flag(v),
                opt::IDLE => self.idle_s = v,
                opt::INTVL => self.intvl_s = v,
                opt::CNT => self.cnt = v,
                opt::USER_TIMEOUT => self.user_timeout_ms = v,
                opt::LINEAR => self.linear = flag(v),
                opt::CALLBACKS => self.cb_flags = v,
                _ => {}
            }
        }
    }

    /// Mark `bit` changed when the value in force (`new`) differs from the original, or the
    /// original is unknown; clear it when they are equal (the application's own value is in
    /// force).
    pub const fn mark(&mut self, bit: u32, new: u32) {
        let same = self.known & bit != 0
            && match bit {
                opt::KEEPALIVE => self.keepalive == flag(new),
                opt::IDLE => self.idle_s == new,
                opt::INTVL => self.intvl_s == new,
                opt::CNT => self.cnt == new,
                opt::USER_TIMEOUT => self.user_timeout_ms == new,
                opt::LINEAR => self.linear == flag(new),
                opt::CALLBACKS => self.cb_flags == new,
                _ => false,
            };
        if same {
            self.changed &= !bit;
        } else {
            self.changed |= bit;
        }
    }
}

/// `Defer::kind`: keepalive re-timed so the kernel's abort lands no sooner than the
/// application's own deadline: the next probe at `idle_s` after the last segment from the
/// peer, then every `intvl_s`, the abort after `remaining` more unanswered.
pub const DEFER_ALIGN: u32 = 1;
/// `Defer::kind`: keepalive off: the application's own settings never abort the socket (it set
/// no keepalive, or they cannot be known or fit the kernel's limits).
pub const DEFER_OFF: u32 = 2;
/// `Defer::kind`: only `TCP_USER_TIMEOUT` back to the application's (data in flight: the
/// keepalive timer sends nothing then).
pub const DEFER_USER_TIMEOUT: u32 = 3;
/// `Defer::kind`: lifeline's own values back (`idle_s`, `intvl_s`, `cnt`, keepalive on), the
/// count raised past the probes still unanswered so the next timer does not abort it.
pub const DEFER_END: u32 = 4;

/// One socket's deferral, as the agent writes it into `DEFER`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Defer {
    /// `DEFER_ALIGN`, `DEFER_OFF`, `DEFER_USER_TIMEOUT` or `DEFER_END`.
    pub kind: u32,
    pub idle_s: u32,
    pub intvl_s: u32,
    /// `DEFER_ALIGN`: `TCP_KEEPCNT` becomes the probes unanswered when applied plus this (at
    /// most `MAX_KEEPCNT`).
    pub remaining: u32,
    /// `DEFER_END`: lifeline's `TCP_KEEPCNT` (raised as `remaining` is when probes are out).
    pub cnt: u32,
    pub user_timeout_ms: u32,
    /// `SET_USER_TIMEOUT`: set `user_timeout_ms` too.
    pub flags: u32,
    pub pad: u32,
}

const _: () = assert!(core::mem::size_of::<Defer>() == 32);

/// `Defer::flags`: set `TCP_USER_TIMEOUT` to `user_timeout_ms`.
pub const SET_USER_TIMEOUT: u32 = 1;

/// `SockState::defer`: no deferral in force.
pub const DEFERRED_NONE: i32 = 0;

/// What a deferral's `kind` leaves in `SockState::defer` once applied (a negative errno when
/// the kernel refused one of its options).
#[must_use]
pub const fn deferred_state(kind: u32) -> i32 {
    if kind == DEFER_END {
        DEFERRED_NONE
    } else {
        #[allow(clippy::cast_possible_wrap, reason = "kinds are below 8")]
        {
            kind as i32
        }
    }
}

#[cfg(feature = "user")]
// SAFETY: `repr(C)`, explicit padding, size checked above; any bit pattern is valid.
unsafe impl aya::Pod for Original {}
#[cfg(feature = "user")]
// SAFETY: as above.
unsafe impl aya::Pod for Defer {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_equal_to_the_original_is_not_a_change() {
        let mut o = Original::default();
        o.note(opt::IDLE, Some(30));
        o.mark(opt::IDLE, 1);
        assert_eq!(o.changed, opt::IDLE);
        // The application set its own 1 s afterwards: what is in force is its own.
        o.note(opt::IDLE, Some(1));
        o.mark(opt::IDLE, 1);
        assert_eq!(o.changed, 0);
        // Unknown original: any value lifeline sets is a change.
        o.mark(opt::CNT, 20);
        assert_eq!((o.changed, o.known & opt::CNT), (opt::CNT, 0));
        o.note(opt::KEEPALIVE, Some(8));
        assert_eq!(o.keepalive, 1, "any non-zero SO_KEEPALIVE is on");
    }
}
