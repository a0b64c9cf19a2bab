//! The answer to `lifeline status`: the summary and a row per watched socket, read from the
//! map at the request (a sweep never formats a row) and serialised straight from the records
//! into the bytes the status thread writes: at 100,000 sockets that is 30 MB, so nothing is
//! copied or allocated per row. The keepalive texts and endpoint memberships are the same
//! for many sockets and are worked out once each.

use std::{collections::HashMap, net::SocketAddr};

use anyhow::Result;
use lifeline_common::SockState;
use serde::{Serialize, Serializer, ser::SerializeSeq};

use super::Daemon;
use crate::{
    clock, judge,
    snapshot::{self, Extra},
    status::Snapshot,
};

#[derive(Serialize)]
struct Answer<'a> {
    #[serde(flatten)]
    summary: &'a Snapshot,
    sockets: Table<'a>,
}

struct Table<'a> {
    records: &'a [(u64, SockState)],
    extras: Vec<Extra<'a>>,
    now: u64,
}

impl Serialize for Table<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.records.len()))?;
        for ((cookie, rec), x) in self.records.iter().zip(&self.extras) {
            seq.serialize_element(&snapshot::row(*cookie, rec, x, self.now))?;
        }
        seq.end()
    }
}

/// The keepalive column's key: the result and the values in force.
type KaKey = (i32, u32, u32, u32);

impl Daemon {
    /// The JSON answer to `lifeline status`.
    ///
    /// # Errors
    /// When the probe's map cannot be read.
    pub fn status_body(&self) -> Result<Vec<u8>> {
        let records = self.probe.sockets()?;
        let now = clock::now_ns();
        let mut keepalive: HashMap<KaKey, String> = HashMap::new();
        let mut members: HashMap<SocketAddr, Option<(String, &'static str)>> = HashMap::new();
        for (_, rec) in &records {
            let k = &rec.keepalive;
            keepalive
                .entry((rec.ka_result, k.idle_s, k.intvl_s, k.cnt))
                .or_insert_with(|| {
                    judge::idle::describe(rec, &self.judge.idle.want, self.probe.can_adopt)
                });
            members.entry(rec.peer()).or_insert_with(|| {
                let f = self.follow.as_ref()?;
                let (name, m) = f.endpoints.membership(rec.peer(), f.grace)?;
                Some((name, m.label()))
            });
        }
        let extras = records
            .iter()
            .map(|(cookie, rec)| {
                let k = &rec.keepalive;
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
                        .get(&rec.peer())
                        .and_then(Option::as_ref)
                        .map(|(n, m)| (n.as_str(), *m)),
                }
            })
            .collect();
        let summary = self.summary();
        let answer = Answer {
            summary: &summary,
            sockets: Table {
                records: &records,
                extras,
                now,
            },
        };
        // About 300 bytes a row.
        let mut out = Vec::with_capacity(4096 + records.len() * 320);
        serde_json::to_writer(&mut out, &answer)?;
        Ok(out)
    }
}
