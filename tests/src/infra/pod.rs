//! The `DaemonSet`'s pod as `podman run` arguments: what kubelet and a CRI runtime would make
//! of the manifest on a node, with the lab standing in for the node.
//!
//! The mapping, setting by setting:
//! - `hostNetwork: true`: the container joins the network namespace the lab calls the node's
//!   (its client namespace, `--network ns:`), never the machine's own: test traffic stays in
//!   namespaces the test made. `hostPID: true`: `--pid host`.
//! - cgroup namespace: Kubernetes has no field; containerd gives a pod a private one on a
//!   cgroup v2 node (what real nodes run), so `--cgroupns private`, the stricter case (the
//!   host's hierarchy then shows as `/..` in the container's mountinfo).
//! - `securityContext`: `--privileged` only if set; `--cap-drop`/`--cap-add` as listed;
//!   `allowPrivilegeEscalation: false` is `no-new-privileges`; `readOnlyRootFilesystem` is
//!   `--read-only` without podman's extra tmpfs mounts (Kubernetes adds none); `runAsUser`
//!   is `--user`; `seccompProfile` `Localhost` is the file under `kubelet's` seccomp directory
//!   (`Node::seccomp_root`), `RuntimeDefault` podman's default profile (containers-common's,
//!   the same rules as containerd's for bpf and `perf_event_open`); `appArmorProfile`
//!   `Unconfined` is `apparmor=unconfined`, `RuntimeDefault` podman's default (none on the
//!   lab's kernel, which has no `AppArmor`). `automountServiceAccountToken`: podman mounts no
//!   token either way (the test asserts the manifest's `false`).
//! - volumes: `hostPath` is the node's path as `Node::host_paths` maps it (the lab's own
//!   directory for the node's /run/lifeline), `emptyDir` and
//!   `configMap` are fresh directories (the `ConfigMap`'s files written into it); `readOnly`.
//! - `limits.memory`, `terminationGracePeriodSeconds` (`--stop-timeout`), `command`
//!   (the entry point). Probes run as kubelet runs exec probes: `podman exec`.
//! - rlimits: the session may lack `CAP_SYS_RESOURCE`, so the container gets limits no higher
//!   than the session's own (podman would raise them, and runc fail).

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result, bail, ensure};

use crate::infra::manifest::{Pod, Seccomp, Source};

/// The node, as the lab provides it.
pub struct Node {
    /// `/run/netns/...` of the namespace that stands for the host's network.
    pub netns: String,
    /// `hostPath` on a node to the lab's path for it; a `hostPath` not listed is an error.
    pub host_paths: BTreeMap<String, PathBuf>,
    /// `kubelet's` seccomp directory (`/var/lib/kubelet/seccomp` on a node).
    pub seccomp_root: PathBuf,
    /// Where `emptyDir` and `configMap` volumes are made.
    pub scratch: PathBuf,
}

impl Node {
    /// The lab path of a volume mounted at `mount_path` in the container.
    ///
    /// # Errors
    /// When the pod has no such mount.
    pub fn volume_dir(&self, pod: &Pod, mount_path: &str) -> Result<PathBuf> {
        let m = pod
            .mounts
            .iter()
            .find(|m| m.path == mount_path)
            .with_context(|| format!("no volume at {mount_path}"))?;
        match &m.source {
            Source::HostPath(p) => self
                .host_paths
                .get(p)
                .cloned()
                .with_context(|| format!("hostPath {p}: the lab does not provide it")),
            _ => Ok(self.scratch.join(&m.name)),
        }
    }
}

/// `podman run` arguments for the pod's container named `name`, up to and including the
/// image; `seccomp` overrides the manifest's profile. `config` rewrites a `ConfigMap` file
/// (name, text) for the lab.
///
/// # Errors
/// When the manifest asks for something the lab does not map.
pub fn run_args(
    pod: &Pod,
    node: &Node,
    name: &str,
    seccomp: Option<&Seccomp>,
    config: &dyn Fn(&str, &str) -> Result<String>,
) -> Result<Vec<String>> {
    ensure!(pod.host_network, "the lab maps only hostNetwork pods");
    let mut a: Vec<String> = vec!["run".into(), "--name".into(), name.into()];
    let mut add = |xs: &[&str]| a.extend(xs.iter().map(|s| (*s).to_owned()));
    add(&["--network", &format!("ns:{}", node.netns)]);
    if pod.host_pid {
        add(&["--pid", "host"]);
    }
    add(&["--cgroupns", "private", "--ipc", "private"]);
    if pod.privileged {
        add(&["--privileged"]);
    }
    for c in &pod.cap_drop {
        add(&["--cap-drop", c]);
    }
    for c in &pod.cap_add {
        add(&["--cap-add", c]);
    }
    if pod.no_new_privileges {
        add(&["--security-opt", "no-new-privileges"]);
    }
    if pod.read_only_root {
        add(&["--read-only", "--read-only-tmpfs=false"]);
    }
    if let Some(u) = pod.run_as_user {
        add(&["--user", &u.to_string()]);
    }
    match seccomp.unwrap_or(&pod.seccomp) {
        Seccomp::RuntimeDefault => {}
        Seccomp::Unconfined => add(&["--security-opt", "seccomp=unconfined"]),
        Seccomp::Localhost(p) => {
            let file = node.seccomp_root.join(p);
            ensure!(file.is_file(), "no seccomp profile {}", file.display());
            add(&["--security-opt", &format!("seccomp={}", file.display())]);
        }
    }
    if pod.apparmor_unconfined {
        add(&["--security-opt", "apparmor=unconfined"]);
    }
    if let Some(m) = &pod.memory_limit {
        let bytes = m.replace("Mi", "m").replace("Gi", "g");
        add(&["--memory", &bytes]);
    }
    add(&["--stop-timeout", &pod.grace_s.to_string()]);
    let (nofile, _) = rlimit(libc::RLIMIT_NOFILE);
    add(&["--ulimit", &format!("nofile={nofile}:{nofile}")]);
    add(&["--ulimit", "nproc=4096:4096"]);
    for m in &pod.mounts {
        let src = match &m.source {
            Source::HostPath(p) => node
                .host_paths
                .get(p)
                .with_context(|| format!("hostPath {p}: the lab does not provide it"))?
                .clone(),
            Source::EmptyDir => make_dir(node.scratch.join(&m.name))?,
            Source::ConfigMap(files) => {
                let dir = make_dir(node.scratch.join(&m.name))?;
                for (file, text) in files {
                    std::fs::write(dir.join(file), config(file, text)?)?;
                }
                dir
            }
        };
        let ro = if m.read_only { ":ro" } else { "" };
        add(&["-v", &format!("{}:{}{ro}", src.display(), m.path)]);
    }
    let Some((exe, _)) = pod.command.split_first() else {
        bail!("the container has no command")
    };
    add(&["--entrypoint", exe, &pod.image]);
    a.extend(pod.command[1..].iter().cloned());
    Ok(a)
}

fn make_dir(dir: PathBuf) -> Result<PathBuf> {
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// (soft, hard) of one of this process's limits.
fn rlimit(which: libc::__rlimit_resource_t) -> (u64, u64) {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid out-pointer.
    unsafe { libc::getrlimit(which, &raw mut r) };
    (r.rlim_cur, r.rlim_max)
}
