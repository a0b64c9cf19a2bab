//! What an operator would check, read and parsed for assertions: the agent's decisions and
//! endpoint log, `lifeline status`, metrics, `ss`, keepalive options, the tc chain.

pub mod decision;
pub mod endpoint_checks;
pub mod endpoint_log;
pub mod keepalive;
pub mod metrics;
pub mod ss;
pub mod status;
pub(crate) mod status_endpoint;
pub mod tc_chain;
pub mod watched;
