//! The agent's decision events (`target == "lifeline::decision"`), parsed for assertions.

use serde_json::Value;

/// One decision event with its evidence. Numbers are read leniently (tracing may record a
/// field as a number or as a string).
#[derive(Clone, Debug)]
pub struct Decision {
    /// `CLOCK_MONOTONIC` ms when the test read the line.
    pub at_ms: u64,
    /// The agent's own timestamp, converted to `CLOCK_MONOTONIC` ms (None if unparseable):
    /// a log line is read a little after it is written, and a timeline needs the real order.
    pub logged_ms: Option<u64>,
    pub peer: String,
    pub local: String,
    pub owner_pid: Option<u64>,
    pub verdict: String,
    pub action: String,
    pub outcome: String,
    pub last_ack_age_ms: Option<u64>,
    pub unacked_bytes: Option<u64>,
    pub retransmits: Option<u64>,
    /// RTOs in a row when it was decided (`tcpi_retransmits`): the stall's evidence.
    pub unanswered_rtos: Option<u64>,
    /// Keepalive probes that left with an octet of old data (fast probes), as of the
    /// socket's last news.
    pub probe_bytes: Option<u64>,
    /// The endpoint the socket belongs to (`api.lab.test:6443`), when it belongs to one.
    pub endpoint: String,
    /// How long the peer had been out of the set, for "orphaned".
    pub orphaned_for_ms: Option<u64>,
    /// For an orphan migrated at once, the failed round trip that made it so ("unanswered",
    /// "retransmitting"); empty otherwise.
    pub early: String,
    /// The event's message (e.g. "... no healthy endpoint, holding" for a hold).
    pub message: String,
    pub raw: Value,
}

impl Decision {
    #[must_use]
    pub fn from_json(at_ms: u64, raw: Value) -> Self {
        let f = Fields::of(&raw);
        let s = |k: &str| f.text(k);
        let n = |k: &str| f.num(k);
        let logged_ms = raw
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(rfc3339_ms)
            .and_then(wall_to_mono);
        Self {
            at_ms,
            logged_ms,
            peer: s("peer"),
            local: s("local"),
            owner_pid: n("owner_pid"),
            verdict: s("verdict"),
            action: s("action"),
            outcome: s("outcome"),
            last_ack_age_ms: n("last_ack_age_ms"),
            unacked_bytes: n("unacked_bytes"),
            retransmits: n("retransmits"),
            unanswered_rtos: n("unanswered_rtos"),
            probe_bytes: n("probe_bytes"),
            endpoint: s("endpoint"),
            orphaned_for_ms: n("orphaned_for_ms"),
            early: s("early"),
            message: s("message"),
            raw,
        }
    }

    /// Whether `local` ends with `:PORT` (the decision is about that client socket).
    #[must_use]
    pub fn is_for_port(&self, local_port: u16) -> bool {
        self.local.rsplit(':').next() == Some(local_port.to_string().as_str())
    }
}

/// An RFC 3339 UTC time (the agent's log, Prometheus' `activeAt`) as `CLOCK_MONOTONIC` ms,
/// so it compares with the lab's own observations.
#[must_use]
pub fn rfc3339_mono_ms(ts: &str) -> Option<u64> {
    rfc3339_ms(ts).and_then(wall_to_mono)
}

/// `2026-12-02T20:37:38.768274Z` (UTC, as tracing-subscriber writes it) to Unix ms.
fn rfc3339_ms(ts: &str) -> Option<u64> {
    let (date, time) = ts.strip_suffix('Z')?.split_once('T')?;
    let d: Vec<i64> = date
        .split('-')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let (hms, frac) = time.split_once('.').unwrap_or((time, "0"));
    let t: Vec<i64> = hms
        .split(':')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let (&[y, m, day], &[hh, mm, ss]) = (d.as_slice(), t.as_slice()) else {
        return None;
    };
    // Days from 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let ms: i64 = format!("{frac:0<3}").get(..3)?.parse().ok()?;
    u64::try_from(((days * 24 + hh) * 60 + mm) * 60_000 + ss * 1000 + ms).ok()
}

/// Unix ms to `CLOCK_MONOTONIC` ms, through the current offset between the two clocks.
fn wall_to_mono(wall_ms: u64) -> Option<u64> {
    let now_wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    let now_wall = u64::try_from(now_wall.as_millis()).ok()?;
    let now_mono = crate::infra::util::mono_ms();
    (wall_ms + now_mono).checked_sub(now_wall)
}

/// The `fields` of a tracing JSON line, read leniently: tracing may record a field as a
/// number or as a string. Shared by every log parser of the lab.
pub(crate) struct Fields(Value);

impl Fields {
    pub(crate) fn of(raw: &Value) -> Self {
        Self(raw.get("fields").cloned().unwrap_or(Value::Null))
    }

    /// The field as text; empty when absent.
    pub(crate) fn text(&self, k: &str) -> String {
        match self.0.get(k) {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => String::new(),
        }
    }

    /// The raw field, when present.
    pub(crate) fn get(&self, k: &str) -> Option<&Value> {
        self.0.get(k)
    }

    pub(crate) fn num(&self, k: &str) -> Option<u64> {
        self.0
            .get(k)
            .and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok()))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_tracing_timestamps() {
        assert_eq!(super::rfc3339_ms("1970-01-01T00:00:01.5Z"), Some(1500));
        assert_eq!(
            super::rfc3339_ms("2026-12-02T20:37:38.768274Z"),
            Some(1_796_243_858_768)
        );
        assert_eq!(super::rfc3339_ms("garbage"), None);
    }
}
