//! `cgroup:cgroup_mkdir` and `cgroup:cgroup_rmdir`: keep `TARGET_CGROUPS` current while
//! systemd deletes and re-creates a unit's cgroup on every restart.
//!
//! The tracepoint fires inside mkdir(2), before systemd can move the unit's first process
//! into the new cgroup (`cgroup_mkdir()` in
//! <https://github.com/torvalds/linux/blob/v6.18/kernel/cgroup/cgroup.c>, `TRACE_CGROUP_PATH`),
//! so the new id is a target before that process can connect: no race with the agent, and
//! the first SYN of a restarted kubelet is watched. Minimum kernel: 5.5 (u64 cgroup ids in
//! the record; the tracepoint itself is 4.13). Runs only when a cgroup is made or removed.

use aya_ebpf::{
    EbpfContext as _, helpers::bpf_probe_read_kernel_str_bytes, macros::tracepoint,
    programs::TracePointContext,
};
use lifeline_common::watch::{CGROUP_PATH_LEN, tracepoint as tp};

use crate::maps::{PATH_SCRATCH, TARGET_CGROUPS, TARGET_PATHS};

#[tracepoint(category = "cgroup", name = "cgroup_mkdir")]
pub(crate) fn lifeline_cgroup_mkdir(ctx: TracePointContext) -> u32 {
    match try_mkdir(&ctx) {
        Ok(()) | Err(_) => 0,
    }
}

#[tracepoint(category = "cgroup", name = "cgroup_rmdir")]
pub(crate) fn lifeline_cgroup_rmdir(ctx: TracePointContext) -> u32 {
    match try_rmdir(&ctx) {
        Ok(()) | Err(_) => 0,
    }
}

fn try_mkdir(ctx: &TracePointContext) -> Result<(), i64> {
    let Some(id) = default_hierarchy_id(ctx)? else {
        return Ok(());
    };
    let Some(path) = PATH_SCRATCH.get_ptr_mut(0) else {
        return Ok(());
    };
    // SAFETY: this CPU's scratch slot; nothing else runs on this CPU meanwhile.
    let path = unsafe { &mut *path };
    *path = [0; CGROUP_PATH_LEN];
    // SAFETY: reads the record the kernel passed in.
    let loc: u32 = unsafe { ctx.read_at(tp::PATH_LOC_OFFSET) }?;
    // `__data_loc`: offset of the string in the record in the low 16 bits, length above.
    let offset = (loc & 0xffff) as usize;
    // SAFETY: the string lies inside the record; the helper stops at NUL or the buffer's end.
    let src = unsafe { ctx.as_ptr().cast::<u8>().add(offset) };
    // SAFETY: as above.
    unsafe { bpf_probe_read_kernel_str_bytes(src, path) }?;
    // By reference: a copy would put 256 bytes on the 512-byte BPF stack.
    #[allow(
        clippy::needless_borrows_for_generic_args,
        reason = "the key must stay in the scratch map, not be copied to the stack"
    )]
    let found = TARGET_PATHS.get_ptr(&*path);
    if let Some(index) = found {
        // SAFETY: map value of the right type.
        let index = unsafe { *index };
        TARGET_CGROUPS.insert(id, index, 0)?;
    }
    Ok(())
}

fn try_rmdir(ctx: &TracePointContext) -> Result<(), i64> {
    if let Some(id) = default_hierarchy_id(ctx)? {
        // Usually absent: only target cgroups are in the map.
        let _ = TARGET_CGROUPS.remove(id);
    }
    Ok(())
}

/// The cgroup's id when it belongs to cgroup v2 (hybrid hosts mirror each unit in v1
/// hierarchies, whose ids mean nothing to the connect hooks).
fn default_hierarchy_id(ctx: &TracePointContext) -> Result<Option<u64>, i64> {
    // SAFETY: reads the record the kernel passed in, at the offsets of its format.
    let root: i32 = unsafe { ctx.read_at(tp::ROOT_OFFSET) }?;
    if root != tp::DEFAULT_HIERARCHY {
        return Ok(None);
    }
    // SAFETY: as above.
    let id: u64 = unsafe { ctx.read_at(tp::ID_OFFSET) }?;
    Ok(Some(id))
}
