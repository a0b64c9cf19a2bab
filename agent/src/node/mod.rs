//! The host's own facilities the other stages lean on: the single-instance lock, the mounts
//! (bpffs, tracefs, cgroup2) and the seccomp diagnosis. Nothing here knows about sockets.

pub(crate) mod lock;
pub(crate) mod mounts;
pub(crate) mod seccomp;
pub(crate) mod signals;
pub(crate) mod unix;
