//! `packaging/kubernetes/` as a cluster would receive it: a kustomization rendered by
//! `kubectl kustomize` (kustomize 4 or later: `cargo xtask test` checks the version), and
//! manifests as JSON values, so two renderings compare whatever their key order.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value};
use yaml_rust2::{Yaml, YamlLoader};

/// The documents of `kubectl kustomize DIR`.
///
/// # Errors
/// When kubectl fails or its output does not parse.
pub fn render(dir: &Path) -> Result<Vec<Value>> {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .output()
        .context("running kubectl (`cargo xtask test` installs what it needs)")?;
    if !out.status.success() {
        bail!(
            "kubectl kustomize {}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    parse(&String::from_utf8_lossy(&out.stdout))
}

/// The documents of `dir` with the kustomize component `component` on top, as an operator's
/// own kustomization would use it (written in a temporary directory, removed after).
///
/// # Errors
/// As `render`.
pub fn render_with(dir: &Path, component: &Path) -> Result<Vec<Value>> {
    let tmp = crate::infra::util::TempDir::new()?;
    // kustomize takes only relative paths: up to the root, then down.
    let up = "../".repeat(tmp.path().components().count().saturating_sub(1));
    let rel = |p: &Path| format!("{up}{}", p.to_string_lossy().trim_start_matches('/'));
    std::fs::write(
        tmp.path().join("kustomization.yaml"),
        format!(
            "resources: [{}]\ncomponents: [{}]\n",
            rel(dir),
            rel(component)
        ),
    )?;
    render(tmp.path())
}

/// The documents of a YAML stream, as JSON values.
///
/// # Errors
/// When the text is no YAML, or a mapping has a key that is not a scalar.
pub fn parse(text: &str) -> Result<Vec<Value>> {
    let docs = YamlLoader::load_from_str(text).context("parsing YAML")?;
    docs.iter().map(to_json).collect()
}

fn to_json(y: &Yaml) -> Result<Value> {
    Ok(match y {
        Yaml::Null | Yaml::BadValue => Value::Null,
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Integer(i) => Value::from(*i),
        Yaml::Real(r) => r.parse::<f64>().map_or(Value::Null, Value::from),
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Array(a) => Value::Array(a.iter().map(to_json).collect::<Result<_>>()?),
        Yaml::Hash(h) => {
            let mut m = Map::new();
            for (k, v) in h {
                let key = match k {
                    Yaml::String(s) => s.clone(),
                    Yaml::Integer(i) => i.to_string(),
                    Yaml::Boolean(b) => b.to_string(),
                    other => bail!("a mapping key that is not a scalar: {other:?}"),
                };
                m.insert(key, to_json(v)?);
            }
            Value::Object(m)
        }
        Yaml::Alias(_) => bail!("YAML aliases are not used in these manifests"),
    })
}

/// The one document of `kind`.
///
/// # Errors
/// When there is none, or more than one.
pub fn one<'a>(docs: &'a [Value], kind: &str) -> Result<&'a Value> {
    let mut of = docs.iter().filter(|d| d["kind"] == kind);
    match (of.next(), of.next()) {
        (Some(d), None) => Ok(d),
        (None, _) => bail!("no {kind}"),
        (Some(_), Some(_)) => bail!("more than one {kind}"),
    }
}
