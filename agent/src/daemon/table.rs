//! The answer to `lifeline status`: the summary and a row per watched socket, built at the
//! request (a sweep never formats a row) from the agent's mirror of the probe's records (kept
//! current by the probe's news, so no read of the whole map either) and serialised straight
//! from the records into the bytes the status thread writes: at 100,000 sockets that is
//! tens of MB, so nothing is copied or allocated per row. The keepalive texts and endpoint
//! memberships are the same for many sockets and are worked out once each.

use std::{collections::HashMap, net::SocketAddr};

use anyhow::Result;
use lifeline_common::SockState;

use super::Daemon;
use crate::{
    clock, judge,
    snapshot::{self, Extra},
};

struct Table<'a> {
    records: Vec<(u64, &'a SockState)>,
    extras: Vec<Extra<'a>>,
    now: u64,
}

impl Table<'_> {
    /// `,"sockets":[...]` with a row each (`Row::write_json`).
    fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b",\"sockets\":[");
        for (i, ((cookie, rec), x)) in self.records.iter().zip(&self.extras).enumerate() {
            if i > 0 {
                out.push(b',');
            }
            snapshot::row(*cookie, rec, x, self.now).write_json(out);
        }
        out.push(b']');
    }
}

/// The endpoint column's key: the endpoint the socket is the connection of (None: not an
/// endpoint's) and its peer.
type EndpointKey = (Option<usize>, SocketAddr);

/// The keepalive column's key: the result and the values in force.
type KaKey = (i32, u32, u32, u32);

impl Daemon {
    /// The JSON answer to `lifeline status`.
    ///
    /// # Errors
    /// When the answer cannot be serialised.
    pub fn status_body(&self) -> Result<Vec<u8>> {
        let records: Vec<(u64, &SockState)> = self.mirror.iter().collect();
        let now = clock::now_ns();
        let mut keepalive: HashMap<KaKey, String> = HashMap::new();
        // Keyed by the endpoint the socket is the connection of (None: not the endpoint's)
        // and its peer: the endpoint's name and where the peer stands in its answers.
        let mut members: HashMap<EndpointKey, Option<(String, &'static str)>> = HashMap::new();
        for (cookie, rec) in &records {
            let rec = *rec;
            let k = &rec.keepalive;
            keepalive
                .entry((rec.ka_result, k.idle_s, k.intvl_s, k.cnt))
                .or_insert_with(|| {
                    judge::idle::describe(rec, &self.judge.idle.want, self.probe.can_adopt)
                });
            let member = self.members.endpoint_of(*cookie);
            members.entry((member, rec.peer())).or_insert_with(|| {
                let f = self.follow.as_ref()?;
                if let Some(i) = member {
                    let (name, m) = f.endpoints.of_member(i, rec.peer(), f.grace);
                    return Some((name, m.label()));
                }
                let (i, m) = f.endpoints.standing(rec.peer(), f.grace)?;
                Some((f.endpoints.name(i), m.label()))
            });
        }
        let extras = records
            .iter()
            .map(|(cookie, rec)| {
                let rec = *rec;
                let k = &rec.keepalive;
                let member = self.members.endpoint_of(*cookie);
                Extra {
                    verdict: self
                        .tally
                        .get(*cookie)
                        .unwrap_or_else(|| self.judge.between(*cookie, rec, now)),
                    info: self.looked.get(cookie),
                    keepalive: keepalive
                        .get(&(rec.ka_result, k.idle_s, k.intvl_s, k.cnt))
                        .map_or("", String::as_str),
                    endpoint: members
                        .get(&(member, rec.peer()))
                        .and_then(Option::as_ref)
                        .map(|(n, m)| (n.as_str(), *m)),
                    endpoint_socket: Some(member.is_some()),
                }
            })
            .collect();
        let summary = self.summary();
        let rows = records.len();
        let table = Table {
            records,
            extras,
            now,
        };
        // About 350 bytes a row: one allocation, no copy as it grows.
        let mut out = Vec::with_capacity(4096 + rows * 384);
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
