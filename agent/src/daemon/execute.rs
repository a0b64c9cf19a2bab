//! Carrying out the judge's decisions: kills (through the guard, for the whole batch; each
//! after finding out whose the socket is: its target's kill budget, whether it is
//! `--restart-unit`'s) and restart requests, and the escalation's check after every sweep.

use super::Daemon;
use crate::{
    act::{
        self,
        owner::{LastRead, Scopes},
    },
    endpoint::guard,
    judge::{Action, Kill, RestartRequest, SweepEnd, UnitOwned},
};

impl Daemon {
    /// Carry out a batch of confirmed kills: ask the guard once for the batch (a connect
    /// test when its answer is stale), then each kill's action, outcome and log. A batch
    /// decided before the path to the endpoint came back is not carried out (its evidence was
    /// gathered while it was down), and each kill's evidence must still stand on a read of
    /// the socket taken after the guard's test: nothing from the peer since the look.
    pub(super) async fn execute(&mut self, kills: &[Kill]) {
        if kills.is_empty() {
            return;
        }
        let healthy = self.guard().await;
        if healthy == guard::GuardVerdict::Wait {
            return;
        }
        let mut scopes: Option<Scopes> = None;
        for kill in kills {
            let at = self.clock.now();
            if self.judge.quiet(kill.cookie, at) || !self.judge.current(kill) {
                continue; // backing off, or earned again after the path's return
            }
            let Some(seen) = self.still_dead(kill) else {
                continue;
            };
            let scopes = scopes.get_or_insert_with(|| self.scopes());
            let kill = Kill {
                whose: scopes.whose(seen, &kill.rec),
                ..kill.clone()
            };
            let decision = self
                .judge
                .decide(&kill, healthy == guard::GuardVerdict::Go, at);
            if decision.first_outside {
                self.say_outside(&kill);
            }
            let action = decision.action;
            if action == Action::Restart {
                self.request_restart(decision.restart);
                continue;
            }
            let Some(outcome) = act::execute(self.kernel.as_mut(), &kill, action) else {
                continue;
            };
            act::log_decision(&self.counts, &kill, action, &outcome);
            let req = self.judge.outcome(&kill, &outcome, at);
            self.request_restart(req);
        }
    }

    /// The guard's answer for a batch, and what it says of the path: a held batch means the
    /// path is down; a connection accepted after that, that it is back.
    async fn guard(&mut self) -> guard::GuardVerdict {
        let Some(f) = self.follow.as_mut() else {
            return guard::GuardVerdict::Go;
        };
        let started = match f.guard.before(!f.endpoints.is_empty(), self.clock.now()) {
            guard::GuardStep::Known(v) => return v,
            guard::GuardStep::Check => self.clock.now(),
        };
        let accepted = f.connect.any_accepts(f.endpoints.targets()).await;
        let verdict = f.guard.after(accepted.is_some(), self.clock.now());
        match accepted {
            Some(via) => {
                self.heard(via, started);
                self.path_back(started, via);
            }
            None => self.path_down(started, "no endpoint address accepted a connection"),
        }
        verdict
    }

    /// A fresh read of the socket, when the kill's evidence still stands on it; `None`: it
    /// heard from its peer since the look (judged afresh next sweep).
    fn still_dead(&mut self, kill: &Kill) -> Option<LastRead> {
        let read = self
            .kernel
            .get(kill.rec.local, kill.rec.peer, kill.cookie)
            .ok()
            .flatten();
        if let (Some(i), true) = (
            read.as_ref().and_then(|d| d.info),
            kill.reason.rests_on_silence(),
        ) {
            let now = self.clock.now();
            let life = crate::judge::life(&i, now);
            if !kill.evidence.holds(life) {
                tracing::info!(peer = %kill.rec.peer, local = %kill.rec.local, verdict = kill.reason.verdict(),
                    life_age_ms = u64::try_from((now - life).as_millis()).unwrap_or(u64::MAX),
                    "heard from its peer after the evidence against it: not killed, judged afresh");
                return None;
            }
        }
        Some(LastRead {
            cgroup_id: read.as_ref().and_then(|d| d.cgroup_id),
            uid: read.map(|d| d.uid),
        })
    }

    /// The target cgroups' and the unit's subtrees as they are now.
    fn scopes(&self) -> Scopes {
        let unit_dir = self
            .restarts
            .as_ref()
            .and_then(|r| r.scope.dir())
            .map(|(dir, _)| dir);
        self.kernel.scopes(unit_dir.as_deref())
    }

    /// Once per target (the judge says when): its sockets' failures are killed but never
    /// restart the unit.
    fn say_outside(&self, kill: &Kill) {
        let Some(r) = self.restarts.as_ref() else {
            return;
        };
        let unit = r.scope.unit.as_str();
        let cgroup = r.scope.dir().map_or_else(
            || "(not known yet)".to_owned(),
            |(d, from)| format!("{} (from {from})", d.display()),
        );
        let is = if kill.whose.unit == UnitOwned::No {
            format!(
                "sockets of {} are not in {unit}'s cgroup {cgroup}",
                kill.whose.budget
            )
        } else {
            format!(
                "cannot tell whether sockets of {} are in {unit}'s cgroup {cgroup}",
                kill.whose.budget
            )
        };
        tracing::info!(unit, budget = %kill.whose.budget, peer = %kill.rec.peer, owner_pid = kill.rec.owner_pid,
            "{is}: their failures are killed (from their own kill budget), never a restart of {unit}");
    }

    /// The escalation's answer after the sweep: recoveries to log, restarts to ask for.
    pub(super) fn after_sweep(&self, end: SweepEnd) {
        for (peer, after) in end.recovered {
            tracing::info!(peer = %peer, after_ms = u64::try_from(after.as_millis()).unwrap_or(u64::MAX),
                "a healthy connection to the endpoint is back after the kill; no restart needed");
        }
        for r in end.restarts {
            self.request_restart(Some(r));
        }
    }

    fn request_restart(&self, req: Option<RestartRequest>) {
        if let (Some(r), Some(req)) = (self.restarts.as_ref(), req) {
            let _ = r.tx.send(req);
        }
    }
}
