//! The host's own facilities the other stages lean on: the single-instance lock, the mounts
//! (bpffs, tracefs, cgroup2), the seccomp diagnosis, the agent's own seccomp filter
//! (`signals.rs`), freed heap given back (`memory.rs`) and the status socket's unix sockets
//! (`unix.rs`). Nothing here knows about TCP sockets.

pub(crate) mod lock;
pub(crate) mod memory;
pub(crate) mod mounts;
pub(crate) mod seccomp;
pub(crate) mod signals;
pub(crate) mod unix;
