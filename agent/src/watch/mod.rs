//! The watch model: which sockets are watched, for the whole life of their owners.
//!
//! The probe attaches once, to the cgroup v2 root, which no unit restart can remove, and
//! selects in the kernel (see `lifeline_common::watch`): target cgroups by id, kept current
//! by tracepoints as systemd re-creates them; process names; the endpoint's addresses. Here
//! is the agent's half (the targets themselves are settings: `settings::targets`): the cgroup and endpoint-peer
//! bookkeeping, and the namespace calibration.

pub(crate) mod adopt;
pub(crate) mod cgroup;

mod cgroups;
pub(crate) mod netns;
mod peers;
mod state;

pub(crate) use cgroups::{CgroupWatch, TargetStatus};
pub(crate) use peers::PeerSync;
pub(crate) use state::Watching;
