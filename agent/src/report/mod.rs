//! What the agent tells operators: the status socket and its rows, the Prometheus metrics and
//! the tracing setup (journald or stderr), the bound both servers keep (`gate.rs`). Fed from
//! the judge's typed decisions.

pub(crate) mod gate;
pub(crate) mod logging;
pub(crate) mod metrics;
pub(crate) mod notify;
pub(crate) mod snapshot;
pub(crate) mod status;
