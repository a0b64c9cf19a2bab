//! `Kernel` for the fake (`fake.rs`): what the probe and `sock_diag` would answer about
//! its sockets at the fake clock's moment. The parts no sweep test exercises (deferrals,
//! restore, the path's map) answer as a kernel without them would; the fast probes are off
//! unless a test sets their interval.

use std::{net::SocketAddr, path::Path, time::Duration};

use anyhow::Result;
use lifeline_common::{
    news::{self, News},
    restore::{Defer, Original},
};

use super::{
    fake::{Fake, Host},
    kernel::{Counters, Kernel},
};
use crate::{
    act::owner::Scopes,
    endpoint::Follow,
    judge::{Cookie, Mono, Record},
    kernel::{
        diag::{Destroyed, Diag, DiagError, DiagSock},
        probe::{FastStatus, RestoreSummary},
    },
    settings::Targets,
    watch::{TargetStatus, adopt::Adopted},
};

impl Diag for Fake {
    fn get(
        &mut self,
        _local: SocketAddr,
        _peer: SocketAddr,
        cookie: Cookie,
    ) -> Result<Option<DiagSock>, DiagError> {
        let mut h = self.host();
        h.gets += 1;
        Ok(h.socks.get(&cookie).map(|s| s.diag(cookie, h.now)))
    }

    fn dump_each(
        &mut self,
        _family: u8,
        _states: u32,
        each: &mut dyn FnMut(DiagSock),
    ) -> Result<(), DiagError> {
        let all: Vec<DiagSock> = {
            let h = self.host();
            h.socks.iter().map(|(c, s)| s.diag(*c, h.now)).collect()
        };
        all.into_iter().for_each(each);
        Ok(())
    }

    /// The socket is aborted: gone from `sock_diag` and from the probe's map (its CLOSE
    /// callback), with the news of it.
    fn destroy(
        &mut self,
        _local: SocketAddr,
        _peer: SocketAddr,
        cookie: Cookie,
    ) -> Result<Destroyed, DiagError> {
        let mut h = self.host();
        if h.socks.remove(&cookie).is_none() {
            return Ok(Destroyed::Gone);
        }
        h.destroyed.push(cookie);
        h.news.push(News {
            cookie: cookie.0,
            kind: news::CLOSE,
            arg: 0,
        });
        Ok(Destroyed::Killed)
    }
}

impl Kernel for Fake {
    /// The news queued by the test, then a TROUBLE for each armed socket whose episode
    /// had an RTO since (one item per sweep however many fired, as the ring buffer's items
    /// are taken: the record has the count).
    fn news(&mut self) -> Vec<News> {
        let mut h = self.host();
        let now = h.now;
        let mut out = std::mem::take(&mut h.news);
        for (c, s) in &mut h.socks {
            let rec = s.record(now);
            if s.armed && rec.trouble.is_some() && rec.rto_count > s.told {
                s.told = rec.rto_count;
                out.push(News {
                    cookie: c.0,
                    kind: news::TROUBLE,
                    arg: rec.rto_count,
                });
            }
        }
        out
    }

    fn news_dropped(&self) -> u64 {
        0
    }

    fn stats(&self) -> Result<Counters> {
        Ok(Counters::default())
    }

    fn records(&self) -> Result<Vec<(Cookie, Record)>> {
        let h = self.host();
        Ok(h.socks.iter().map(|(c, s)| (*c, s.record(h.now))).collect())
    }

    fn record(&self, cookie: Cookie) -> Result<Option<Record>> {
        let h = self.host();
        Ok(h.socks.get(&cookie).map(|s| s.record(h.now)))
    }

    fn forget(&mut self, _cookie: Cookie) {}

    /// The sockets queued for adoption, once: the armed ones with their callbacks, the
    /// others polled.
    fn watch(&mut self, _follow: Option<&Follow>, _keepalive: bool) -> Adopted {
        let mut h = self.host();
        let mut adopted = Adopted::default();
        for c in std::mem::take(&mut h.adopt) {
            if let Some(s) = h.socks.get(&c) {
                adopted.all.insert(c);
                if !s.armed {
                    adopted.polled.insert(c);
                }
            }
        }
        adopted
    }

    fn target_status(&self) -> Vec<TargetStatus> {
        Vec::new()
    }

    /// kubelet, by its name: every kill spends one budget.
    fn scopes(&self, unit_dir: Option<&Path>) -> Scopes {
        let targets = Targets {
            comms: vec!["kubelet".into()],
            ..Targets::default()
        };
        Scopes::read(&targets, unit_dir)
    }

    fn can_adopt(&self) -> bool {
        true
    }

    fn add_path_peer(&mut self, _peer: SocketAddr) -> Result<()> {
        Ok(())
    }

    fn remove_path_peer(&mut self, _peer: SocketAddr) {}

    fn path_alive(&mut self, _peer: SocketAddr, _at: Mono) {}

    fn fast_interval(&self) -> Option<Duration> {
        self.host().fast
    }

    fn fast_devices(&mut self, peers: Vec<std::net::IpAddr>) {
        self.host().fast_peers.push(peers);
    }

    fn fast_status(&self) -> FastStatus {
        FastStatus::default()
    }

    fn fast_pass(&mut self) -> Result<()> {
        let mut h = self.host();
        h.passes += 1;
        let Host { poke, socks, .. } = &mut *h;
        poke.retain(|c| socks.get(c).is_some_and(|s| s.probes_out > 0));
        Ok(())
    }

    fn fast_open(&self, cookie: Cookie) -> bool {
        self.host().poke.contains(&cookie)
    }

    fn fast_close(&mut self, cookie: Cookie) {
        self.host().poke.remove(&cookie);
    }

    fn fast_open_now(&mut self, cookie: Cookie) -> bool {
        let mut h = self.host();
        h.fast.is_some() && h.socks.contains_key(&cookie) && h.poke.insert(cookie)
    }

    fn original(&self, _cookie: Cookie) -> Option<Original> {
        None
    }

    fn defer(&mut self, entries: &[(Cookie, Defer)]) -> Result<Vec<(Cookie, Option<Record>)>> {
        entries
            .iter()
            .map(|(c, _)| Ok((*c, self.record(*c)?)))
            .collect()
    }

    fn restore(&mut self) -> Result<RestoreSummary, (anyhow::Error, usize)> {
        Ok(RestoreSummary::default())
    }
}
