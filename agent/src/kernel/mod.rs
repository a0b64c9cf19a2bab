//! Talking to the kernel: the probe (load, maps, news), `sock_diag`, the agent's mirror of the
//! probe's records, the adoption of sockets that predate the agent, and the few syscalls the
//! other stages need (the monotonic clock, keepalive options). Nothing here decides anything.

pub mod clock;
pub mod diag;
pub mod errors;
pub mod mirror;
pub mod owners;
pub mod probe;
pub mod readers;
pub mod record;
pub mod routes;
pub mod sockopts;
pub mod tc;
pub mod tracefs;
