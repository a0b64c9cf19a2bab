//! Where a peer address stands relative to an endpoint's set, as the set's rule says
//! (`set.rs`; the fact itself is the judge's input, `lifeline_judge::Membership`) and as
//! status and logs name it.

pub(crate) use lifeline_judge::Membership;
use serde::{Deserialize, Serialize};

impl From<Membership> for Standing {
    /// Where it stands, without for how long.
    fn from(m: Membership) -> Self {
        match m {
            Membership::InSet => Self::InSet,
            Membership::Leaving { .. } => Self::Leaving,
            Membership::Orphaned { .. } => Self::Orphaned,
            Membership::Unknown => Self::Unknown,
            Membership::NeverHeld => Self::NeverHeld,
        }
    }
}

/// A [`Membership`] as status shows it (a row's `endpoint_member`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Standing {
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
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Self::InSet => "in-set",
            Self::Leaving => "leaving",
            Self::Orphaned => "orphaned",
            Self::Unknown => "unknown",
            Self::NeverHeld => "never-held",
        }
    }
}
