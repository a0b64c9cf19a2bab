//! One socket's verdict: the probe's record nominates, the kernel's `tcp_info` confirms.

use lifeline_common::SockState;

use crate::{
    daemon::Daemon,
    detect::{self, Verdict},
    diag::TcpInfo,
};

impl Daemon {
    /// One socket's verdict, and the kernel's `tcp_info` when it was read. `None`: the
    /// socket is gone.
    ///
    /// The record nominates (stalled), or the socket is idle long enough to be due a
    /// keepalive look, or it is a polled socket; then only the kernel's current view can
    /// confirm, and without it nothing is ever dead.
    pub(crate) fn judge(
        &mut self,
        cookie: u64,
        rec: &SockState,
        now: u64,
    ) -> Option<(Verdict, Option<TcpInfo>)> {
        let polled = self.polled.contains(&cookie);
        let from_record = detect::from_record(rec, now, self.stall);
        let idle_due = !polled
            && matches!(from_record, Verdict::Idle | Verdict::Healthy)
            && self.idle.due(cookie, rec, now);
        if !(polled || idle_due || from_record == Verdict::Stalled) {
            return Some((from_record, None));
        }
        let info = match self.diag.get(rec.local(), rec.peer(), cookie) {
            Ok(None) => {
                // Closed between the map read and now (or in another netns).
                self.probe.forget(cookie);
                self.polled.remove(&cookie);
                return None;
            }
            Ok(Some(d)) => d.info,
            Err(e) => {
                self.report_unreadable(cookie, rec, &e);
                None
            }
        };
        let Some(i) = info else {
            return Some((Verdict::Suspect, None));
        };
        if polled || idle_due {
            self.idle.looked(cookie, &i, now);
        }
        let kernel = detect::from_info(&i, self.stall, self.idle.silent);
        let verdict = match kernel {
            _ if polled => kernel,
            Verdict::Stalled if from_record == Verdict::Stalled => Verdict::Stalled,
            Verdict::Silent | Verdict::Suspect if idle_due => kernel,
            _ if idle_due => from_record,
            _ => Verdict::Suspect,
        };
        Some((verdict, info))
    }
}
