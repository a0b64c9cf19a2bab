//! The host's own facilities the other stages lean on: the single-instance lock, the mounts
//! (bpffs, tracefs, cgroup2) and the seccomp diagnosis. Nothing here knows about sockets.

pub mod lock;
pub mod mounts;
pub mod seccomp;
pub mod signals;
pub(crate) mod unix;
