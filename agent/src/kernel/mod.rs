//! Talking to the kernel: the probe (load, maps, news, the tc program), `sock_diag`, the
//! agent's mirror of the probe's records (decoded once, `record.rs`, into the judge's typed
//! `Record`), the routes and tracefs it needs, and the few syscalls the other stages need (the
//! monotonic clock, keepalive options). Sockets that predate the agent are adopted by the
//! watch stage (`watch/adopt.rs`) through the probe's TCP iterator. Nothing here decides
//! anything.

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
