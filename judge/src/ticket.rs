//! One kill's escalation, from the kill to its end, shared by the judge (which watches for
//! a recovery) and the restarter task (which restarts the unit). Its stage only moves
//! forward, and the two ends exclude each other: the judge may call a kill recovered only
//! while no restart has been taken for it, and the restarter may take it only while it is
//! not recovered. So "no restart needed" is never followed by a restart for the same kill,
//! however the two tasks interleave (a request already queued, a connect test in between).

use std::sync::{
    Arc,
    atomic::{AtomicU8, Ordering},
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Killed; waiting for a healthy connection within `--escalate-after`.
    Watching,
    /// A restart request is on its way to (or queued at) the restarter.
    Asked,
    /// The restarter took it: the unit is being (or was) restarted for this kill.
    Restarting,
    /// A healthy connection came back: no restart, ever, for this kill.
    Recovered,
    /// The restarter declined (budget, pause, no healthy endpoint, already restarted since).
    Closed,
}

impl Stage {
    const ALL: [Self; 5] = [
        Self::Watching,
        Self::Asked,
        Self::Restarting,
        Self::Recovered,
        Self::Closed,
    ];

    const fn code(self) -> u8 {
        self as u8
    }
}

#[derive(Clone, Debug)]
pub struct Ticket(Arc<AtomicU8>);

impl Ticket {
    pub(super) fn new(stage: Stage) -> Self {
        Self(Arc::new(AtomicU8::new(stage.code())))
    }

    #[must_use]
    pub fn stage(&self) -> Stage {
        let code = self.0.load(Ordering::Acquire);
        Stage::ALL
            .into_iter()
            .find(|s| s.code() == code)
            .unwrap_or(Stage::Closed)
    }

    /// Moves to `to` if the stage is one of `from`, in one atomic step.
    fn advance(&self, from: &[Stage], to: Stage) -> bool {
        self.0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |code| {
                from.iter().any(|s| s.code() == code).then_some(to.code())
            })
            .is_ok()
    }

    /// The judge: `--escalate-after` passed without a recovery.
    pub(super) fn ask(&self) -> bool {
        self.advance(&[Stage::Watching], Stage::Asked)
    }

    /// The judge: a healthy connection is back. False when the restarter took it first.
    pub(super) fn recover(&self) -> bool {
        self.advance(&[Stage::Watching, Stage::Asked], Stage::Recovered)
    }

    /// The restarter, just before `RestartUnit`: false when the kill recovered meanwhile.
    #[must_use]
    pub fn take(&self) -> bool {
        self.advance(&[Stage::Asked], Stage::Restarting)
    }

    /// The restarter: declined or done; nothing more happens for this kill.
    pub fn close(&self) {
        self.advance(&[Stage::Asked, Stage::Restarting], Stage::Closed);
    }

    /// Whether the judge still looks for a recovery.
    #[must_use]
    pub fn open(&self) -> bool {
        matches!(self.stage(), Stage::Watching | Stage::Asked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recovered_kill_can_never_be_taken_and_a_taken_one_never_recovers() {
        let t = Ticket::new(Stage::Watching);
        assert!(!t.take(), "nothing asked yet");
        assert!(t.ask());
        assert!(!t.ask(), "asked once");
        let queued = t.clone(); // the request in the restarter's queue
        assert!(t.recover(), "a recovery before the restarter got to it");
        assert!(!queued.take(), "the queued request finds it recovered");
        assert_eq!(queued.stage(), Stage::Recovered);
        queued.close();
        assert_eq!(
            t.stage(),
            Stage::Recovered,
            "close does not undo a recovery"
        );

        let t = Ticket::new(Stage::Asked);
        assert!(t.take());
        assert!(
            !t.recover(),
            "the restart was taken first: no 'no restart needed'"
        );
        t.close();
        assert_eq!(t.stage(), Stage::Closed);
        assert!(!t.open());
    }
}
