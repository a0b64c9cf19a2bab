//! Where a peer address stands relative to an endpoint's set, as the set's rule says
//! (`set.rs`) and as status and logs name it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Where a peer address stands relative to the endpoint's set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Membership {
    InSet,
    /// Missing from the answers, for less than the grace so far.
    Leaving {
        absent_for: Duration,
    },
    /// Missing from every successful answer for at least the grace.
    Orphaned {
        absent_for: Duration,
    },
    /// No successful answer yet: nothing can be said.
    Unknown,
    /// No answer lifeline got ever held it (or it left them over `set::FORGET_AFTER` ago): a
    /// socket to it is not the endpoint's by DNS, whatever its port.
    NeverHeld,
}

impl Membership {
    /// Where it stands, without for how long.
    #[must_use]
    pub const fn standing(self) -> Standing {
        match self {
            Self::InSet => Standing::InSet,
            Self::Leaving { .. } => Standing::Leaving,
            Self::Orphaned { .. } => Standing::Orphaned,
            Self::Unknown => Standing::Unknown,
            Self::NeverHeld => Standing::NeverHeld,
        }
    }
}

/// A [`Membership`] as status shows it (a row's `endpoint_member`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Standing {
    #[serde(rename = "in-set")]
    InSet,
    #[serde(rename = "leaving")]
    Leaving,
    #[serde(rename = "orphaned")]
    Orphaned,
    #[serde(rename = "unknown")]
    Unknown,
    #[serde(rename = "never-held")]
    NeverHeld,
}

impl Standing {
    /// The word in the row's JSON and the table's IN-SET column.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::InSet => "in-set",
            Self::Leaving => "leaving",
            Self::Orphaned => "orphaned",
            Self::Unknown => "unknown",
            Self::NeverHeld => "never-held",
        }
    }
}
