//! `silence evidence`: whether fast keepalive probes work here (`lifeline_common::poke`,
//! `features::FAST_PROBES`), i.e. how fast an idle socket's unanswered probes are collected.
//! The tc program is attached to the device of the default route, the one an API address
//! outside the node is usually routed through, and watched for 1 to 3.5 s: the packets the
//! device sends meanwhile must pass through it (`kernel/probe/fast/reach.rs`), else another
//! program ahead of it in the chain hides it. Then it is detached, and a clsact qdisc the
//! check added removed, before a SIGINT or SIGTERM that came meanwhile takes effect.

use std::{
    net::{IpAddr, Ipv4Addr},
    time::{Duration, Instant},
};

use lifeline_common::features::FAST_PROBES;

use crate::{
    check::{
        interrupt::{self, SignalsDeferred},
        row::Row,
    },
    kernel::probe::{FastState, FastStatus, Probe, Reach},
};

const NAME: &str = "silence evidence";

/// An address only the default route covers (TEST-NET-2, RFC 5737).
const OUTSIDE: IpAddr = IpAddr::V4(Ipv4Addr::new(198, 51, 100, 1));

/// How long the check watches: at least a second (a count worth reading), at most until the
/// program saw a packet, or long enough for the rule to call it hidden (`reach::MIN_SPAN`)
/// with some margin.
const MIN_WATCH: Duration = Duration::from_secs(1);
const WATCH: Duration = Duration::from_millis(3_500);
const POLL: Duration = Duration::from_millis(100);

/// The row, from a loaded probe.
pub(super) fn row(p: &mut Probe) -> Row {
    match p.fast_status() {
        FastStatus {
            state: FastState::Off,
            ..
        } => {
            return Row::pass(
                NAME,
                "--fast-probes off: keepalive probes at the kernel's INTERVAL, the silent verdict after IDLE + N x INTERVAL (13 s)".to_owned(),
            );
        }
        FastStatus {
            state: FastState::Unavailable,
            why,
            ..
        } => {
            return Row::warn(
                NAME,
                format!(
                    "fast keepalive probes unavailable ({}; needs Linux {}.{}): the silent verdict takes IDLE + N x INTERVAL (13 s), not about 2 s",
                    why.as_deref().unwrap_or("unknown"),
                    FAST_PROBES.since.0,
                    FAST_PROBES.since.1
                ),
            );
        }
        _ => {}
    }
    let st = {
        let _held = SignalsDeferred::new();
        p.fast_devices(std::iter::once(OUTSIDE));
        let start = Instant::now();
        while start.elapsed() < WATCH
            && !interrupt::pending()
            && (start.elapsed() < MIN_WATCH
                || (p.fast_status().devices.iter()).any(|d| d.reach == Reach::Unmeasured))
        {
            std::thread::sleep(POLL);
            p.fast_measure();
        }
        let st = p.fast_status();
        p.fast_detach_all();
        st
    };
    describe(&st)
}

fn describe(st: &FastStatus) -> Row {
    if let Some(r) = st.refused.first() {
        return Row::warn(
            NAME,
            format!(
                "the tc program cannot attach to {} ({}): idle sockets routed through it get the kernel's 1 s probes, the silent verdict after 13 s",
                r.device, r.why
            ),
        );
    }
    if st.state == FastState::Hidden {
        return Row::warn(NAME, format!("{st}; detached"));
    }
    let Some(d) = st.devices.first() else {
        return Row::pass(
            NAME,
            "fast keepalive probes: the silent verdict after about 2 s; no Ethernet device on the default route here; at run time, the devices the API's addresses are routed through".to_owned(),
        );
    };
    let measured = match d.reach {
        Reach::Out => format!(
            "it saw {} of the {} packets {} sent meanwhile",
            d.seen, d.sent, d.device
        ),
        _ => format!(
            "too few packets left {} while it was attached to tell whether another program hides it (status tells at run time)",
            d.device
        ),
    };
    Row::pass(
        NAME,
        format!(
            "fast keepalive probes: after one unanswered probe the next ones come every --fast-probes with an octet of old data; the silent verdict after about 2 s; attached to {} (the default route's device; {}): {measured}; detached",
            d.device, d.chain
        ),
    )
}
