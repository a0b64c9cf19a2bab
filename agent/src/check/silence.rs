//! `silence evidence`: whether fast keepalive probes work here (`lifeline_common::poke`,
//! `features::FAST_PROBES`), i.e. how fast an idle socket's unanswered probes are collected.
//! The tc program is attached (and detached with the probe) to the device of the default
//! route, the one an API address outside the node is usually routed through.

use std::net::{IpAddr, Ipv4Addr};

use lifeline_common::features::FAST_PROBES;

use crate::{
    check::row::Row,
    kernel::probe::{FastUnavailable, Probe},
};

const NAME: &str = "silence evidence";

/// An address only the default route covers (TEST-NET-2, RFC 5737).
const OUTSIDE: IpAddr = IpAddr::V4(Ipv4Addr::new(198, 51, 100, 1));

/// The row, from a loaded probe.
pub fn row(p: &mut Probe) -> Row {
    match &p.fast {
        Err(FastUnavailable::Off) => {
            return Row::pass(
                NAME,
                "--fast-probes off: keepalive probes at the kernel's INTERVAL, the silent verdict after IDLE + N x INTERVAL (13 s)".to_owned(),
            );
        }
        Err(FastUnavailable::Kernel(why)) => {
            return Row::warn(
                NAME,
                format!(
                    "fast keepalive probes unavailable ({why}; needs Linux {}.{}): the silent verdict takes IDLE + N x INTERVAL (13 s), not about 2 s",
                    FAST_PROBES.since.0, FAST_PROBES.since.1
                ),
            );
        }
        Ok(_) => {}
    }
    p.fast_devices(std::iter::once(OUTSIDE));
    let on = p.fast_on();
    let refused = p.fast_refused();
    if let Some((dev, why)) = refused.first() {
        return Row::warn(
            NAME,
            format!(
                "the tc program cannot attach to {dev} ({why}): idle sockets routed through it get the kernel's 1 s probes, the silent verdict after 13 s"
            ),
        );
    }
    let devices = if on.is_empty() {
        "no Ethernet device on the default route here; at run time, the devices the API's addresses are routed through".to_owned()
    } else {
        format!(
            "attached to {} (the default route's device), detached",
            on.join(", ")
        )
    };
    Row::pass(
        NAME,
        format!(
            "fast keepalive probes: after one unanswered probe the next ones come every --fast-probes with an octet of old data; the silent verdict after about 2 s; {devices}"
        ),
    )
}
