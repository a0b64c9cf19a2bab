//! Heap the agent has freed goes back to the kernel. glibc's malloc keeps what is freed in
//! its heap for reuse and returns only a free top beyond `M_TRIM_THRESHOLD`, never the holes
//! below a live allocation (malloc(3), mallopt(3)); so the transient peaks of the agent's life
//! stayed in its RSS for good: loading the probe (the kernel's BTF parsed, about 20 MB, then
//! freed) left an agent with nothing to watch at 32 MiB, 21 MiB of it free heap. `malloc_trim(0)`
//! hands every free page back (`madvise(MADV_DONTNEED)` for the holes, which the unit's
//! `@system-service` filter and the pod's seccomp profile allow). It walks the free lists
//! only, so it is called after each peak: once the probe is loaded and the first sweep done,
//! after a whole read of the map (once a minute at most), and after a status answer.

/// Returns the heap's free pages to the kernel (nothing to do with another allocator).
pub(crate) fn release_freed() {
    #[cfg(target_env = "gnu")]
    // SAFETY: takes no pointer; it only rearranges the allocator's own free memory, under
    // the allocator's locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    /// A freed peak leaves the resident set: the start's 20 MB BTF parse is the case.
    #[test]
    #[cfg(target_env = "gnu")]
    fn a_freed_peak_is_given_back() {
        let rss = || {
            let s = std::fs::read_to_string("/proc/self/statm").expect("statm");
            let pages: u64 = s.split_whitespace().nth(1).unwrap().parse().unwrap();
            pages * 4096
        };
        // Many small blocks (below the mmap threshold: they come from the heap), all
        // touched, then all freed but the last, which pins the heap's top.
        let mut blocks: Vec<Vec<u8>> = (0..4_000).map(|_| vec![1u8; 16 * 1024]).collect();
        let pin = vec![1u8; 1024];
        let peak = rss();
        blocks.truncate(0);
        blocks.shrink_to_fit();
        super::release_freed();
        let after = rss();
        drop(pin);
        assert!(
            after + 40 * 1024 * 1024 <= peak,
            "64 MB freed, RSS {} MiB at the peak and {} MiB after",
            peak >> 20,
            after >> 20
        );
    }
}
