//! The packaging checks `cargo xtask test` runs (before the lab, seconds): the alert rules
//! with promtool (`check rules`, then `test rules`: every alert firing and not firing), and
//! every kustomization under `packaging/kubernetes/` rendered with `kubectl kustomize` and
//! validated with `kubernetes-validate --strict` against the API schemas of every Kubernetes
//! release from 1.28 to the newest the pinned kubernetes-validate knows (the Prometheus
//! operator's kinds have no schema there: tests/tests/lab/packaging.rs reads the `PodMonitor`). The renders are kept
//! in `target/kustomize/`; tests/tests/lab/packaging.rs asserts what each overlay changes.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result, bail};
use xtask::process::{Output, capture, run};

use crate::manifests;

/// The `PyPI` release of kubernetes-validate (its schemas go up to Kubernetes 1.37).
const KUBERNETES_VALIDATE: &str = "1.37.0";
/// The Kubernetes releases validated against: the oldest still run by the distributions the
/// overlays are for (EKS extended support), to the newest the pinned release knows.
const KUBERNETES: std::ops::RangeInclusive<u32> = 28..=37;
const RULE_TESTS: &str = "packaging/prometheus/lifeline-rules.test.yaml";
const KUSTOMIZE_ROOT: &str = "packaging/kubernetes";

pub(crate) fn check(ws: &Path) -> Result<()> {
    rules(ws)?;
    let validate = kubernetes_validate()?;
    let renders = render_all(ws)?;
    for minor in KUBERNETES {
        run(
            &format!("validating the manifests against Kubernetes 1.{minor}"),
            Command::new(&validate)
                .args([
                    "--strict",
                    "--quiet",
                    "--no-warn",
                    "-k",
                    &format!("1.{minor}"),
                ])
                .args(&renders),
            Output::Inherit,
        )?;
    }
    eprintln!(
        "xtask: {} manifests valid for Kubernetes 1.{} to 1.{}",
        renders.len(),
        KUBERNETES.start(),
        KUBERNETES.end()
    );
    Ok(())
}

/// promtool on the shipped rules, and the `PrometheusRule` generated from them.
fn rules(ws: &Path) -> Result<()> {
    run(
        "promtool check rules",
        Command::new("promtool")
            .current_dir(ws)
            .args(["check", "rules", manifests::RULES]),
        Output::Inherit,
    )?;
    run(
        "promtool test rules",
        Command::new("promtool")
            .current_dir(ws)
            .args(["test", "rules", RULE_TESTS]),
        Output::Inherit,
    )?;
    if manifests::generate(ws)? {
        bail!(
            "{} was stale and has been regenerated from {}: commit it",
            manifests::PROMETHEUS_RULE,
            manifests::RULES
        );
    }
    Ok(())
}

/// Every directory under `packaging/kubernetes/` with a kustomization, rendered into
/// `target/kustomize/<dir with - for />.yaml`; their paths.
fn render_all(ws: &Path) -> Result<Vec<PathBuf>> {
    let kubectl = kubectl()?;
    let out = crate::cargo_run::target_dir(ws)?.join("kustomize");
    std::fs::create_dir_all(&out)?;
    let mut dirs = Vec::new();
    find_kustomizations(&ws.join(KUSTOMIZE_ROOT), &mut dirs)?;
    dirs.sort();
    let mut renders = Vec::new();
    for dir in &dirs {
        let rel = slug(ws, dir)?;
        let text = capture(
            &format!("kubectl kustomize {}", dir.display()),
            Command::new(&kubectl).arg("kustomize").arg(dir),
        )?;
        let file = out.join(format!("{rel}.yaml"));
        std::fs::write(&file, text)?;
        renders.push(file);
    }
    if renders.is_empty() {
        bail!("no kustomization under {KUSTOMIZE_ROOT}");
    }
    // Each component on top of each kustomization, as an operator's own kustomization
    // would use it.
    let mut components = Vec::new();
    find_components(&ws.join(KUSTOMIZE_ROOT), &mut components)?;
    components.sort();
    for c in &components {
        for dir in &dirs {
            let name = format!("{}+{}", slug(ws, dir)?, slug(ws, c)?);
            let tmp = out.join(&name);
            std::fs::create_dir_all(&tmp)?;
            std::fs::write(
                tmp.join("kustomization.yaml"),
                format!(
                    "resources: [{}]\ncomponents: [{}]\n",
                    via_root(&tmp, dir),
                    via_root(&tmp, c)
                ),
            )?;
            let text = capture(
                &format!("kubectl kustomize {} with {}", dir.display(), c.display()),
                Command::new(&kubectl).arg("kustomize").arg(&tmp),
            )?;
            let file = out.join(format!("{name}.yaml"));
            std::fs::write(&file, text)?;
            renders.push(file);
        }
    }
    Ok(renders)
}

/// `dir` under `packaging/kubernetes/`, with `-` for `/`.
fn slug(ws: &Path, dir: &Path) -> Result<String> {
    Ok(dir
        .strip_prefix(ws.join(KUSTOMIZE_ROOT))?
        .to_string_lossy()
        .replace('/', "-"))
}

/// `target` as a path relative to `from` (kustomize refuses absolute ones): up to the root
/// and down again.
fn via_root(from: &Path, target: &Path) -> String {
    let up = from.components().count().saturating_sub(1);
    format!(
        "{}{}",
        "../".repeat(up),
        target.to_string_lossy().trim_start_matches('/')
    )
}

fn find_components(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let k = dir.join("kustomization.yaml");
    if k.is_file() && std::fs::read_to_string(&k)?.contains("kind: Component") {
        out.push(dir.to_path_buf());
    }
    for e in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let p = e?.path();
        if p.is_dir() {
            find_components(&p, out)?;
        }
    }
    Ok(())
}

/// Components (`kind: Component`) cannot be rendered alone; they are rendered where an
/// overlay uses them.
fn find_kustomizations(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let k = dir.join("kustomization.yaml");
    if k.is_file() && !std::fs::read_to_string(&k)?.contains("kind: Component") {
        out.push(dir.to_path_buf());
    }
    for e in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let p = e?.path();
        if p.is_dir() {
            find_kustomizations(&p, out)?;
        }
    }
    Ok(())
}

/// A kubectl whose kustomize reads these kustomizations (`resources:` naming directories,
/// `patches:`, components: kustomize 4 and later, kubectl 1.21 and later). Debian 12's
/// kubernetes-client is kubectl 1.20 with kustomize 2.0.3, which reads none of that, so it is
/// installed only where no kubectl exists, and then named in the error.
fn kubectl() -> Result<PathBuf> {
    if xtask::which("kubectl").is_none() {
        crate::packages::install(&["kubernetes-client"])?;
    }
    let kubectl = xtask::which("kubectl").context("no kubectl after installing it")?;
    let version = capture(
        "kubectl version --client",
        Command::new(&kubectl).args(["version", "--client"]),
    )?;
    let kustomize = version
        .lines()
        .find_map(|l| l.strip_prefix("Kustomize Version: v"))
        .and_then(|v| v.split('.').next()?.parse::<u32>().ok());
    match kustomize {
        Some(major) if major >= 4 => Ok(kubectl),
        _ => bail!(
            "{} embeds no kustomize 4 or later ({}); the overlays need one: install kubectl 1.21 or later",
            kubectl.display(),
            version.lines().next().unwrap_or_default()
        ),
    }
}

/// kubernetes-validate at the pinned release in a virtualenv of its own under the cache
/// directory (Debian's Python refuses system-wide pip installs), installed when missing.
fn kubernetes_validate() -> Result<PathBuf> {
    let venv = xtask::cache_dir()?.join(format!("kubernetes-validate-{KUBERNETES_VALIDATE}"));
    let bin = venv.join("bin/kubernetes-validate");
    if bin.is_file() {
        return Ok(bin);
    }
    if xtask::which("python3").is_none()
        || !Command::new("python3")
            .args(["-c", "import ensurepip, venv"])
            .status()
            .is_ok_and(|s| s.success())
    {
        crate::packages::install(&["python3-venv"])?;
    }
    let _ = std::fs::remove_dir_all(&venv);
    run(
        "creating kubernetes-validate's virtualenv",
        Command::new("python3").args(["-m", "venv"]).arg(&venv),
        Output::Inherit,
    )?;
    run(
        "installing kubernetes-validate",
        Command::new(venv.join("bin/pip")).args([
            "install",
            "--quiet",
            &format!("kubernetes-validate=={KUBERNETES_VALIDATE}"),
        ]),
        Output::Inherit,
    )?;
    Ok(bin)
}
