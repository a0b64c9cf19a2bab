//! A record's entries, written and removed together as the kernel side does
//! (`agent-ebpf/src/sockops.rs`): the record in `SOCKETS`, its addresses in `TUPLES` (for
//! the `setsockopt` hook), and, for a socket watched only for its peer, its place in
//! `ENDPOINT_QUOTA` (the endpoint clients' share of `SOCKETS`). An entry left behind would
//! hold capacity for a socket nobody watches.

use anyhow::{Context as _, Result, bail};
use aya::maps::{HashMap, MapData, MapError};
use lifeline_common::{
    SockState, maps,
    sockopt::{AppSet, SockKey},
    watch::BY_ENDPOINT,
};

use super::Probe;
use crate::judge::Cookie;

/// `BPF_NOEXIST` (include/uapi/linux/bpf.h): insert only if the key is absent.
const BPF_NOEXIST: u64 = 1;

fn exists(e: &MapError) -> bool {
    matches!(e, MapError::SyscallError(e) if e.io_error.raw_os_error() == Some(libc::EEXIST))
}

impl Probe {
    /// Record a socket found by `sock_diag` unless the kernel side already has it; `true`
    /// when recorded now. A socket watched only for its peer takes its place in the
    /// endpoint clients' share first, as `sock_ops` does.
    ///
    /// # Errors
    /// When a map is full (that share, or `SOCKETS`) or cannot be written.
    pub(crate) fn seed(&mut self, cookie: u64, state: &SockState) -> Result<bool> {
        let took_quota = state.reasons == BY_ENDPOINT && self.take_quota(cookie)?;
        let mut map: HashMap<&mut MapData, u64, SockState> =
            HashMap::try_from(self.map_mut(maps::SOCKETS)?)?;
        let inserted = match map.insert(cookie, state, BPF_NOEXIST) {
            Err(e) if exists(&e) => Ok(false),
            r => r
                .map(|()| true)
                .context("SOCKETS map full: a pre-existing socket is NOT watched"),
        };
        if took_quota && !matches!(inserted, Ok(true)) {
            self.remove_entry(maps::ENDPOINT_QUOTA, cookie);
        }
        if matches!(inserted, Ok(true)) {
            let mut tuples: HashMap<&mut MapData, SockKey, AppSet> =
                HashMap::try_from(self.map_mut(maps::TUPLES)?)?;
            let app = AppSet {
                cookie,
                ..AppSet::default()
            };
            // Full: the `setsockopt` hook leaves this socket's options alone, as for a new one.
            let _ = tuples.insert(SockKey::of(state), app, 0);
        }
        inserted
    }

    /// `true` when this call took the socket's place in `ENDPOINT_QUOTA`.
    fn take_quota(&mut self, cookie: u64) -> Result<bool> {
        let mut quota: HashMap<&mut MapData, u64, u8> =
            HashMap::try_from(self.map_mut(maps::ENDPOINT_QUOTA)?)?;
        match quota.insert(cookie, 1, BPF_NOEXIST) {
            Ok(()) => Ok(true),
            Err(e) if exists(&e) => Ok(false),
            Err(e) => bail!(
                "the endpoint clients' share of SOCKETS (a quarter of --max-sockets) is full: a pre-existing socket watched only for its peer is NOT watched ({e})"
            ),
        }
    }

    /// Drop a record whose socket no longer exists, with its other entries.
    pub(crate) fn forget(&mut self, cookie: Cookie) {
        let cookie = cookie.0;
        if let Ok(m) = self.map_mut(maps::SOCKETS)
            && let Ok(mut map) = HashMap::<&mut MapData, u64, SockState>::try_from(m)
            && let Ok(rec) = map.get(&cookie, 0)
        {
            let _ = map.remove(&cookie);
            let key = SockKey::of(&rec);
            if let Ok(m) = self.map_mut(maps::TUPLES)
                && let Ok(mut tuples) = HashMap::<&mut MapData, SockKey, AppSet>::try_from(m)
                // Only its own: a newer socket may have the same addresses by now.
                && tuples.get(&key, 0).is_ok_and(|a| a.cookie == cookie)
            {
                let _ = tuples.remove(&key);
            }
        }
        self.remove_entry(maps::ENDPOINT_QUOTA, cookie);
        self.forget_restore(cookie);
    }

    fn remove_entry(&mut self, name: &str, cookie: u64) {
        if let Ok(m) = self.map_mut(name)
            && let Ok(mut map) = HashMap::<&mut MapData, u64, u8>::try_from(m)
        {
            let _ = map.remove(&cookie);
        }
    }
}
