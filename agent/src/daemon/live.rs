//! The kernel the loop runs against in `lifeline run`: the loaded probe, a `sock_diag`
//! socket, the watch stage's state and the news inbox, behind `Kernel`.

use std::{net::SocketAddr, path::Path, time::Duration};

use anyhow::Result;
use lifeline_common::{
    news::News,
    restore::{Defer, Original},
};

use super::kernel::{Counters, Kernel};
use crate::{
    act::owner::Scopes,
    endpoint::Follow,
    judge::{Cookie, Mono, Record},
    kernel::{
        diag::{Destroyed, Diag, DiagError, DiagSock, SockDiag},
        probe::{FastStatus, Probe, RestoreSummary},
        readers::Inbox,
    },
    watch::{TargetStatus, Watching, adopt::Adopted},
};

/// The kernel itself: the loaded probe, a `sock_diag` socket, the watch stage's state and
/// the news inbox the ring-buffer reader fills.
pub(crate) struct Live {
    pub probe: Probe,
    pub diag: SockDiag,
    pub watching: Watching,
    pub news: Inbox,
}

impl Live {
    pub(crate) fn new(probe: Probe, diag: SockDiag, watching: Watching, news: Inbox) -> Self {
        Self {
            probe,
            diag,
            watching,
            news,
        }
    }
}

impl Diag for Live {
    fn get(
        &mut self,
        local: SocketAddr,
        peer: SocketAddr,
        cookie: Cookie,
    ) -> Result<Option<DiagSock>, DiagError> {
        Diag::get(&mut self.diag, local, peer, cookie)
    }

    fn dump_each(
        &mut self,
        family: u8,
        states: u32,
        each: &mut dyn FnMut(DiagSock),
    ) -> Result<(), DiagError> {
        Diag::dump_each(&mut self.diag, family, states, each)
    }

    fn destroy(
        &mut self,
        local: SocketAddr,
        peer: SocketAddr,
        cookie: Cookie,
    ) -> Result<Destroyed, DiagError> {
        Diag::destroy(&mut self.diag, local, peer, cookie)
    }
}

impl Kernel for Live {
    fn news(&mut self) -> Vec<News> {
        self.news.take()
    }

    fn news_dropped(&self) -> u64 {
        self.news.dropped()
    }

    fn stats(&self) -> Result<Counters> {
        self.probe.stats()
    }

    fn records(&self) -> Result<Vec<(Cookie, Record)>> {
        self.probe.sockets()
    }

    fn record(&self, cookie: Cookie) -> Result<Option<Record>> {
        self.probe.get(cookie)
    }

    fn forget(&mut self, cookie: Cookie) {
        self.probe.forget(cookie);
    }

    fn watch(&mut self, follow: Option<&Follow>, keepalive: bool) -> Adopted {
        self.watching
            .sync(&mut self.probe, &mut self.diag, follow, keepalive)
    }

    fn target_status(&self) -> Vec<TargetStatus> {
        self.watching.status.clone()
    }

    fn scopes(&self, unit_dir: Option<&Path>) -> Scopes {
        Scopes::read(&self.watching.targets, unit_dir)
    }

    fn can_adopt(&self) -> bool {
        self.probe.can_adopt
    }

    fn add_path_peer(&mut self, peer: SocketAddr) -> Result<()> {
        self.probe.add_path_peer(peer)
    }

    fn remove_path_peer(&mut self, peer: SocketAddr) {
        self.probe.remove_path_peer(peer);
    }

    fn path_alive(&mut self, peer: SocketAddr, at: Mono) {
        self.probe.path_alive(peer, at);
    }

    fn fast_interval(&self) -> Option<Duration> {
        self.probe.fast.as_ref().ok().map(|f| f.interval)
    }

    fn fast_devices(&mut self, peers: Vec<std::net::IpAddr>) {
        self.probe.fast_devices(peers.into_iter());
    }

    fn fast_status(&self) -> FastStatus {
        self.probe.fast_status()
    }

    fn fast_pass(&mut self) -> Result<()> {
        self.probe.fast_pass()
    }

    fn fast_open(&self, cookie: Cookie) -> bool {
        self.probe.fast_open(cookie)
    }

    fn fast_close(&mut self, cookie: Cookie) {
        self.probe.fast_close(cookie);
    }

    fn fast_open_now(&mut self, cookie: Cookie) -> bool {
        self.probe.fast_open_now(cookie)
    }

    fn original(&self, cookie: Cookie) -> Option<Original> {
        self.probe.original(cookie)
    }

    fn defer(&mut self, entries: &[(Cookie, Defer)]) -> Result<Vec<(Cookie, Option<Record>)>> {
        self.probe.defer(entries)
    }

    fn restore(&mut self) -> Result<RestoreSummary, (anyhow::Error, usize)> {
        let done = self
            .probe
            .restore_all()
            .map_err(|e| (e, self.probe.changed_sockets()));
        crate::kernel::probe::pin::unpin();
        done
    }
}
