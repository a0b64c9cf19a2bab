//! tc through rtnetlink, for the fast probes' egress program as a neighbour in a device's
//! chain (`kernel/probe/fast/`): which filters a device's clsact qdisc holds (to choose a
//! priority and handle no other filter has, to find lifeline's own stale filters by program
//! name, and to tell whether a clsact qdisc lifeline added is still used), and removing it.
//! Attaching and detaching the program itself is aya's. Nothing here decides anything.

mod rtnl;
mod wire;

use std::io;

use wire::{
    CLSACT_HANDLE, NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST, RTM_DELQDISC, RTM_GETTFILTER,
    RTM_NEWTFILTER, TC_H_CLSACT, request,
};
pub(crate) use wire::{EGRESS, Filter, INGRESS};

/// `ETH_P_ALL`: the protocol aya attaches `cls_bpf` filters with.
pub(crate) const ETH_P_ALL: u16 = 3;

fn index(ifindex: u32) -> io::Result<i32> {
    i32::try_from(ifindex).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

/// The filters on a device's clsact `parent` (`EGRESS` or `INGRESS`); none when it has no
/// clsact qdisc.
///
/// # Errors
/// When rtnetlink cannot be asked (`EPERM` in a pod whose seccomp profile refuses it).
pub(crate) fn filters(ifindex: u32, parent: u32) -> io::Result<Vec<Filter>> {
    let msg = request(
        RTM_GETTFILTER,
        NLM_F_REQUEST | NLM_F_DUMP,
        1,
        (index(ifindex)?, 0, parent, 0),
    );
    let bodies = rtnl::ask(&msg, 1, RTM_NEWTFILTER)?;
    Ok(bodies.iter().filter_map(|b| wire::filter(b)).collect())
}

/// Whether the device's clsact qdisc holds no filter, ingress or egress.
///
/// # Errors
/// As `filters`.
pub(crate) fn clsact_unused(ifindex: u32) -> io::Result<bool> {
    Ok(filters(ifindex, INGRESS)?.is_empty() && filters(ifindex, EGRESS)?.is_empty())
}

/// Delete the device's clsact qdisc (with whatever hangs on it: callers check first).
///
/// # Errors
/// As `filters`, and the kernel's refusal (`ENOENT` when there is none, `EINVAL` before
/// 4.5's clsact).
pub(crate) fn remove_clsact(ifindex: u32) -> io::Result<()> {
    let msg = request(
        RTM_DELQDISC,
        NLM_F_REQUEST | NLM_F_ACK,
        1,
        (index(ifindex)?, CLSACT_HANDLE, TC_H_CLSACT, 0),
    );
    rtnl::ask(&msg, 1, 0).map(drop)
}
