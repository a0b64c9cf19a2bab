//! The endpoints part of `lifeline status --json` : each followed endpoint's
//! current set and how its resolution goes.

use anyhow::{Context, Result};
use serde_json::Value;

/// One followed endpoint: its current address set and how its resolution goes.
#[derive(Clone, Debug)]
pub struct EndpointStatus {
    /// `NAME:PORT`, as given to `--endpoint`.
    pub endpoint: String,
    /// The set in force (the last good answer), as the agent prints it.
    pub addrs: Vec<String>,
    pub last_refresh_age_ms: u64,
    /// DNS failures counted so far.
    pub failures: u64,
    pub last_error: Option<String>,
    pub raw: Value,
}

impl EndpointStatus {
    pub(crate) fn from_json(v: &Value) -> Result<Self> {
        let addrs = v
            .get("addrs")
            .and_then(Value::as_array)
            .with_context(|| format!("endpoint lacks addrs: {v}"))?;
        let n = |k: &str| {
            v.get(k)
                .and_then(Value::as_u64)
                .with_context(|| format!("endpoint lacks {k}: {v}"))
        };
        Ok(Self {
            endpoint: v
                .get("endpoint")
                .and_then(Value::as_str)
                .with_context(|| format!("endpoint lacks endpoint: {v}"))?
                .to_owned(),
            addrs: addrs
                .iter()
                .filter_map(|a| a.as_str().map(str::to_owned))
                .collect(),
            last_refresh_age_ms: n("last_refresh_age_ms")?,
            failures: n("failures")?,
            last_error: v
                .get("last_error")
                .and_then(Value::as_str)
                .map(str::to_owned),
            raw: v.clone(),
        })
    }
}
