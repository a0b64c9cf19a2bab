//! What the idle-path tests read: the client's own view of its keepalive options, and
//! whether anything is still attached to a cgroup.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result};
use serde_json::Value;

use crate::fixtures::client::Client;

/// A `sockopts` event of `lab-client --sockopts-every`: `getsockopt` on its socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sockopts {
    pub mono_ms: u64,
    pub keepalive: bool,
    pub idle_s: u64,
    pub intvl_s: u64,
    pub cnt: u64,
    /// `TCP_USER_TIMEOUT`; 0 when unset.
    pub user_timeout_ms: u64,
}

impl Sockopts {
    /// (idle, interval, count), for comparisons.
    #[must_use]
    pub fn values(&self) -> (u64, u64, u64) {
        (self.idle_s, self.intvl_s, self.cnt)
    }
}

/// The client's latest `sockopts` event, if it printed one.
#[must_use]
pub fn latest(client: &Client) -> Option<Sockopts> {
    let events = client.events();
    let e = events.iter().rev().find(|e| e.event == "sockopts")?;
    let n = |k: &str| e.raw.get(k).and_then(Value::as_u64);
    Some(Sockopts {
        mono_ms: e.mono_ms,
        keepalive: n("keepalive")? == 1,
        idle_s: n("idle_s")?,
        intvl_s: n("intvl_s")?,
        cnt: n("cnt")?,
        user_timeout_ms: n("user_timeout_ms")?,
    })
}

/// How many BPF programs are attached to the cgroup at `path` (`bpftool cgroup show`).
///
/// # Errors
/// When bpftool fails or prints something else than its JSON list.
pub fn attached_programs(path: &Path) -> Result<usize> {
    let out = Command::new("bpftool")
        .args(["-j", "cgroup", "show"])
        .arg(path)
        .output()
        .context("running bpftool")?;
    anyhow::ensure!(
        out.status.success(),
        "bpftool cgroup show {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    let text = String::from_utf8_lossy(&out.stdout);
    if text.trim().is_empty() {
        return Ok(0);
    }
    let v: Value =
        serde_json::from_str(text.trim()).with_context(|| format!("bpftool printed {text:?}"))?;
    Ok(v.as_array().map_or(0, Vec::len))
}
