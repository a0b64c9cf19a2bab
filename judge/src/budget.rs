//! Whose a socket is, for the two limits that protect one party from another: the kill
//! budget (`--max-kills-per-minute` for each watch target and for each owner of an endpoint
//! client, so nobody can spend kubelet's or another client's), and the restart escalation
//! (only a socket of `--restart-unit`'s own cgroup may restart that unit). The daemon finds
//! out (`act::owner`: the socket's cgroup and uid from `sock_diag`, its name, its peer); the
//! rules here only count.

use std::{
    collections::{HashMap, VecDeque},
    fmt,
    time::Duration,
};

use super::Mono;

/// The budget a kill spends: the most specific target that selects the socket (a target
/// cgroup holding its cgroup, then its process name), else its owner as an endpoint client.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Budget {
    /// A `--cgroup` target, by its path from the hierarchy's root.
    Cgroup(String),
    /// A `--comm` target.
    Comm(String),
    /// A client of the endpoint that no `--cgroup` or `--comm` target selects, by its owner:
    /// the unit, pod or user its cgroup belongs to (`group`, `act/group.rs`: e.g.
    /// `/system.slice/kube-proxy.service`; None when the cgroup could not be named) and the
    /// socket's uid. Anyone may open connections to the API address and make them die (an
    /// `IP_TTL` of 1 on a routed path), so each owner pays alone, within two shared bounds
    /// (`GROUP_SHARE`, `TOTAL_SHARE`).
    EndpointClient { group: Option<String>, uid: u32 },
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
            Self::EndpointClient {
                group: Some(g),
                uid,
            } => write!(f, "endpoint client {g} uid {uid}"),
            Self::EndpointClient { group: None, uid } => {
                write!(f, "endpoint client (cgroup unknown) uid {uid}")
            }
            Self::Unattributed => f.write_str("unattributed"),
        }
    }
}

/// The endpoint clients of one cgroup group (every uid in it) together may spend this many
/// owners' budgets a minute: a pod running as root can take any uid, and each uid would
/// otherwise be an owner with a budget of its own.
pub(crate) const GROUP_SHARE: usize = 2;
/// All endpoint clients together may spend this many owners' budgets a minute: a bound on
/// what lifeline does to the node's clients however many owners there are (60 kills at the
/// default 6), which one unprivileged user (one uid, one user slice) cannot reach alone.
pub(crate) const TOTAL_SHARE: usize = 10;

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

/// What one sliding minute is counted for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    /// A target's or an owner's own budget.
    Own(Budget),
    /// Every endpoint client of one cgroup group.
    Group(Option<String>),
    /// Every endpoint client.
    AllEndpointClients,
}

/// One sliding-minute kill budget per target and per endpoint-client owner, each `max`
/// kills; endpoint clients also within their group's and the total bound.
pub(super) struct KillBudgets {
    max: usize,
    spent: HashMap<Key, VecDeque<Mono>>,
}

impl KillBudgets {
    pub(super) fn new(max_per_minute: u32) -> Self {
        Self {
            max: usize::try_from(max_per_minute).unwrap_or(usize::MAX),
            spent: HashMap::new(),
        }
    }

    /// Takes one kill from `budget` at `now` (and from its group's and the total bound for
    /// an endpoint client: all or none), or says one of them is spent.
    pub(super) fn try_take(&mut self, budget: &Budget, now: Mono) -> bool {
        // Forget what aged out everywhere, so the map holds only the last minute's kills.
        self.spent.retain(|_, times| {
            while times
                .front()
                .is_some_and(|t| now.saturating_duration_since(*t) >= MINUTE)
            {
                times.pop_front();
            }
            !times.is_empty()
        });
        let mut bounds = vec![(Key::Own(budget.clone()), self.max)];
        if let Budget::EndpointClient { group, .. } = budget {
            bounds.push((
                Key::Group(group.clone()),
                self.max.saturating_mul(GROUP_SHARE),
            ));
            bounds.push((
                Key::AllEndpointClients,
                self.max.saturating_mul(TOTAL_SHARE),
            ));
        }
        let room = bounds
            .iter()
            .all(|(key, max)| self.spent.get(key).map_or(0, VecDeque::len) < *max);
        if room {
            for (key, _) in bounds {
                self.spent.entry(key).or_default().push_back(now);
            }
        }
        room
    }
}

#[cfg(test)]
#[path = "budget_tests.rs"]
mod tests;
