//! The agent of the escalation scenarios: `--restart-unit kubelet.service` on the test's
//! systemd manager, targeting the unit's own cgroup as production does, and the decisions
//! it logged about one socket.

use std::time::Duration;

use anyhow::Result;

use crate::agent::{Agent, AgentArgs};
use crate::decision::Decision;
use crate::kubelet_unit::{self, UNIT};
use crate::lab::Lab;
use crate::systemd::UserManager;

/// Starts the agent with `--restart-unit kubelet.service --systemd-bus <m's bus>` and
/// `extra`, and waits until it is ready.
///
/// # Errors
/// When it does not start or is not ready within a minute.
pub fn start(lab: &Lab, m: &UserManager, extra: &[&str]) -> Result<Agent> {
    let bus = m.bus_address();
    let mut args = vec!["--restart-unit", UNIT, "--systemd-bus", &bus];
    args.extend_from_slice(extra);
    let args = AgentArgs {
        extra: args.into_iter().map(str::to_owned).collect(),
        ..AgentArgs::default()
    };
    let mut a = Agent::start_targets(lab, &[&kubelet_unit::cgroup_dir(m)], &args)?;
    a.wait_ready(Duration::from_mins(1))?;
    Ok(a)
}

/// The decisions with `action` ("kill", "restart") about the socket from local `port`.
#[must_use]
pub fn decisions(a: &Agent, action: &str, port: u16) -> Vec<Decision> {
    a.decisions()
        .into_iter()
        .filter(|d| d.action == action && d.is_for_port(port))
        .collect()
}

/// A decision's field as a string ("" when absent).
#[must_use]
pub fn field<'a>(d: &'a Decision, name: &str) -> &'a str {
    d.raw
        .pointer(&format!("/fields/{name}"))
        .and_then(|v| v.as_str())
        .unwrap_or("")
}
