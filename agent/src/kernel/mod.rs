//! Talking to the kernel: the probe (load, maps, news), `sock_diag`, the agent's mirror of the
//! probe's records, the adoption of sockets that predate the agent, and the few syscalls the
//! other stages need (the monotonic clock, keepalive options). Nothing here decides anything.

pub(crate) mod clock;
pub(crate) mod diag;
pub(crate) mod errors;
pub(crate) mod mirror;
pub(crate) mod owners;
pub(crate) mod probe;
pub(crate) mod readers;
pub(crate) mod record;
pub(crate) mod routes;
pub(crate) mod sockopts;
pub(crate) mod tc;
pub(crate) mod tracefs;
