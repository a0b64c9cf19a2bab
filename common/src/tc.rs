//! The fast probes' tc egress program (`agent-ebpf/src/byteprobe.rs`) as a neighbour in the
//! device's tc chain (docs/ARCHITECTURE.md, "Fast probes").
//!
//! The program never ends the chain: it returns `TC_ACT_UNSPEC` (-1), which is also
//! `TCX_NEXT`. In tcx, `tcx_run()` runs the next program on `TCX_NEXT` and, after the last,
//! `sch_handle_egress()` goes on to the classic clsact filters only when the verdict is still
//! `TC_ACT_UNSPEC` (<https://github.com/torvalds/linux/blob/v6.18/net/core/dev.c>); in
//! `cls_bpf_classify()` a direct-action program's `TC_ACT_UNSPEC` continues with the next
//! program and the next priority (<https://github.com/torvalds/linux/blob/v6.18/net/sched/cls_bpf.c>).
//! Any other value (`TC_ACT_OK` included) ends the chain there.
//!
//! Whether it runs at all is measured: it counts every packet it sees per device in
//! `maps::TC_SEEN`, which the agent compares with the device's own transmit counter.

/// `TC_ACT_UNSPEC` in `cls_bpf`, `TCX_NEXT` in tcx
/// (<https://github.com/torvalds/linux/blob/v6.18/include/uapi/linux/pkt_cls.h>,
/// <https://github.com/torvalds/linux/blob/v6.18/include/uapi/linux/bpf.h>).
pub const PASS_ON: i32 = -1;

/// Slots of `maps::TC_SEEN` (a per-CPU array of u64): packets seen leaving each device,
/// at `slot(ifindex)`. Two attached devices whose indexes share a slot are not measured.
pub const SEEN_SLOTS: u32 = 256;

/// The `TC_SEEN` slot of a device.
#[must_use]
pub const fn slot(ifindex: u32) -> u32 {
    ifindex & (SEEN_SLOTS - 1)
}

const _: () = assert!(SEEN_SLOTS.is_power_of_two());
