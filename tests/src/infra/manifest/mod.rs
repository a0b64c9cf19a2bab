//! `packaging/daemonset.yaml`, read as the container lab test's input: the pod's one
//! container with its `securityContext`, volumes and probes, and the `ConfigMap` it mounts.
//! Strict: a key of the `securityContext` or a volume kind this reader does not map is an
//! error, so a manifest change cannot go untested by being ignored.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use yaml_rust2::YamlLoader;

mod parts;
use parts::{number, probe, strings, text_of, volumes};

/// Where a volume comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    HostPath(String),
    EmptyDir,
    /// The `ConfigMap`'s files (name to text).
    ConfigMap(BTreeMap<String, String>),
}

#[derive(Clone, Debug)]
pub struct Mount {
    pub name: String,
    pub path: String,
    pub read_only: bool,
    pub source: Source,
}

#[derive(Clone, Debug)]
pub struct Probe {
    pub command: Vec<String>,
    pub timeout_s: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seccomp {
    RuntimeDefault,
    Unconfined,
    /// Relative to `kubelet's` seccomp directory.
    Localhost(String),
}

/// The pod, as far as a container runtime sees it.
#[allow(
    clippy::struct_excessive_bools,
    reason = "the manifest's own yes/no settings, one field each"
)]
#[derive(Clone, Debug)]
pub struct Pod {
    pub image: String,
    pub command: Vec<String>,
    pub host_network: bool,
    pub host_pid: bool,
    pub grace_s: u64,
    pub privileged: bool,
    pub no_new_privileges: bool,
    pub read_only_root: bool,
    pub run_as_user: Option<i64>,
    pub cap_drop: Vec<String>,
    pub cap_add: Vec<String>,
    pub seccomp: Seccomp,
    pub apparmor_unconfined: bool,
    /// `automountServiceAccountToken` (Kubernetes mounts a token unless it is `false`).
    pub service_account_token: bool,
    pub memory_limit: Option<String>,
    pub mounts: Vec<Mount>,
    pub readiness: Probe,
    pub liveness: Probe,
}

impl Pod {
    /// # Errors
    /// When the file cannot be read, or lacks or has something this reader does not map.
    pub fn read(path: &Path) -> Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let docs = YamlLoader::load_from_str(&text).context("parsing the manifest")?;
        let kind = |k: &str| docs.iter().find(|d| d["kind"].as_str() == Some(k));
        let ds = kind("DaemonSet").context("no DaemonSet")?;
        let cm = kind("ConfigMap").context("no ConfigMap")?;
        let spec = &ds["spec"]["template"]["spec"];
        let containers = spec["containers"].as_vec().context("no containers")?;
        ensure!(containers.len() == 1, "one container expected");
        let c = &containers[0];
        let sc = &c["securityContext"];
        for key in sc.as_hash().context("no securityContext")?.keys() {
            let known = [
                "privileged",
                "allowPrivilegeEscalation",
                "readOnlyRootFilesystem",
                "runAsUser",
                "capabilities",
                "seccompProfile",
                "appArmorProfile",
            ];
            let key = key.as_str().unwrap_or_default();
            ensure!(known.contains(&key), "securityContext.{key} is not mapped");
        }
        let mounts = volumes(spec, c, cm)?;
        Ok(Self {
            image: text_of(&c["image"], "image")?,
            command: strings(&c["command"]),
            host_network: spec["hostNetwork"].as_bool().unwrap_or(false),
            host_pid: spec["hostPID"].as_bool().unwrap_or(false),
            grace_s: number(&spec["terminationGracePeriodSeconds"]).unwrap_or(30),
            privileged: sc["privileged"].as_bool().unwrap_or(false),
            no_new_privileges: sc["allowPrivilegeEscalation"].as_bool() == Some(false),
            read_only_root: sc["readOnlyRootFilesystem"].as_bool().unwrap_or(false),
            run_as_user: sc["runAsUser"].as_i64(),
            cap_drop: strings(&sc["capabilities"]["drop"]),
            cap_add: strings(&sc["capabilities"]["add"]),
            seccomp: match sc["seccompProfile"]["type"].as_str() {
                None | Some("RuntimeDefault") => Seccomp::RuntimeDefault,
                Some("Unconfined") => Seccomp::Unconfined,
                Some("Localhost") => Seccomp::Localhost(text_of(
                    &sc["seccompProfile"]["localhostProfile"],
                    "localhostProfile",
                )?),
                Some(other) => bail!("seccompProfile type {other} is not mapped"),
            },
            apparmor_unconfined: match sc["appArmorProfile"]["type"].as_str() {
                None | Some("RuntimeDefault") => false,
                Some("Unconfined") => true,
                Some(other) => bail!("appArmorProfile type {other} is not mapped"),
            },
            service_account_token: spec["automountServiceAccountToken"]
                .as_bool()
                .unwrap_or(true),
            memory_limit: c["resources"]["limits"]["memory"]
                .as_str()
                .map(str::to_owned),
            mounts,
            readiness: probe(&c["readinessProbe"]).context("readinessProbe")?,
            liveness: probe(&c["livenessProbe"]).context("livenessProbe")?,
        })
    }
}
