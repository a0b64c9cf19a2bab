//! Escalation, the restart side: one task that takes requests from the daemon, applies the
//! limits (hourly budget, exponential jittered pause, healthy endpoint), restarts the unit
//! through systemd's D-Bus API (one connection, subscribed once, replaced when it drops),
//! waits for the job's result and logs every decision. Each request's `Ticket` is taken
//! just before `RestartUnit`, so a kill the daemon saw recover is never restarted.

use std::{
    borrow::Cow,
    time::{Duration, Instant},
};

use tokio::{sync::mpsc, task::JoinHandle};

use super::{
    dbus::{Bus, RestartError},
    policy::{RestartGate, RestartPolicy, jitter},
    scope::UnitScope,
};
use crate::{
    act::{Counts, Decided, DecisionAction, OutcomeClass},
    judge::{RestartRequest as Request, Stage},
    settings::SystemdBus,
};

/// While systemd has not told us the unit's cgroup (the unit not started yet, the bus not
/// reachable), ask again this often.
const CGROUP_RECHECK: Duration = Duration::from_secs(30);

/// How one restart request ended, as its decision event's `outcome` says.
#[derive(Debug)]
enum Ended {
    Restarted,
    Failed(String),
    /// Not attempted: `Held` (no healthy endpoint), `RateLimited`, `Backoff`.
    Declined(OutcomeClass),
}

impl Ended {
    const fn class(&self) -> OutcomeClass {
        match self {
            Self::Restarted => OutcomeClass::Restarted,
            Self::Failed(_) => OutcomeClass::Failed,
            Self::Declined(class) => *class,
        }
    }

    fn label(&self) -> Cow<'static, str> {
        match self {
            Self::Failed(e) => format!("{}: {e}", OutcomeClass::Failed.label()).into(),
            _ => self.class().text().into(),
        }
    }
}

pub(crate) struct Restarter {
    pub bus: SystemdBus,
    pub unit: String,
    pub max_per_hour: u32,
    /// `--restart-backoff`: the first pause after a restart.
    pub first_pause: Duration,
    /// The API endpoint: a restart while no address of it accepts connections would only
    /// add a re-list storm to the outage. Empty without a configured endpoint (no check).
    pub endpoints: crate::endpoint::Endpoints,
    /// The unit's cgroup, kept current here from systemd's `ControlGroup`.
    pub scope: UnitScope,
    /// Where each restart decision is counted.
    pub counts: Counts,
}

/// Where the daemon sends restart requests, and which sockets may send one.
pub(crate) struct Restarts {
    pub tx: mpsc::UnboundedSender<Request>,
    pub scope: UnitScope,
}

impl Restarter {
    pub(crate) fn spawn(self) -> (Restarts, JoinHandle<()>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let scope = self.scope.clone();
        (Restarts { tx, scope }, tokio::spawn(self.run(rx)))
    }

    async fn run(self, mut rx: mpsc::UnboundedReceiver<Request>) {
        let mut policy = RestartPolicy::new(self.max_per_hour, self.first_pause);
        let mut bus: Option<Bus> = None;
        let mut last_restart: Option<crate::judge::Mono> = None;
        self.learn_cgroup(&mut bus).await;
        let mut recheck = tokio::time::interval(CGROUP_RECHECK);
        recheck.reset(); // the first tick is now: already asked
        loop {
            let req = tokio::select! {
                r = rx.recv() => match r {
                    Some(r) => r,
                    None => return,
                },
                _ = recheck.tick() => {
                    if !self.scope.known() {
                        self.learn_cgroup(&mut bus).await;
                    }
                    continue;
                }
            };
            if req.ticket.stage() == Stage::Recovered {
                continue; // the daemon logged that no restart is needed
            }
            if last_restart.is_some_and(|t| req.at < t) {
                // Asked about a process we have restarted since: already handled.
                req.ticket.close();
                continue;
            }
            if !self.endpoints.is_empty() && self.endpoints.any_accepts().await.is_none() {
                self.decline(&req, OutcomeClass::Held, None);
                continue;
            }
            match policy.gate(Instant::now()) {
                RestartGate::RateLimited(d) => {
                    self.decline(&req, OutcomeClass::RateLimited, Some(d));
                }
                RestartGate::Backoff(d) => self.decline(&req, OutcomeClass::Backoff, Some(d)),
                // The last step before RestartUnit: a kill that recovered meanwhile (while
                // the connect test above ran) is not restarted.
                RestartGate::Go if req.ticket.take() => {
                    let outcome = self.restart(&mut bus).await;
                    // Failed attempts count too: a restart that fails must not loop.
                    policy.record(Instant::now(), jitter());
                    last_restart = Some(crate::kernel::clock::now());
                    self.log(&req, &outcome, None);
                    req.ticket.close();
                    self.learn_cgroup(&mut bus).await;
                }
                RestartGate::Go => {}
            }
        }
    }

    fn decline(&self, req: &Request, why: OutcomeClass, retry_in: Option<Duration>) {
        self.log(req, &Ended::Declined(why), retry_in);
        req.ticket.close();
    }

    /// Asks systemd for the unit's `ControlGroup` (connecting if needed).
    async fn learn_cgroup(&self, bus: &mut Option<Bus>) {
        if bus.is_none() {
            match Bus::connect(&self.bus).await {
                Ok(b) => *bus = Some(b),
                Err(e) => {
                    tracing::debug!(error = %format!("{e:#}"), "cannot ask systemd for {}'s cgroup yet", self.unit);
                    return;
                }
            }
        }
        let Some(b) = bus.as_ref() else { return };
        match b.control_group(&self.unit).await {
            Ok(cg) => self.scope.report(&cg),
            Err(e) => {
                tracing::debug!(error = %format!("{e:#}"), "cannot read {}'s ControlGroup", self.unit);
                *bus = None; // reconnect next time: the bus or the manager may have restarted
            }
        }
    }

    /// One restart over the kept connection; a connection found gone before systemd got
    /// the call is replaced (connect, subscribe) and the call made once more.
    async fn restart(&self, bus: &mut Option<Bus>) -> Ended {
        for attempt in 0..2 {
            if bus.is_none() {
                match Bus::connect(&self.bus).await {
                    Ok(b) => *bus = Some(b),
                    Err(e) => return Ended::Failed(format!("{e:#}")),
                }
            }
            let Some(b) = bus.as_mut() else {
                return Ended::Failed("no D-Bus connection".to_owned());
            };
            match b.restart(&self.unit).await {
                Ok(result) if result == "done" => return Ended::Restarted,
                Ok(result) => return Ended::Failed(format!("job result {result}")),
                Err(RestartError::NotSent(e)) if attempt == 0 => {
                    tracing::info!(error = %format!("{e:#}"), "the D-Bus connection to systemd is gone; reconnecting");
                    *bus = None;
                }
                Err(RestartError::NotSent(e) | RestartError::Failed(e)) => {
                    *bus = None; // reconnect next time: the bus or the manager may have restarted
                    return Ended::Failed(format!("{e:#}"));
                }
            }
        }
        Ended::Failed("no D-Bus connection".to_owned())
    }

    fn log(&self, r: &Request, ended: &Ended, retry_in: Option<Duration>) {
        let failed = matches!(ended, Ended::Failed(_));
        let outcome = ended.label();
        let outcome = outcome.as_ref();
        let unit = self.unit.as_str();
        let retry_in_ms = retry_in.map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let reason = r.reason.label();
        let message = format!(
            "restart {unit} ({reason}: {} -> {}, {}/{}): {outcome}",
            r.local, r.peer, r.owner_comm, r.owner_pid
        );
        self.counts.count(&Decided {
            verdict: r.verdict,
            did: DecisionAction::Restart,
            class: ended.class(),
            trouble_age_ms: r.trouble_age_ms,
        });
        macro_rules! decision {
            ($lvl:ident) => {
                tracing::$lvl!(target: "lifeline::decision", peer = %r.peer, local = %r.local, owner_pid = r.owner_pid,
                    owner_comm = %r.owner_comm, verdict = r.verdict, action = DecisionAction::Restart.label(), outcome, reason,
                    unit, trouble_age_ms = r.trouble_age_ms, retry_in_ms, "{message}")
            };
        }
        if failed {
            decision!(error);
        } else {
            decision!(warn);
        }
    }
}
