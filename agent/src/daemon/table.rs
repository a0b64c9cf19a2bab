//! The answer to `lifeline status`: the summary and a row per watched socket, built at the
//! request (a sweep never formats a row) from the agent's mirror of the probe's records and
//! the kernel's view of those sockets at that moment (one `sock_diag` dump,
//! `report/snapshot/kernel.rs`), serialised straight into the bytes the status thread writes: at
//! 100,000 sockets that is tens of MB, so nothing is copied or allocated per row. The
//! keepalive texts and endpoint memberships are the same for many sockets and are worked
//! out once each. The verdict shown is the judge's rule applied to the kernel's view then
//! (`judge::verdict::at_request`), and the answer's counts are those of its rows.

use std::{collections::HashMap, net::SocketAddr};

use anyhow::Result;

use super::Daemon;
use crate::{
    endpoint::Standing,
    judge::{self, Arming, Cookie, Deferred, Mono, Record, Verdict},
    kernel::diag::DiagSock,
    report::snapshot::{self, CLOSING, Extra, OwnerChecks},
};

struct SocketRows<'a> {
    records: Vec<Found<'a>>,
    extras: Vec<Extra<'a>>,
    now: Mono,
}

impl SocketRows<'_> {
    /// `,"sockets":[...]` with a row each (`StatusRow::write_json`).
    fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b",\"sockets\":[");
        for (i, (&(cookie, rec, _, _), x)) in self.records.iter().zip(&self.extras).enumerate() {
            if i > 0 {
                out.push(b',');
            }
            snapshot::row(cookie, rec, x, self.now).write_json(out);
        }
        out.push(b']');
    }
}

/// The endpoint column's key: the endpoint the socket is the connection of (None: not an
/// endpoint's) and its peer.
type EndpointKey = (Option<usize>, SocketAddr);

/// A record the kernel still has: its cookie, the record, the kernel's view of it (`None`
/// when the dump failed) and the endpoint it is the connection of.
type Found<'a> = (Cookie, &'a Record, Option<&'a DiagSock>, Option<usize>);

/// The keepalive column's key: the result, the values in force and the deferral.
type KaKey = (Arming, u32, u32, u32, Deferred);

impl Daemon {
    /// The JSON answer to `lifeline status`.
    ///
    /// # Errors
    /// When the answer cannot be serialised.
    pub(crate) fn status_body(&mut self) -> Result<Vec<u8>> {
        let t0 = std::time::Instant::now();
        let (kernel, kernel_error) = match snapshot::kernel::view(
            self.kernel.as_mut(),
            &self.mirror,
        ) {
            Ok(k) => {
                // The answer's cost in the kernel, apart (the status thread logs the whole).
                tracing::debug!(
                    sockets = k.len(),
                    dump_us = u64::try_from(t0.elapsed().as_micros()).unwrap_or(u64::MAX),
                    "status: the kernel's view read"
                );
                (Some(k), None)
            }
            Err(e) => {
                tracing::warn!(error = %e, "status: cannot read the kernel's view of the sockets; showing the agent's records");
                (None, Some(e.to_string()))
            }
        };
        let now = self.clock.now();
        let can_adopt = self.kernel.can_adopt();
        // Left out: a record whose socket the kernel no longer has (closed since the sweep).
        // Each socket's map lookups are made once, here: at 100,000 rows each one is
        // milliseconds.
        let found: Vec<Found<'_>> = self
            .mirror
            .iter()
            .filter_map(|(cookie, rec)| {
                let seen = match &kernel {
                    Some(k) => Some(k.get(&cookie)?),
                    None => None,
                };
                Some((cookie, rec, seen, self.tracked.endpoint_of(cookie)))
            })
            .collect();
        let mut keepalive: HashMap<KaKey, String> = HashMap::new();
        // Keyed by the endpoint the socket is the connection of (None: not the endpoint's)
        // and its peer: the endpoint's name and where the peer stands in its answers.
        let mut members: HashMap<EndpointKey, Option<(String, Standing)>> = HashMap::new();
        for &(_, rec, _, member) in &found {
            let k = &rec.keepalive;
            keepalive
                .entry((rec.arming, k.idle_s, k.intvl_s, k.cnt, rec.deferred))
                .or_insert_with(|| judge::idle::describe(rec, self.judge.keepalive(), can_adopt));
            members.entry((member, rec.peer)).or_insert_with(|| {
                let f = self.follow.as_ref()?;
                if let Some(i) = member {
                    let (name, m) = f.endpoints.of_member(i, rec.peer, f.grace);
                    return Some((name, Standing::from(m)));
                }
                let (i, m) = f.endpoints.standing(rec.peer, f.grace)?;
                Some((f.endpoints.name(i), Standing::from(m)))
            });
        }
        let (stall, silence) = (self.judge.stall(), self.judge.silence());
        let mut owners = OwnerChecks::new();
        // Per verdict (`Verdict::index`), and closing last: no allocation per row.
        let mut counts = [0u64; Verdict::ALL.len() + 1];
        let extras: Vec<Extra<'_>> = found
            .iter()
            .map(|&(cookie, rec, seen, member)| {
                let verdict = snapshot::kernel::shown(seen, stall, silence, || {
                    self.judge.shown(cookie, rec, now)
                });
                counts[verdict.map_or(Verdict::ALL.len(), Verdict::index)] += 1;
                let k = &rec.keepalive;
                Extra {
                    verdict,
                    kernel: seen,
                    owner: owners.of(rec, seen),
                    keepalive: keepalive
                        .get(&(rec.arming, k.idle_s, k.intvl_s, k.cnt, rec.deferred))
                        .map_or("", String::as_str),
                    endpoint: members
                        .get(&(member, rec.peer))
                        .and_then(Option::as_ref)
                        .map(|(n, m)| (n.as_str(), *m)),
                    endpoint_socket: Some(member.is_some()),
                }
            })
            .collect();
        let mut summary = self.summary();
        let rows = found.len();
        summary.watched = u64::try_from(rows).unwrap_or(u64::MAX);
        summary.verdicts = Verdict::ALL
            .iter()
            .map(|v| (v.label().to_owned(), counts[v.index()]))
            .chain(
                (counts[Verdict::ALL.len()] > 0)
                    .then(|| (CLOSING.to_owned(), counts[Verdict::ALL.len()])),
            )
            .collect();
        summary.kernel_error = kernel_error;
        let table = SocketRows {
            records: found,
            extras,
            now,
        };
        // About 470 bytes a row (measured at 10,000): one allocation, no copy as it grows.
        let mut out = Vec::with_capacity(4096 + rows * 512);
        // The summary's object (its own `sockets` is empty, so left out), reopened for the
        // table.
        serde_json::to_writer(&mut out, &summary)?;
        anyhow::ensure!(
            out.pop() == Some(b'}'),
            "the status summary is not a JSON object"
        );
        table.write_json(&mut out);
        out.push(b'}');
        Ok(out)
    }
}
