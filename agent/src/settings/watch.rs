//! What the watch settings imply: the silent rule and the probe's keepalive entry.

use std::time::Duration;

use lifeline_common::Keepalive as KeepaliveMap;

use super::run::Watch;

impl Watch {
    /// The silent rule from `--silent-probes` and `--silent-timeout`, as (timeout, probes);
    /// `None` when keepalive is off. The default timeout is the least time N probes can
    /// take once the peer stopped answering: the first unanswered probe, one INTERVAL to the
    /// second, then the fast-probe interval to each of the rest (INTERVAL + (N - 1) x FAST);
    /// with `--fast-probes off`, IDLE + N x INTERVAL as the kernel sends them.
    ///
    /// # Errors
    /// When COUNT does not exceed the probes: the kernel would abort the connection itself
    /// before lifeline could ever judge it (and log why).
    pub(crate) fn silence(&self) -> Result<Option<(Duration, u8)>, String> {
        let Some(ka) = self.keepalive else {
            return Ok(None);
        };
        if ka.count <= u32::from(self.silent_probes) {
            return Err(format!(
                "--keepalive COUNT {} must exceed --silent-probes {}: the kernel aborts an idle connection after COUNT unanswered probes, before lifeline could judge it",
                ka.count, self.silent_probes
            ));
        }
        let n = u32::from(self.silent_probes);
        let after = self
            .silent_timeout
            .unwrap_or_else(|| match self.fast_probes {
                Some(fast) => ka.interval + fast * n.saturating_sub(1),
                None => ka.idle + ka.interval * n,
            });
        Ok(Some((after, self.silent_probes)))
    }

    /// `--keepalive` and `--user-timeout` as the probe's `KEEPALIVE` map entry.
    #[must_use]
    pub(crate) fn keepalive_map(&self) -> KeepaliveMap {
        let secs = |d: Duration| u32::try_from(d.as_secs()).unwrap_or(u32::MAX);
        let user_timeout_ms = self
            .user_timeout
            .map_or(0, |d| u32::try_from(d.as_millis()).unwrap_or(u32::MAX));
        self.keepalive.map_or(
            KeepaliveMap {
                user_timeout_ms,
                ..KeepaliveMap::default()
            },
            |k| KeepaliveMap {
                idle_s: secs(k.idle),
                intvl_s: secs(k.interval),
                cnt: k.count,
                user_timeout_ms,
            },
        )
    }

    /// `--keepalive` as the ready event prints it.
    #[must_use]
    pub(crate) fn keepalive_text(&self) -> String {
        self.keepalive.map_or_else(
            || "off".to_owned(),
            |k| format!("{:?},{:?},{}", k.idle, k.interval, k.count),
        )
    }
}
