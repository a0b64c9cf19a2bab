//! The fast probes as `lifeline status`, `lifeline check` and the metrics show them: typed
//! (the status JSON carries these values; the client renders them, never parses a text),
//! with the one line an operator reads (`Display`).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::reach::Reach;

/// How the tc program sits in a device's chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Chain {
    /// A tcx link (Linux 6.6), first in the device's egress chain.
    Tcx,
    /// A `cls_bpf` filter on the device's clsact egress (before 6.6).
    Clsact { priority: u16, handle: u32 },
}

impl fmt::Display for Chain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tcx => f.write_str("tcx, first"),
            Self::Clsact { priority, handle } => {
                write!(f, "clsact, priority {priority} handle {handle:#x}")
            }
        }
    }
}

/// One device the program is on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FastDevice {
    pub device: String,
    pub chain: Chain,
    pub reach: Reach,
    /// Packets the program saw, and the device sent, in the window that gave `reach`.
    pub seen: u64,
    pub sent: u64,
}

/// A device the program could not be attached to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Refused {
    pub device: String,
    pub why: String,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FastState {
    /// `--fast-probes off`.
    #[default]
    Off,
    /// The kernel lacks a part (`why`).
    Unavailable,
    On,
    /// On, but another program hides it on at least one device.
    Hidden,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FastStatus {
    /// The line below (`Display`), for whoever reads the JSON by eye; made from the typed
    /// fields (`with_summary`) and never read back.
    #[serde(default, skip_deserializing, skip_serializing_if = "String::is_empty")]
    pub summary: String,
    pub state: FastState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<FastDevice>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<Refused>,
    /// Phases the agent opened at an endpoint socket's overdue look, before the kernel's
    /// second probe would have (`hasten.rs`), since start.
    #[serde(default)]
    pub hastened: u64,
}

impl FastStatus {
    /// With `summary` filled in.
    #[must_use]
    pub(crate) fn with_summary(mut self) -> Self {
        self.summary = self.to_string();
        self
    }

    /// The devices another program hides the tc program on.
    pub(crate) fn hidden(&self) -> impl Iterator<Item = &FastDevice> {
        self.devices.iter().filter(|d| d.reach == Reach::Hidden)
    }
}

impl fmt::Display for FastStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = self.why.as_deref().unwrap_or("unknown");
        match self.state {
            FastState::Off => return f.write_str("fast probes: off (--fast-probes off)"),
            FastState::Unavailable => return write!(f, "fast probes: unavailable ({why})"),
            FastState::On | FastState::Hidden => {}
        }
        let mut parts = Vec::new();
        for d in self.hidden() {
            parts.push(format!(
                "fast probes hidden by another program on {} ({}: the program saw none of the {} packets {} sent; idle sockets through it are probed at the kernel's 1 s cadence)",
                d.device, d.chain, d.sent, d.device
            ));
        }
        let on: Vec<String> = (self.devices.iter())
            .filter(|d| d.reach != Reach::Hidden)
            .map(|d| match d.reach {
                Reach::Out => format!(
                    "{} ({}; saw {} of {} packets sent)",
                    d.device, d.chain, d.seen, d.sent
                ),
                _ => format!("{} ({}; not yet measured)", d.device, d.chain),
            })
            .collect();
        if !on.is_empty() {
            parts.push(format!("fast probes: on {}", on.join(", ")));
        }
        if self.devices.is_empty() {
            parts.push("fast probes: on, no device yet (attached to the devices the watched peers are routed through)".to_owned());
        }
        for r in &self.refused {
            parts.push(format!("fast probes cannot use {} ({})", r.device, r.why));
        }
        f.write_str(&parts.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(device: &str, chain: Chain, reach: Reach) -> FastDevice {
        FastDevice {
            device: device.into(),
            chain,
            reach,
            seen: 0,
            sent: 12,
        }
    }

    #[test]
    fn a_hidden_device_is_named_and_the_state_round_trips_through_json() {
        let s = FastStatus {
            summary: String::new(),
            state: FastState::Hidden,
            why: None,
            devices: vec![
                dev("eth0", Chain::Tcx, Reach::Hidden),
                dev(
                    "eth1",
                    Chain::Clsact {
                        priority: 6,
                        handle: 0x4c4c,
                    },
                    Reach::Unmeasured,
                ),
            ],
            refused: Vec::new(),
            hastened: 3,
        };
        let text = s.to_string();
        assert!(
            text.starts_with("fast probes hidden by another program on eth0 (tcx, first:"),
            "{text}"
        );
        assert!(
            text.contains(
                "fast probes: on eth1 (clsact, priority 6 handle 0x4c4c; not yet measured)"
            ),
            "{text}"
        );
        let json = serde_json::to_value(s.clone().with_summary()).unwrap();
        assert_eq!(json["summary"], text.as_str());
        assert_eq!(json["state"], "hidden");
        assert_eq!(json["devices"][0]["reach"], "hidden");
        assert_eq!(json["devices"][1]["chain"]["kind"], "clsact");
        assert_eq!(json["hastened"], 3);
        assert_eq!(serde_json::from_value::<FastStatus>(json).unwrap(), s);
    }

    #[test]
    fn off_and_unavailable_say_why() {
        let off = FastStatus::default();
        assert_eq!(off.to_string(), "fast probes: off (--fast-probes off)");
        let gone = FastStatus {
            state: FastState::Unavailable,
            why: Some("needs Linux 5.15".into()),
            ..FastStatus::default()
        };
        assert_eq!(
            gone.to_string(),
            "fast probes: unavailable (needs Linux 5.15)"
        );
    }
}
