//! Least privilege, measured: what the manifest grants by default, what the seccomp profile
//! refuses inside the running pod (the kernel's own answer without it, for contrast), the
//! documented `restart_unit` opt-in, and the profile's dependence on `no_new_privs`.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use lifeline_tests::infra::manifest::{Mount, Pod, Seccomp, Source};
use lifeline_tests::infra::pod_syscalls::{self, NAME, Outcome};
use lifeline_tests::infra::podman::Podman;

use super::{config, exec};
use crate::container::lab_node::{DEVICE, LabNode, TOOLS};

const EPERM: Outcome = Outcome::Errno(libc::EPERM);

/// The default manifest: no `SYS_PTRACE`, no host bus, no token, `no_new_privs`, `AppArmor`
/// not off.
pub(crate) fn assert_least_privilege(pod: &Pod) -> Result<()> {
    for cap in [
        "SYS_ADMIN",
        "SYS_PTRACE",
        "SYSLOG",
        "SYS_MODULE",
        "DAC_READ_SEARCH",
    ] {
        ensure!(
            !pod.cap_add.iter().any(|c| c == cap),
            "{cap} in {:?}",
            pod.cap_add
        );
    }
    ensure!(pod.cap_drop == ["ALL"], "drops {:?}", pod.cap_drop);
    let dbus = pod.mounts.iter().find(|m| {
        m.path.starts_with("/run/dbus") || m.source == Source::HostPath("/run/dbus".into())
    });
    ensure!(dbus.is_none(), "the host's bus is mounted: {dbus:?}");
    let t = config(pod)?;
    for key in ["restart_unit", "systemd_bus"] {
        ensure!(!t.contains_key(key), "the ConfigMap sets {key}");
    }
    ensure!(
        !pod.service_account_token,
        "a service account token is mounted"
    );
    ensure!(
        pod.no_new_privileges,
        "allowPrivilegeEscalation is not false"
    );
    ensure!(!pod.apparmor_unconfined, "AppArmor is Unconfined");
    ensure!(!pod.privileged, "privileged");
    Ok(())
}

/// The helper's report from a process in the running pod, and from a one-off container of
/// the same pod without the profile; the profile's refusals are not the kernel's. Test e:
/// the node's link and route (`DEVICE`) are left as they were by the pod, and changed by
/// the same calls without the profile. Returns the filters the profile alone makes
/// (`Seccomp_filters` of a process in the pod that is not lifeline).
pub(crate) fn assert_refused(
    podman: &Podman,
    node: &LabNode,
    pod: &Pod,
    name: &str,
) -> Result<u32> {
    let helper = vec![format!("{TOOLS}/{NAME}"), DEVICE.to_owned()];
    ensure!(
        node.device()? == (true, true),
        "{DEVICE} is not up with its route"
    );
    let text = exec(podman, name, &helper, Duration::from_secs(10))?;
    eprintln!("in the pod:\n{text}");
    let pod_says = pod_syscalls::parse(&text)?;
    ensure!(
        node.device()? == (true, true),
        "the pod changed {DEVICE}: (up, route) = {:?}",
        node.device()?
    );
    let (code, text) = node.run_once(podman, pod, &Seccomp::Unconfined, &helper)?;
    eprintln!("the same pod without the profile:\n{text}");
    ensure!(code == Some(0), "the helper failed unconfined: {text}");
    let kernel_says = pod_syscalls::parse(&text)?;
    ensure!(
        node.device()? == (false, false),
        "without the profile the calls did not reach {DEVICE}: (up, route) = {:?}",
        node.device()?
    );
    let want: BTreeMap<&str, (Outcome, Outcome)> = BTreeMap::from([
        ("unshare-user", (EPERM, Outcome::Ok)),
        ("clone-newuser", (EPERM, Outcome::Ok)),
        ("mount", (EPERM, Outcome::Errno(libc::ENOENT))),
        ("ptrace", (EPERM, Outcome::Errno(libc::ESRCH))),
        ("netlink-route", (EPERM, Outcome::Ok)),
        (
            "clone3",
            (Outcome::Errno(libc::ENOSYS), Outcome::Errno(libc::EINVAL)),
        ),
        ("netlink-sock-diag", (Outcome::Ok, Outcome::Ok)),
        ("inet6", (Outcome::Ok, Outcome::Ok)),
        ("unix", (Outcome::Ok, Outcome::Ok)),
        ("siocdelrt", (EPERM, Outcome::Ok)),
        ("siocsifflags", (EPERM, Outcome::Ok)),
    ]);
    for (call, (profile, kernel)) in want {
        let got = (pod_says.get(call), kernel_says.get(call));
        ensure!(
            got == (Some(&profile), Some(&kernel)),
            "{call}: in the pod {:?} (want {profile:?}), without the profile {:?} (want {kernel:?})",
            got.0,
            got.1
        );
    }
    match pod_says.get("seccomp-filters") {
        Some(Outcome::Count(n)) if *n >= 1 => Ok(*n),
        other => anyhow::bail!("the pod's helper runs under {other:?} seccomp filters"),
    }
}

/// The pod with the `restart_unit` opt-in exactly as the manifest's comment writes it: its
/// two lines added to lifeline.toml, and the host's `/run/dbus` mounted.
pub(crate) fn with_restart_opt_in(pod: &Pod, manifest: &str) -> Result<Pod> {
    let lines: Vec<&str> = manifest
        .lines()
        .map(|l| l.trim_start().trim_start_matches('#').trim())
        .filter(|l| l.starts_with("restart_unit = ") || l.starts_with("systemd_bus = "))
        .collect();
    ensure!(
        lines.len() == 2,
        "the manifest documents the opt-in as {lines:?}"
    );
    ensure!(
        manifest.contains("{name: dbus, mountPath: /run/dbus}")
            && manifest.contains("{name: dbus, hostPath: {path: /run/dbus, type: Directory}}"),
        "the manifest does not document the /run/dbus mount"
    );
    let mut pod = pod.clone();
    let cm = pod
        .mounts
        .iter_mut()
        .find_map(|m| match &mut m.source {
            Source::ConfigMap(files) => files.get_mut("lifeline.toml"),
            _ => None,
        })
        .context("no lifeline.toml")?;
    for l in lines {
        cm.push_str(l);
        cm.push('\n');
    }
    pod.mounts.push(Mount {
        name: "dbus".into(),
        path: "/run/dbus".into(),
        read_only: false,
        source: Source::HostPath("/run/dbus".into()),
    });
    Ok(pod)
}
