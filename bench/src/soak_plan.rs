//! The loss soak's timetable: three phases of ten minutes (shortened in proportion with
//! `--soak-minutes`), the loss in force each second, and when the server is paused.

/// One phase of the soak, in seconds from its start.
#[derive(Clone, Debug)]
pub(crate) struct Phase {
    pub name: &'static str,
    pub from_s: u64,
    pub to_s: u64,
    /// The loss each way outside bursts, percent.
    pub loss: u8,
    /// 30 % bursts: (from, to).
    pub bursts: Vec<(u64, u64)>,
    /// The server process stopped (SIGSTOP) from, to.
    pub pause: Option<(u64, u64)>,
}

pub(crate) const BURST_LOSS: u8 = 30;

/// The phases for a soak of `minutes` (30: the full one).
pub(crate) fn phases(minutes: u64) -> Vec<Phase> {
    // Every time below is for 30 minutes; scaled, never below one second.
    let s = |t: u64| (t * minutes / 30).max(1);
    vec![
        Phase {
            name: "5 %, server paused 20 s",
            from_s: 0,
            to_s: s(600),
            loss: 5,
            bursts: Vec::new(),
            pause: Some((s(300), s(320))),
        },
        Phase {
            name: "10 %",
            from_s: s(600),
            to_s: s(1200),
            loss: 10,
            bursts: Vec::new(),
            pause: None,
        },
        Phase {
            name: "5 % with three 60 s bursts of 30 %",
            from_s: s(1200),
            to_s: s(1800),
            loss: 5,
            bursts: vec![(s(1320), s(1380)), (s(1500), s(1560)), (s(1680), s(1740))],
            pause: None,
        },
    ]
}

impl Phase {
    /// The loss in force at second `t` of the soak (inside this phase).
    pub(crate) fn loss_at(&self, t: u64) -> u8 {
        if self.bursts.iter().any(|(a, b)| (*a..*b).contains(&t)) {
            BURST_LOSS
        } else {
            self.loss
        }
    }

    /// Seconds of this phase at `loss` percent.
    pub(crate) fn seconds_at(&self, loss: u8) -> u64 {
        (self.from_s..self.to_s)
            .filter(|t| self.loss_at(*t) == loss)
            .count() as u64
    }

    pub(crate) fn paused_at(&self, t: u64) -> bool {
        self.pause.is_some_and(|(a, b)| (a..b).contains(&t))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_full_soak_is_thirty_minutes_with_three_minutes_of_bursts() {
        let p = super::phases(30);
        assert_eq!(p.last().map(|p| p.to_s), Some(1800));
        assert_eq!(p[2].seconds_at(30), 180);
        assert_eq!(p[2].seconds_at(5), 420);
        assert!(p[0].paused_at(310) && !p[0].paused_at(320));
        let short = super::phases(3);
        assert_eq!(short[1].from_s, 60);
        assert_eq!(short[2].seconds_at(30), 18);
    }
}
