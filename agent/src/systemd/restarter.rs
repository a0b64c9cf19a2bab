//! Escalation, the restart side: one task that takes requests from the daemon, applies the
//! limits (hourly budget, exponential jittered pause, healthy endpoint), restarts the unit
//! through systemd's D-Bus API, waits for the job's result and logs every decision.

use std::time::{Duration, Instant};

use tokio::{sync::mpsc, task::JoinHandle};
use zbus::Connection;

use super::{
    dbus,
    policy::{Gate, RestartPolicy, jitter},
};
use crate::judge::RestartRequest as Request;
use crate::node_args::SystemdBus;

pub struct Restarter {
    pub bus: SystemdBus,
    pub unit: String,
    pub max_per_hour: u32,
    /// The API endpoint: a restart while no address of it accepts connections would only
    /// add a re-list storm to the outage. Empty without a configured endpoint (no check).
    pub endpoints: crate::endpoint::Endpoints,
}

impl Restarter {
    pub fn spawn(self) -> (mpsc::UnboundedSender<Request>, JoinHandle<()>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (tx, tokio::spawn(self.run(rx)))
    }

    async fn run(self, mut rx: mpsc::UnboundedReceiver<Request>) {
        let mut policy = RestartPolicy::new(self.max_per_hour);
        let mut conn: Option<Connection> = None;
        let mut last_restart: Option<Instant> = None;
        while let Some(req) = rx.recv().await {
            if last_restart.is_some_and(|t| req.at < t) {
                // Asked about a process we have restarted since: already handled.
                continue;
            }
            if !self.endpoints.is_empty() && !self.endpoints.any_accepts().await {
                self.log(&req, "held: no healthy endpoint", None);
                continue;
            }
            match policy.gate(Instant::now()) {
                Gate::RateLimited(d) => self.log(&req, "rate-limited", Some(d)),
                Gate::Backoff(d) => self.log(&req, "backoff", Some(d)),
                Gate::Go => {
                    let outcome = self.restart(&mut conn).await;
                    // Failed attempts count too: a restart that fails must not loop.
                    policy.record(Instant::now(), jitter());
                    last_restart = Some(Instant::now());
                    self.log(&req, &outcome, None);
                }
            }
        }
    }

    async fn restart(&self, conn: &mut Option<Connection>) -> String {
        if conn.is_none() {
            match dbus::connect(&self.bus).await {
                Ok(c) => *conn = Some(c),
                Err(e) => return format!("failed: {e:#}"),
            }
        }
        let Some(c) = conn.as_ref() else {
            return "failed: no D-Bus connection".to_owned();
        };
        match dbus::restart(c, &self.unit).await {
            Ok(result) if result == "done" => "restarted".to_owned(),
            Ok(result) => format!("failed: job result {result}"),
            Err(e) => {
                *conn = None; // reconnect next time: the bus or the manager may have restarted
                format!("failed: {e:#}")
            }
        }
    }

    fn log(&self, r: &Request, outcome: &str, retry_in: Option<Duration>) {
        let unit = self.unit.as_str();
        let retry_in_ms = retry_in.map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let reason = r.reason.label();
        let message = format!(
            "restart {unit} ({reason}: {} -> {}, {}/{}): {outcome}",
            r.local, r.peer, r.owner_comm, r.owner_pid
        );
        crate::metrics::get().decision(&crate::metrics::Decision {
            verdict: r.verdict,
            action: "restart",
            outcome,
            trouble_age_ms: r.trouble_age_ms,
        });
        macro_rules! decision {
            ($lvl:ident) => {
                tracing::$lvl!(target: "lifeline::decision", peer = %r.peer, local = %r.local, owner_pid = r.owner_pid,
                    owner_comm = %r.owner_comm, verdict = r.verdict, action = "restart", outcome, reason,
                    unit, trouble_age_ms = r.trouble_age_ms, retry_in_ms, "{message}")
            };
        }
        if outcome.starts_with("failed") {
            decision!(error);
        } else {
            decision!(warn);
        }
    }
}
