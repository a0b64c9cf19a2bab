//! The deferrals' log lines (target `lifeline::defer`): each deferral with its evidence and
//! what the kernel will do now, each return of lifeline's own values with why.

use std::time::Duration;

use lifeline_common::{
    Keepalive,
    restore::{DEFER_END, Defer},
};

use crate::judge::{
    Deferred, Record, TcpInfo,
    defer::{App, AppKeepalive, Deferral, KeepalivePlan},
};

/// Why lifeline only observes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Observe {
    DryRun,
    Hold,
}

impl Observe {
    pub(super) const fn label(self) -> &'static str {
        match self {
            Self::DryRun => "dry-run",
            Self::Hold => "hold",
        }
    }
}

/// What a pending entry is logged as.
pub(super) enum Say {
    Deferred {
        mode: Observe,
        plan: Deferral,
        app: App,
        info: TcpInfo,
    },
    Resumed(&'static str),
}

/// The deferral's one line, with its evidence.
pub(super) fn log(rec: &Record, entry: &Defer, say: &Say) {
    let (peer, local, pid) = (rec.peer, rec.local, rec.owner_pid);
    let comm = rec.comm().unwrap_or("-");
    if let Deferred::Refused(errno) = rec.deferred {
        tracing::warn!(target: "lifeline::defer", peer = %peer, local = %local, errno = errno.0,
            "the kernel refused to re-time this socket's keepalive: it may be aborted at lifeline's own count");
        return;
    }
    match say {
        Say::Resumed(why) => {
            tracing::info!(target: "lifeline::defer", event = "resumed", peer = %peer, local = %local,
            owner_pid = pid, owner_comm = comm, why, keepalive = %values(&rec.keepalive),
            "lifeline's keepalive is back on socket {local} -> {peer}: {why}");
        }
        Say::Deferred {
            mode,
            plan,
            app,
            info,
        } => {
            let mode = mode.label();
            let ms =
                |d: Option<Duration>| d.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
            let what = match plan.keepalive {
                KeepalivePlan::Off => {
                    "keepalive off: the kernel never aborts it while idle, as without lifeline"
                        .to_owned()
                }
                KeepalivePlan::Align { intvl_s, .. } => format!(
                    "a probe every {intvl_s} s, the kernel's abort {} s after the last answer, the application's own deadline",
                    plan.abort_after.map_or(0, |d| d.as_secs())
                ),
                KeepalivePlan::Keep | KeepalivePlan::Due => "keepalive as it is".to_owned(),
            };
            let evidence = if info.unacked > 0 && info.probes > 0 {
                format!(
                    "{} keepalive probes, then {} RTOs of data, unanswered in a row",
                    info.probes, info.retransmits
                )
            } else if info.unacked > 0 {
                format!("{} transmissions in a row unanswered", info.retransmits)
            } else {
                format!("{} keepalive probes unanswered", info.probes)
            };
            tracing::warn!(target: "lifeline::defer", event = "deferred", mode, peer = %peer, local = %local,
                owner_pid = pid, owner_comm = comm, keepalive_probes = info.probes, last_ack_age_ms = info.last_ack_recv_ms,
                unanswered_rtos = info.retransmits, app_keepalive = %app_text(app), kind = entry.kind,
                abort_after_ms = ms(plan.abort_after), app_deadline_ms = ms(plan.app_deadline),
                user_timeout_ms = plan.user_timeout_ms,
                "{mode}: lifeline only observes socket {local} -> {peer} ({comm}/{pid}): {evidence}, nothing from the peer for {} ms; so that its own probing ends nothing, {what} (the application's keepalive: {})",
                info.last_ack_recv_ms, app_text(app));
        }
    }
    debug_assert!(entry.kind != DEFER_END || matches!(say, Say::Resumed(_)));
}

fn values(k: &Keepalive) -> String {
    format!("{}s,{}s,{}", k.idle_s, k.intvl_s, k.cnt)
}

fn app_text(app: &App) -> String {
    match app.keepalive {
        AppKeepalive::Off => "off".to_owned(),
        AppKeepalive::Unknown => "unknown".to_owned(),
        AppKeepalive::On {
            idle_s,
            intvl_s,
            cnt,
        } => format!("{idle_s}s,{intvl_s}s,{cnt}"),
    }
}
