//! Carrying out the judge's decisions: kills (through the guard, for the whole batch) and
//! restart requests, and the escalation's check after every sweep.

use std::time::Instant;

use crate::{
    act,
    endpoint::guard,
    judge::{Action, Kill, RestartRequest, Seen},
};

use super::Daemon;

impl Daemon {
    /// Carry out a batch of confirmed kills: ask the guard once for the batch (a connect
    /// test when its answer is stale), then each kill's action, outcome and log.
    pub(super) async fn execute(&mut self, kills: &[Kill]) {
        if kills.is_empty() {
            return;
        }
        let healthy = match self.follow.as_mut() {
            None => guard::Verdict::Go,
            Some(f) => match f.guard.before(!f.endpoints.is_empty(), Instant::now()) {
                guard::Step::Known(v) => v,
                guard::Step::Check => {
                    let ok = f.endpoints.any_accepts().await;
                    f.guard.after(ok, Instant::now())
                }
            },
        };
        if healthy == guard::Verdict::Wait {
            return;
        }
        for kill in kills {
            let at = Instant::now();
            let action = self.judge.gate(kill, healthy == guard::Verdict::Go, at);
            if action == Action::Restart {
                let req = self
                    .judge
                    .escalation
                    .as_mut()
                    .and_then(|e| e.restart_instead(kill, at));
                self.request_restart(req);
                continue;
            }
            let Some(outcome) = act::execute(&mut self.diag, kill, action) else {
                continue;
            };
            act::log_decision(kill, action, &outcome);
            let req = self.judge.outcome(kill, &outcome, at);
            self.request_restart(req);
        }
    }

    pub(super) fn after_sweep(&mut self, seen: &[Seen]) {
        let Some(esc) = self.judge.escalation.as_mut() else {
            return;
        };
        let (due, back) = esc.after_sweep(seen, Instant::now());
        for (peer, after) in back {
            tracing::info!(peer = %peer, after_ms = u64::try_from(after.as_millis()).unwrap_or(u64::MAX),
                "a healthy connection to the endpoint is back after the kill; no restart needed");
        }
        for r in due {
            self.request_restart(Some(r));
        }
    }

    fn request_restart(&self, req: Option<RestartRequest>) {
        if let (Some(tx), Some(r)) = (self.restarts.as_ref(), req) {
            let _ = tx.send(r);
        }
    }
}
