//! Where lifeline's filter goes on a device's clsact egress (before Linux 6.6, no tcx): a
//! priority and handle of its own, chosen from the filters already there, so that it runs
//! before them when it can, and replaces, joins or blocks nobody's.
//!
//! Filters run in priority order, lowest first (`tcf_classify()`,
//! <https://github.com/torvalds/linux/blob/v6.18/net/sched/cls_api.c>), and within one
//! `cls_bpf` priority the newest first (`cls_bpf_change()` adds at the head of the list,
//! <https://github.com/torvalds/linux/blob/v6.18/net/sched/cls_bpf.c>). A new filter at a
//! priority that exists must be of that priority's kind and protocol, or the kernel refuses
//! it; a filter at an existing priority and handle replaces the one there.

use super::super::super::tc::{ETH_P_ALL, Filter};

/// The priority lifeline takes on a device without egress filters: one no tool uses by
/// default (Cilium's legacy filters take 1, `tc` and libbpf's first automatic one 49152,
/// later automatic ones the first's less one), so a neighbour that later adds a filter at
/// its usual priority never meets lifeline's (it would have to be a `cls_bpf` for all
/// protocols to share it).
pub(super) const PRIORITY: u16 = 0x4c4c;
/// lifeline's handle ("LL"): Cilium's is 1, automatic ones count up from 1.
pub(super) const HANDLE: u32 = 0x4c4c;

/// A priority and handle on a device's clsact egress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Slot {
    pub priority: u16,
    pub handle: u32,
}

/// Where lifeline's filter goes, given the device's egress filters (lifeline's own stale
/// ones already removed):
/// - none: `PRIORITY`;
/// - the lowest priority in use above 1: one below it, so lifeline runs first, and alone
///   at its priority;
/// - priority 1 in use (nothing can be lower) by `cls_bpf` filters for all protocols, as
///   Cilium's legacy filter (priority 1, handle 1): that priority, with a handle none of
///   them has, so lifeline's is the newest there and runs first;
/// - priority 1 in use by another kind or protocol (sharing it would be refused): the
///   lowest free priority, after it; if that filter ends the chain, lifeline is hidden,
///   which the agent measures and status says.
#[must_use]
pub(super) fn choose(existing: &[Filter]) -> Slot {
    let Some(lowest) = existing.iter().map(|f| f.priority).min() else {
        return Slot {
            priority: PRIORITY,
            handle: HANDLE,
        };
    };
    if lowest > 1 {
        return Slot {
            priority: lowest - 1,
            handle: HANDLE,
        };
    }
    let first: Vec<&Filter> = existing.iter().filter(|f| f.priority == 1).collect();
    if first
        .iter()
        .all(|f| f.kind == "bpf" && f.protocol == ETH_P_ALL)
    {
        // One more candidate than there are filters: one of them is free.
        let handle = (0..=u32::try_from(first.len()).unwrap_or(u32::MAX))
            .map(|i| HANDLE.wrapping_add(i))
            .find(|h| first.iter().all(|f| f.handle != *h))
            .unwrap_or(HANDLE);
        return Slot {
            priority: 1,
            handle,
        };
    }
    let priority = (2..=u16::MAX)
        .find(|p| existing.iter().all(|f| f.priority != *p))
        .unwrap_or(u16::MAX);
    Slot {
        priority,
        handle: HANDLE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(priority: u16, handle: u32, kind: &str, protocol: u16) -> Filter {
        Filter {
            priority,
            protocol,
            handle,
            kind: kind.into(),
            name: None,
        }
    }

    #[test]
    fn an_empty_device_gets_lifeline_s_own_priority() {
        assert_eq!(
            choose(&[]),
            Slot {
                priority: PRIORITY,
                handle: HANDLE
            }
        );
    }

    #[test]
    fn lifeline_goes_just_below_the_lowest_priority_in_use() {
        let existing = [f(9, 1, "bpf", ETH_P_ALL), f(7, 1, "u32", 0x0800)];
        assert_eq!(
            choose(&existing),
            Slot {
                priority: 6,
                handle: HANDLE
            }
        );
    }

    #[test]
    fn beside_cilium_s_legacy_filter_lifeline_shares_priority_1_with_a_handle_of_its_own() {
        // Cilium before tcx: priority 1, handle 1, cls_bpf, all protocols.
        let cilium = f(1, 1, "bpf", ETH_P_ALL);
        assert_eq!(
            choose(&[cilium.clone(), f(20, 1, "u32", 0x0800)]),
            Slot {
                priority: 1,
                handle: HANDLE
            }
        );
        // A filter there already has lifeline's usual handle: the next free one.
        let taken = [cilium, f(1, HANDLE, "bpf", ETH_P_ALL)];
        assert_eq!(
            choose(&taken),
            Slot {
                priority: 1,
                handle: HANDLE + 1
            }
        );
    }

    #[test]
    fn priority_1_of_another_kind_cannot_be_shared_so_the_lowest_free_one_is_taken() {
        let existing = [f(1, 1, "u32", 0x0800), f(2, 1, "bpf", ETH_P_ALL)];
        assert_eq!(
            choose(&existing),
            Slot {
                priority: 3,
                handle: HANDLE
            }
        );
        let ipv4_only = [f(1, 1, "bpf", 0x0800)];
        assert_eq!(choose(&ipv4_only).priority, 2);
    }
}
