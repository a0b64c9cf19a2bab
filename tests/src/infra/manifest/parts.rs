//! Reading the pieces of the manifest: volumes with their sources, exec probes, scalars.

use anyhow::{Context, Result, bail, ensure};
use yaml_rust2::Yaml;

use super::{Mount, Probe, Source};

pub(super) fn volumes(spec: &Yaml, c: &Yaml, cm: &Yaml) -> Result<Vec<Mount>> {
    let vols = spec["volumes"].as_vec().context("no volumes")?;
    let mut out = Vec::new();
    for m in c["volumeMounts"].as_vec().context("no volumeMounts")? {
        let name = text_of(&m["name"], "volumeMounts.name")?;
        let v = vols
            .iter()
            .find(|v| v["name"].as_str() == Some(&name))
            .with_context(|| format!("no volume {name}"))?;
        let source = if let Some(p) = v["hostPath"]["path"].as_str() {
            Source::HostPath(p.to_owned())
        } else if !v["emptyDir"].is_badvalue() {
            Source::EmptyDir
        } else if v["configMap"]["name"].as_str() == cm["metadata"]["name"].as_str() {
            let data = cm["data"].as_hash().context("ConfigMap without data")?;
            Source::ConfigMap(
                data.iter()
                    .filter_map(|(k, v)| Some((k.as_str()?.to_owned(), v.as_str()?.to_owned())))
                    .collect(),
            )
        } else {
            bail!("volume {name}: a kind the lab does not map")
        };
        out.push(Mount {
            path: text_of(&m["mountPath"], "mountPath")?,
            read_only: m["readOnly"].as_bool().unwrap_or(false),
            name,
            source,
        });
    }
    Ok(out)
}

pub(super) fn probe(p: &Yaml) -> Result<Probe> {
    let command = strings(&p["exec"]["command"]);
    ensure!(!command.is_empty(), "not an exec probe");
    Ok(Probe {
        command,
        timeout_s: number(&p["timeoutSeconds"]).unwrap_or(1),
    })
}

pub(super) fn text_of(y: &Yaml, what: &str) -> Result<String> {
    y.as_str()
        .map(str::to_owned)
        .with_context(|| format!("no {what}"))
}

pub(super) fn strings(y: &Yaml) -> Vec<String> {
    y.as_vec()
        .map(|v| {
            v.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn number(y: &Yaml) -> Option<u64> {
    y.as_i64().and_then(|n| u64::try_from(n).ok())
}
