//! The status answer's dump split in two halves by local port (`kernel::view`), against a
//! kernel of plain values: every record is found once, whichever half lists it, and a half
//! that fails fails the answer rather than leaving its sockets out.

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Instant,
};

use super::kernel::{SPLIT_AT, view};
use crate::{
    judge::{Cookie, Record},
    kernel::{
        diag::{Destroyed, Diag, DiagError, DiagSock, PortRange},
        mirror::Mirror,
    },
};

/// The host's sockets; clones share the counts.
#[derive(Clone)]
struct Host {
    socks: Arc<Vec<DiagSock>>,
    /// Dumps of a port range, on any clone.
    ranged: Arc<AtomicUsize>,
    /// The other half's socket fails its dump.
    other_fails: bool,
    is_other: bool,
}

impl Diag for Host {
    fn get(
        &mut self,
        _: SocketAddr,
        _: SocketAddr,
        c: Cookie,
    ) -> Result<Option<DiagSock>, DiagError> {
        Ok(self.socks.iter().find(|d| d.cookie == c.0).cloned())
    }

    fn dump_each(
        &mut self,
        _: u8,
        _: u32,
        each: &mut dyn FnMut(DiagSock),
    ) -> Result<(), DiagError> {
        self.socks.iter().cloned().for_each(each);
        Ok(())
    }

    fn dump_ports(
        &mut self,
        _: u8,
        _: u32,
        ports: PortRange,
        each: &mut dyn FnMut(DiagSock),
    ) -> Result<(), DiagError> {
        self.ranged.fetch_add(1, Ordering::Relaxed);
        if self.is_other && self.other_fails {
            return Err(DiagError::Malformed);
        }
        let mine = self.socks.iter().filter(|d| ports.contains(d.local.port()));
        mine.cloned().for_each(each);
        Ok(())
    }

    fn another(&self) -> Option<Box<dyn Diag + Send>> {
        Some(Box::new(Self {
            is_other: true,
            ..self.clone()
        }))
    }

    fn destroy(&mut self, _: SocketAddr, _: SocketAddr, _: Cookie) -> Result<Destroyed, DiagError> {
        Ok(Destroyed::Gone)
    }
}

fn sock(cookie: u64, port: u16) -> DiagSock {
    DiagSock {
        local: SocketAddr::from(([198, 51, 100, 1], port)),
        peer: SocketAddr::from(([198, 51, 100, 2], 6443)),
        state: 1,
        cookie,
        inode: 7,
        uid: 0,
        send_q: 0,
        cgroup_id: None,
        info: None,
    }
}

/// `n` watched sockets on ports from 1,024, and 100 the node has besides.
fn host(n: u16, other_fails: bool) -> (Host, Mirror) {
    let watched: Vec<DiagSock> = (0..n).map(|i| sock(u64::from(i) + 1, 1_024 + i)).collect();
    let mut mirror = Mirror::default();
    let records = watched.iter().map(|d| {
        let rec = Record {
            local: d.local,
            peer: d.peer,
            ..Record::default()
        };
        (Cookie(d.cookie), rec)
    });
    mirror.replace(records.collect(), Instant::now(), 0);
    let others = (0..100).map(|i| sock(1_000_000 + i, 50_000 + u16::try_from(i).unwrap_or(0)));
    let socks = watched.into_iter().chain(others).collect();
    let h = Host {
        socks: Arc::new(socks),
        ranged: Arc::default(),
        other_fails,
        is_other: false,
    };
    (h, mirror)
}

#[test]
fn many_records_are_read_in_two_halves_and_each_found_once() {
    let n = u16::try_from(SPLIT_AT + 1_000).unwrap();
    let (mut h, mirror) = host(n, false);
    let found = view(&mut h, &mirror).unwrap();
    assert_eq!(h.ranged.load(Ordering::Relaxed), 2, "two halves");
    assert_eq!(
        found.len(),
        usize::from(n),
        "every watched socket, no other"
    );
    assert!(found.iter().all(|(c, d)| c.0 == d.cookie));
}

#[test]
fn few_records_are_one_dump_and_a_failed_half_fails_the_answer() {
    let (mut h, mirror) = host(100, false);
    assert_eq!(view(&mut h, &mirror).unwrap().len(), 100);
    assert_eq!(h.ranged.load(Ordering::Relaxed), 0, "one whole dump");
    let n = u16::try_from(SPLIT_AT).unwrap();
    let (mut h, mirror) = host(n, true);
    assert!(
        matches!(view(&mut h, &mirror), Err(DiagError::Malformed)),
        "the other half's failure"
    );
}
