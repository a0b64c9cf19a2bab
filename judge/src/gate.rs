//! From a confirmed reason to an action: the healthy-endpoint guard's answer, a per-socket
//! backoff after anything but a kill, the kill budget of the socket's target per sliding
//! minute, `--dry-run`, and `--action restart` (for the unit's own sockets only). Outcomes
//! come back typed and feed the backoff and the escalation.

use std::{borrow::Cow, time::Duration};

use super::{Cookie, Judge, Mono, Record, TcpInfo, Verdict};

/// Why a socket is to be killed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Confirmed stalled or silent (two witnesses, two looks).
    Dead(Verdict),
    /// The peer's address left the endpoint's set for longer than the grace, or left it and
    /// the socket's own round trip failed (`trouble`: migrated early, `early.rs`).
    Orphaned {
        endpoint: String,
        absent_for: Duration,
        trouble: Option<super::Trouble>,
    },
    /// Every fresh connection of a peer probe timed out (`PROBE_TRIES` of them) while
    /// another address of the endpoint accepted, and the socket has been silent since
    /// before the probe began.
    DeadPeer {
        endpoint: Option<String>,
        probe_started: Mono,
    },
}

impl Reason {
    /// The verdict word decisions and restarts are logged with.
    #[must_use]
    pub const fn verdict(&self) -> &'static str {
        match self {
            Self::Dead(Verdict::Silent) => "silent",
            Self::Dead(_) => "stalled",
            Self::Orphaned { .. } => "orphaned",
            Self::DeadPeer { .. } => "dead-peer",
        }
    }

    /// Whether the reason is evidence that the socket is dead, so it must still stand when
    /// the kill is carried out (nothing from the peer since the look): every failure, and an
    /// orphan migrated early for a failed round trip. A migration at a quiet moment is not
    /// about the socket's health.
    #[must_use]
    pub const fn rests_on_silence(&self) -> bool {
        !matches!(self, Self::Orphaned { trouble: None, .. })
    }

    /// A socket that is broken, as opposed to one moved for hygiene (an orphan migration):
    /// only these may lead to restarting its owner.
    #[must_use]
    pub const fn is_failure(&self) -> bool {
        !matches!(self, Self::Orphaned { .. })
    }
}

/// A confirmed reason to kill one socket, with its evidence.
#[derive(Clone, Debug)]
pub struct Kill {
    pub cookie: Cookie,
    pub rec: Record,
    pub info: TcpInfo,
    pub reason: Reason,
    /// When the evidence was confirmed, the socket's last sign of life then, and when the
    /// unanswered run began: never older than life (`Evidence::new`).
    pub evidence: super::Evidence,
    /// The path's epoch when it was decided (`Judge::current`): a kill decided before the
    /// path came back is not carried out.
    pub path_epoch: u64,
    /// Whose the socket is (its kill budget, whether it is `--restart-unit`'s): found out by
    /// the daemon just before acting (`act::owner`); the default until then.
    pub whose: Whose,
}

/// What to do with a confirmed kill.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Destroy the socket.
    Kill,
    /// `--dry-run`: log only.
    DryRun,
    /// The kill budget of the socket's target is spent for this minute.
    RateLimited,
    /// No endpoint address accepts connections: the control plane is down, hold.
    Hold,
    /// Still backing off after an earlier attempt on this socket: say nothing.
    Quiet,
    /// `--action restart`: ask for a restart of the unit instead.
    Restart,
}

/// How an action ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Killed,
    /// Closed before we got to it.
    Gone,
    Failed(String),
    DryRun,
    RateLimited,
    Held,
}

impl Outcome {
    /// The `outcome` field of the decision event.
    #[must_use]
    pub fn label(&self) -> Cow<'static, str> {
        match self {
            Self::Killed => "killed".into(),
            Self::Gone => "gone".into(),
            Self::Failed(e) => format!("failed: {e}").into(),
            Self::DryRun => "dry-run".into(),
            Self::RateLimited => "rate-limited".into(),
            Self::Held => "held: no healthy endpoint".into(),
        }
    }
}

/// At most `max` kills of one target's sockets in any sliding minute, and a growing pause
/// per socket after any attempt that did not end it (5 s doubling to 5 min; the pause is
/// the socket's own, `SocketState::backoff`).
pub(super) struct KillGate {
    budgets: KillBudgets,
    pub kills: u64,
}

const FIRST_BACKOFF: Duration = Duration::from_secs(5);
const MAX_BACKOFF: Duration = Duration::from_mins(5);

impl KillGate {
    pub(super) fn new(max_per_minute: u32) -> Self {
        Self {
            budgets: KillBudgets::new(max_per_minute),
            kills: 0,
        }
    }
}

impl Judge {
    /// Still backing off after an earlier attempt on this socket: nothing to do or say (the
    /// daemon skips finding out whose it is).
    #[must_use]
    pub fn quiet(&self, cookie: Cookie, at: Mono) -> bool {
        self.sockets.get(cookie).is_some_and(|st| st.quiet(at))
    }

    /// The action for a confirmed kill. `endpoint_healthy`: the guard's answer for this
    /// batch (`true` without a configured endpoint).
    pub(crate) fn gate(&mut self, kill: &Kill, endpoint_healthy: bool, at: Mono) -> Action {
        if self.quiet(kill.cookie, at) {
            return Action::Quiet;
        }
        if !endpoint_healthy {
            return Action::Hold;
        }
        // Another process's socket never restarts the unit: it is killed instead.
        if !self.settings.dry_run
            && kill.reason.is_failure()
            && kill.whose.unit == UnitOwned::Yes
            && self
                .escalation
                .as_ref()
                .is_some_and(Escalation::restarts_instead)
        {
            return Action::Restart;
        }
        if self.settings.dry_run {
            self.back_off(kill.cookie, at);
            return Action::DryRun;
        }
        if self.gate.budgets.try_take(&kill.whose.budget, at) {
            Action::Kill
        } else {
            self.back_off(kill.cookie, at);
            Action::RateLimited
        }
    }

    /// A kill's result; a failure starts the socket's backoff. Returns the restart request
    /// the escalation wants, if any (a kill that failed).
    pub fn outcome(
        &mut self,
        kill: &Kill,
        outcome: &Outcome,
        at: Mono,
    ) -> Option<super::RestartRequest> {
        match outcome {
            Outcome::Killed => self.gate.kills += 1,
            Outcome::Failed(_) => self.back_off(kill.cookie, at),
            _ => {}
        }
        self.escalation.as_mut()?.after_outcome(kill, outcome, at)
    }

    fn back_off(&mut self, cookie: Cookie, at: Mono) {
        self.sockets.update(cookie, |st| {
            let delay = st
                .backoff
                .map_or(FIRST_BACKOFF, |(_, d)| (d * 2).min(MAX_BACKOFF));
            st.backoff = Some((at + delay, delay));
        });
    }
}

use super::{
    Escalation,
    budget::{KillBudgets, UnitOwned, Whose},
};
