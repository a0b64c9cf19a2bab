//! The whole `SOCKETS` map in a few syscalls: `BPF_MAP_LOOKUP_BATCH` (5.6) copies up to
//! `CHUNK` records per call, where aya's iterator makes two syscalls per record (next key,
//! then lookup). At 100,000 watched sockets that was 200,000 syscalls and about half of
//! the agent's CPU per sweep. aya 0.14 has no batch call, hence the raw syscall.

use std::os::fd::{AsFd as _, AsRawFd as _, RawFd};

use lifeline_common::SockState;

/// `BPF_MAP_LOOKUP_BATCH` in `enum bpf_cmd`
/// (<https://github.com/torvalds/linux/blob/v6.18/include/uapi/linux/bpf.h>).
const BPF_MAP_LOOKUP_BATCH: libc::c_long = 24;
/// Records per call: 4,096 records are 600 KiB of buffer.
const CHUNK: u32 = 4096;

/// The `batch` member of `union bpf_attr`.
#[repr(C)]
#[derive(Default)]
pub(super) struct BatchAttr {
    pub(super) in_batch: u64,
    pub(super) out_batch: u64,
    pub(super) keys: u64,
    pub(super) values: u64,
    pub(super) count: u32,
    pub(super) map_fd: u32,
    pub(super) elem_flags: u64,
    pub(super) flags: u64,
}

/// Every record of the hash map behind `fd`, or the errno of the call that failed (the
/// caller falls back to the per-key walk: a kernel before 5.6 says `EINVAL`). A bucket
/// larger than `CHUNK` would be `ENOSPC`, likewise.
pub(super) fn lookup_all(
    map: &aya::maps::MapData,
    max_entries: u32,
) -> Result<Vec<(u64, SockState)>, i32> {
    let fd: RawFd = map.fd().as_fd().as_raw_fd();
    let mut keys = vec![0u64; CHUNK as usize];
    let mut values = vec![SockState::default(); CHUNK as usize];
    let mut out = Vec::new();
    // The kernel's position between calls: a bucket index for a hash map (4 bytes).
    let (mut token, mut next) = (0u64, 0u64);
    // Bounded: each call but the last returns at least one record, of `max_entries` at most.
    for call in 0..=max_entries {
        let mut attr = BatchAttr {
            in_batch: if call == 0 {
                0
            } else {
                (&raw mut token) as u64
            },
            out_batch: (&raw mut next) as u64,
            keys: keys.as_mut_ptr() as u64,
            values: values.as_mut_ptr() as u64,
            count: CHUNK,
            map_fd: u32::try_from(fd).map_err(|_| libc::EBADF)?,
            ..BatchAttr::default()
        };
        // SAFETY: the attr points at buffers of `CHUNK` keys and values of the map's sizes
        // and at two tokens, all alive for the call.
        let errno = unsafe { lookup_batch(&mut attr) };
        let n = attr.count.min(CHUNK) as usize;
        out.extend(keys[..n].iter().copied().zip(values[..n].iter().copied()));
        match errno {
            None => token = next,
            // The end of the map (with the last records in this call).
            Some(libc::ENOENT) => return Ok(out),
            Some(e) => return Err(e),
        }
    }
    Ok(out)
}

/// One `BPF_MAP_LOOKUP_BATCH` call: `None`, or the errno it failed with (`ENOENT`: the end
/// of the map, with the last entries in `attr.count`).
///
/// # Safety
/// `attr`'s pointers must address buffers of `attr.count` keys and values of the map's
/// sizes (per possible CPU for a per-CPU map) and its tokens, all alive for the call.
pub(super) unsafe fn lookup_batch(attr: &mut BatchAttr) -> Option<i32> {
    // SAFETY: the caller's promise.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_MAP_LOOKUP_BATCH,
            &raw mut *attr,
            size_of::<BatchAttr>(),
        )
    };
    (rc < 0).then(|| std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
}
