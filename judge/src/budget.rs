//! Whose a socket is, for the two limits that protect one target from another: the kill
//! budget (`--max-kills-per-minute` for each watch target, so a noisy client cannot spend
//! kubelet's), and the restart escalation (only a socket of `--restart-unit`'s own cgroup
//! may restart that unit). The daemon finds out (`act::owner`: the socket's cgroup from
//! `sock_diag`, its name, its peer); the rules here only count.

use std::{
    collections::{HashMap, VecDeque},
    fmt,
    time::Duration,
};

use super::Mono;

/// The target whose kill budget a kill spends: the most specific that selects the socket
/// (a target cgroup holding its cgroup, then its process name, then the endpoint's clients).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Budget {
    /// A `--cgroup` target, by its path from the hierarchy's root.
    Cgroup(String),
    /// A `--comm` target.
    Comm(String),
    /// `--endpoint-clients`.
    EndpointClients,
    /// No target can be named now (e.g. an adopted socket whose cgroup is gone): a budget
    /// of its own, so it cannot spend a named target's either.
    #[default]
    Unattributed,
}

impl fmt::Display for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Cgroup(key) => write!(f, "cgroup {key}"),
            Self::Comm(comm) => write!(f, "comm {comm}"),
            Self::EndpointClients => f.write_str("endpoint clients"),
            Self::Unattributed => f.write_str("unattributed"),
        }
    }
}

/// Whether the socket is one of `--restart-unit`'s own: created in the unit's cgroup (or
/// below it) as that cgroup is now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UnitOwned {
    Yes,
    No,
    /// Not known (no `--restart-unit`, the unit's cgroup unknown, the socket gone before it
    /// could be read): never enough to restart anything.
    #[default]
    Unknown,
}

/// Whose a socket is, as the daemon found out just before acting on it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Whose {
    pub budget: Budget,
    pub unit: UnitOwned,
}

const MINUTE: Duration = Duration::from_mins(1);

/// One sliding-minute kill budget per target, each `max` kills.
pub(super) struct KillBudgets {
    max: usize,
    spent: HashMap<Budget, VecDeque<Mono>>,
}

impl KillBudgets {
    pub(super) fn new(max_per_minute: u32) -> Self {
        Self {
            max: usize::try_from(max_per_minute).unwrap_or(usize::MAX),
            spent: HashMap::new(),
        }
    }

    /// Takes one kill from `budget` at `now`, or says it is spent.
    pub(super) fn try_take(&mut self, budget: &Budget, now: Mono) -> bool {
        // Forget what aged out everywhere, so the map holds only the last minute's targets.
        self.spent.retain(|_, times| {
            while times
                .front()
                .is_some_and(|t| now.saturating_duration_since(*t) >= MINUTE)
            {
                times.pop_front();
            }
            !times.is_empty()
        });
        let times = self.spent.entry(budget.clone()).or_default();
        if times.len() >= self.max {
            return false;
        }
        times.push_back(now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_target_has_its_own_sliding_minute() {
        let mut b = KillBudgets::new(2);
        let t0 = Mono::from_secs(100);
        let noisy = Budget::Comm("noisy".into());
        let kubelet = Budget::Cgroup("/system.slice/kubelet.service".into());
        assert!(b.try_take(&noisy, t0));
        assert!(b.try_take(&noisy, t0 + Duration::from_secs(1)));
        assert!(
            !b.try_take(&noisy, t0 + Duration::from_secs(2)),
            "the noisy client's budget is spent"
        );
        assert!(
            b.try_take(&kubelet, t0 + Duration::from_secs(2)),
            "kubelet's budget is untouched by the noisy client's kills"
        );
        assert!(b.try_take(&Budget::EndpointClients, t0));
        assert!(b.try_take(&Budget::Unattributed, t0));
        assert!(
            !b.try_take(&noisy, t0 + Duration::from_secs(59)),
            "still inside the minute of the first kill"
        );
        assert!(
            b.try_take(&noisy, t0 + Duration::from_mins(1)),
            "the first kill aged out"
        );
    }

    #[test]
    fn budgets_are_named_in_the_log() {
        assert_eq!(
            Budget::Cgroup("/system.slice/kubelet.service".into()).to_string(),
            "cgroup /system.slice/kubelet.service"
        );
        assert_eq!(
            Budget::Comm("kube-proxy".into()).to_string(),
            "comm kube-proxy"
        );
        assert_eq!(Budget::EndpointClients.to_string(), "endpoint clients");
        assert_eq!(Whose::default().unit, UnitOwned::Unknown);
    }
}
