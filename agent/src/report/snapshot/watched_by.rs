//! Why a socket is watched, as the record's reason bits and, in JSON, a list of the names
//! of what selected it: "cgroup", "comm", "endpoint" (`--cgroup`, `--comm`,
//! `--endpoint-clients`).

use std::borrow::Cow;

use lifeline_common::watch::{BY_CGROUP, BY_COMM, BY_ENDPOINT};
use serde::{Deserialize, Deserializer, Serialize, Serializer, de::Error as _, ser::SerializeSeq};

/// The reason bits and their names, in the order the list is written.
const NAMES: [(u32, &str); 3] = [
    (BY_CGROUP, "cgroup"),
    (BY_COMM, "comm"),
    (BY_ENDPOINT, "endpoint"),
];

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct WatchedBy(pub u32);

impl WatchedBy {
    /// The names of the bits set, in `NAMES`' order.
    pub(crate) fn names(self) -> impl Iterator<Item = &'static str> {
        NAMES
            .into_iter()
            .filter(move |(bit, _)| self.0 & bit != 0)
            .map(|(_, name)| name)
    }
}

impl Serialize for WatchedBy {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(None)?;
        for name in self.names() {
            seq.serialize_element(name)?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for WatchedBy {
    /// A name this agent does not know is an error, not a reason silently dropped.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let names = Vec::<Cow<'de, str>>::deserialize(d)?;
        names.iter().try_fold(Self(0), |acc, name| {
            NAMES
                .iter()
                .find(|(_, n)| *n == name.as_ref())
                .map(|(bit, _)| Self(acc.0 | bit))
                .ok_or_else(|| D::Error::unknown_variant(name, &["cgroup", "comm", "endpoint"]))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_ones_are_refused() {
        let all = WatchedBy(BY_CGROUP | BY_COMM | BY_ENDPOINT);
        let json = serde_json::to_string(&all).unwrap();
        assert_eq!(json, r#"["cgroup","comm","endpoint"]"#);
        assert_eq!(serde_json::from_str::<WatchedBy>(&json).unwrap(), all);
        assert_eq!(serde_json::to_string(&WatchedBy(0)).unwrap(), "[]");
        assert!(serde_json::from_str::<WatchedBy>(r#"["cgroup","pid"]"#).is_err());
    }
}
