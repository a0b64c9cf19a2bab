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
    /// How long ago the last good answer came; `None` (JSON `null`) before the first one,
    /// as a proxy's upstream set is between its discovery and its first refresh.
    pub last_refresh_age_ms: Option<u64>,
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
            last_refresh_age_ms: match v.get("last_refresh_age_ms") {
                Some(Value::Null) => None,
                Some(a) => Some(
                    a.as_u64()
                        .with_context(|| format!("endpoint's last_refresh_age_ms: {v}"))?,
                ),
                None => anyhow::bail!("endpoint lacks last_refresh_age_ms: {v}"),
            },
            failures: n("failures")?,
            last_error: v
                .get("last_error")
                .and_then(Value::as_str)
                .map(str::to_owned),
            raw: v.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::EndpointStatus;

    #[test]
    fn a_set_not_yet_refreshed_has_no_age_and_a_missing_age_is_an_error() {
        let fresh = json!({"endpoint": "k3s-upstreams:6443", "addrs": [], "failures": 0,
            "last_error": null, "last_refresh_age_ms": null});
        assert_eq!(
            EndpointStatus::from_json(&fresh)
                .unwrap()
                .last_refresh_age_ms,
            None
        );
        let mut aged = fresh.clone();
        aged["last_refresh_age_ms"] = json!(1200);
        assert_eq!(
            EndpointStatus::from_json(&aged)
                .unwrap()
                .last_refresh_age_ms,
            Some(1200)
        );
        let mut gone = fresh;
        gone.as_object_mut().unwrap().remove("last_refresh_age_ms");
        let e = EndpointStatus::from_json(&gone).unwrap_err().to_string();
        assert!(e.contains("lacks last_refresh_age_ms"), "{e}");
    }
}
