//! Test-only: the most memory a closure allocated at once, on its own thread. The test
//! binary's global allocator is the system's, counting per thread (a `const` thread-local
//! of plain integers: no allocation and no destructor inside the allocator).

use std::{
    alloc::{GlobalAlloc, Layout, System},
    cell::Cell,
};

struct Counting;

thread_local! {
    static NOW: Cell<usize> = const { Cell::new(0) };
    static MOST: Cell<usize> = const { Cell::new(0) };
}

fn grew(by: usize) {
    let now = NOW.with(|n| {
        let v = n.get().saturating_add(by);
        n.set(v);
        v
    });
    MOST.with(|m| m.set(m.get().max(now)));
}

fn shrank(by: usize) {
    NOW.with(|n| n.set(n.get().saturating_sub(by)));
}

// SAFETY: every call is passed on to `System` unchanged; the counting touches only this
// thread's plain integers.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        grew(l.size());
        // SAFETY: the caller's layout, as `GlobalAlloc::alloc` requires.
        unsafe { System.alloc(l) }
    }

    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        shrank(l.size());
        // SAFETY: `p` was allocated by `System` with `l` (above).
        unsafe { System.dealloc(p, l) }
    }

    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        shrank(l.size());
        grew(new);
        // SAFETY: as `GlobalAlloc::realloc` requires of its caller.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// `f`'s result and the most bytes this thread had allocated at once while it ran, above
/// what it held before.
pub(super) fn measure<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = NOW.with(Cell::get);
    MOST.with(|m| m.set(base));
    let out = f();
    (out, MOST.with(Cell::get).saturating_sub(base))
}
