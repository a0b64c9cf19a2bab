//! The agent's half of `lifeline_common::restore`: what the application had on each armed
//! socket (`ORIGINALS`), the deferrals the daemon asks for (`DEFER`, applied by one TCP
//! iterator pass), and the final pass at a clean stop that puts back every option lifeline
//! changed. The programs that arm sockets are detached first, so nothing is armed after the
//! pass; the tc program stays until the object is dropped (it only adds an octet to probes of
//! sockets in a fast phase, and the pass pokes none).

use anyhow::{Context as _, Result};
use aya::{
    maps::{HashMap, MapData},
    programs::Program,
};
use lifeline_common::{
    hooks::Hook,
    maps,
    restore::{Defer, Original, RESTORE_DONE, opt},
    watch::RESTORE,
};

use super::{Probe, keepalive_fn};
use crate::judge::{Cookie, Record};

/// What a restore pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RestoreSummary {
    /// Sockets whose every changed option is the application's again.
    pub restored: usize,
    /// Sockets with at least one changed option left as lifeline set it.
    pub not_restored: usize,
    /// Per option bit (`lifeline_common::restore::opt`), how many sockets kept it.
    pub left: Vec<(u32, usize)>,
    /// Sockets whose `snd_ssthresh` lifeline set at an RTO (reported only: it can be neither
    /// read nor set back).
    pub clamped: usize,
    /// Sockets that keep lifeline's `sock_ops` callback flags (clearing them needs Linux
    /// 6.12): kernel state no application can see, inert once lifeline's programs are
    /// detached, so they count as restored and are reported apart.
    pub callbacks_kept: usize,
    /// Sockets the pass no longer found (closed meanwhile).
    pub gone: usize,
}

impl RestoreSummary {
    /// Sum up the entries a restore pass wrote.
    #[must_use]
    pub(crate) fn of(entries: impl Iterator<Item = Original>) -> Self {
        let mut r = Self::default();
        for o in entries {
            if o.changed == 0 {
                continue;
            }
            if o.changed & opt::CWND_CLAMP != 0 {
                r.clamped += 1;
            }
            if o.restored != RESTORE_DONE {
                r.gone += 1;
                continue;
            }
            if o.left & opt::CALLBACKS != 0 {
                r.callbacks_kept += 1;
            }
            let left = o.left & !(opt::CWND_CLAMP | opt::CALLBACKS);
            if left == 0 {
                r.restored += 1;
                continue;
            }
            r.not_restored += 1;
            for bit in (0..8).map(|i| 1u32 << i).filter(|b| left & b != 0) {
                match r.left.iter_mut().find(|(b, _)| *b == bit) {
                    Some((_, n)) => *n += 1,
                    None => r.left.push((bit, 1)),
                }
            }
        }
        r.left.sort_unstable();
        r
    }
}

impl Probe {
    /// What the application had on `cookie` (and what lifeline changed), when recorded.
    #[must_use]
    pub(crate) fn original(&self, cookie: Cookie) -> Option<Original> {
        let map = self.map(maps::ORIGINALS).ok()?;
        let map: HashMap<&MapData, u64, Original> = HashMap::try_from(map).ok()?;
        map.get(&cookie.0, 0).ok()
    }

    /// Every entry of `ORIGINALS`.
    pub(super) fn originals(&self) -> Vec<(u64, Original)> {
        self.map(maps::ORIGINALS)
            .ok()
            .and_then(|m| HashMap::<&MapData, u64, Original>::try_from(m).ok())
            .map(|m| m.iter().filter_map(Result::ok).collect())
            .unwrap_or_default()
    }

    /// Apply deferrals through one TCP iterator pass; returns each socket's record after it
    /// (its `deferred` says how it went), `None` when it is gone.
    ///
    /// # Errors
    /// When the map cannot be written or the iterator cannot run.
    pub(crate) fn defer(
        &mut self,
        entries: &[(Cookie, Defer)],
    ) -> Result<Vec<(Cookie, Option<Record>)>> {
        {
            let mut map: HashMap<&mut MapData, u64, Defer> =
                HashMap::try_from(self.map_mut(maps::DEFER)?)?;
            for (cookie, d) in entries {
                map.insert(cookie.0, d, 0)
                    .with_context(|| format!("writing the deferral of socket {cookie}"))?;
            }
        }
        keepalive_fn::run_iterator(&mut self.ebpf)?;
        entries
            .iter()
            .map(|(c, _)| Ok((*c, self.get(*c)?)))
            .collect()
    }

    /// Drop `cookie`'s entries here (its socket is gone; `sock_ops` removes them itself for
    /// sockets whose callbacks it sees).
    pub(super) fn forget_restore(&mut self, cookie: u64) {
        if let Ok(m) = self.map_mut(maps::ORIGINALS)
            && let Ok(mut map) = HashMap::<&mut MapData, u64, Original>::try_from(m)
        {
            let _ = map.remove(&cookie);
        }
        if let Ok(m) = self.map_mut(maps::DEFER)
            && let Ok(mut map) = HashMap::<&mut MapData, u64, Defer>::try_from(m)
        {
            let _ = map.remove(&cookie);
        }
    }

    /// The final pass: detach every program that arms or pokes, then put back on every
    /// socket with an `ORIGINALS` entry what lifeline changed. `Err` when it could not run
    /// (no TCP iterator on this kernel: what stays is in the entries, counted by the caller).
    ///
    /// # Errors
    /// When the iterator is unavailable or fails.
    pub(crate) fn restore_all(&mut self) -> Result<RestoreSummary> {
        self.detach_all_but_the_iterator();
        if !self.can_adopt {
            anyhow::bail!(
                "the TCP iterator cannot load on this kernel (bpf_setsockopt there needs Linux 5.15)"
            );
        }
        self.update_config(|c| c.flags |= RESTORE)?;
        let ran = keepalive_fn::run_iterator(&mut self.ebpf);
        self.update_config(|c| c.flags &= !RESTORE)?;
        ran?;
        Ok(RestoreSummary::of(
            self.originals().into_iter().map(|(_, o)| o),
        ))
    }

    /// Sockets lifeline changed an option on (what a stop without the iterator leaves).
    #[must_use]
    pub(crate) fn changed_sockets(&self) -> usize {
        self.originals()
            .iter()
            .filter(|(_, o)| o.changed & !opt::CWND_CLAMP != 0)
            .count()
    }

    /// Unload every program but the TCP iterator and the tc program: from here on no socket
    /// is armed, merged, poked or recorded.
    fn detach_all_but_the_iterator(&mut self) {
        let keep = [Hook::AdoptIter.program(), Hook::ProbeByte.program()];
        for (name, p) in self.ebpf.programs_mut() {
            if keep.contains(&name) {
                continue;
            }
            // Programs never loaded (a fallback not needed here) answer NotLoaded.
            let _ = match p {
                Program::SockOps(p) => p.unload(),
                Program::CgroupSockAddr(p) => p.unload(),
                Program::CgroupSockopt(p) => p.unload(),
                Program::TracePoint(p) => p.unload(),
                Program::FEntry(p) => p.unload(),
                Program::BtfTracePoint(p) => p.unload(),
                _ => Ok(()),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(changed: u32, restored: u32, left: u32) -> Original {
        Original {
            changed,
            restored,
            left,
            ..Original::default()
        }
    }

    #[test]
    fn a_pass_is_summed_per_socket_and_per_option() {
        let all = opt::KEEPALIVE_ALL;
        let r = RestoreSummary::of(
            [
                entry(all, RESTORE_DONE, 0),
                entry(all | opt::CALLBACKS, RESTORE_DONE, opt::CALLBACKS),
                entry(
                    all | opt::CWND_CLAMP,
                    RESTORE_DONE,
                    opt::CNT | opt::CWND_CLAMP,
                ),
                entry(all | opt::CWND_CLAMP, RESTORE_DONE, opt::CWND_CLAMP),
                entry(all, 0, 0),
                entry(0, 0, 0),
            ]
            .into_iter(),
        );
        assert_eq!(
            r,
            RestoreSummary {
                restored: 3,
                not_restored: 1,
                left: vec![(opt::CNT, 1)],
                clamped: 2,
                callbacks_kept: 1,
                gone: 1,
            }
        );
    }
}
