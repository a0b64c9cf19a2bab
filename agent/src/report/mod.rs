//! What the agent tells operators: the status socket and its rows, the Prometheus metrics and
//! the tracing setup (journald or stderr), the bound both servers keep (`gate.rs`). Fed from
//! the judge's typed decisions.

pub mod gate;
pub mod logging;
pub mod metrics;
pub mod notify;
pub mod snapshot;
pub mod status;
