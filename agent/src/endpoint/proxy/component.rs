//! Which processes may be kubelet's proxy: a node component, as its cgroup says. Only the
//! node's administrator makes one, and no pod or local user can put a process in one:
//!
//! - **a systemd unit's**: `/SLICE.slice/.../NAME.service`, every level above the unit a
//!   slice (`/system.slice/haproxy.service`, `/kube.slice/nginx.service`), where systemd runs
//!   a system service's processes. Not below `user.slice` (a user's own manager makes units
//!   and scopes there for that user) nor `machine.slice` (guests of systemd-machined).
//! - **a static pod's**: kubelet names a pod's cgroup after its UID, `pod<UID>` under
//!   `kubepods/[burstable|besteffort]/` with the cgroupfs driver and
//!   `kubepods[-QOS]-pod<UID>.slice` under `kubepods.slice/[kubepods-QOS.slice/]` with the
//!   systemd driver (its `-` turned `_`: `GetPodContainerName` and `CgroupName.ToSystemd` in
//!   <https://github.com/kubernetes/kubernetes/blob/v1.33.0/pkg/kubelet/cm/pod_container_manager_linux.go>
//!   and `cgroup_manager_linux.go`); the container's cgroup is the level below it. A static
//!   pod's UID is the hex MD5 of its manifest and source, 32 hex digits
//!   (`applyDefaults` in
//!   <https://github.com/kubernetes/kubernetes/blob/v1.33.0/pkg/kubelet/config/common.go>),
//!   while the API server gives every pod it creates a random UUID, 36 characters with dashes
//!   (`FillObjectMetaSystemFields`, <https://github.com/kubernetes/kubernetes/blob/v1.33.0/staging/src/k8s.io/apiserver/pkg/registry/rest/meta.go>),
//!   which a client cannot choose. So a hostNetwork pod, even one running as root, is never
//!   taken for the node's proxy: kubespray's `nginx-proxy` and the kubeadm guide's haproxy
//!   are static pods, k3s's and RKE2's balancers are inside their agent's unit.

use std::fmt;

/// A process's place on the node, when it is a node component.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Component {
    /// A systemd unit (its name).
    Unit(String),
    /// A static pod (its UID) and the container's cgroup.
    StaticPod { uid: String, container: String },
}

impl fmt::Display for Component {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unit(u) => write!(f, "systemd unit {u}"),
            Self::StaticPod { uid, .. } => write!(f, "static pod {uid}"),
        }
    }
}

/// The rule above, for the cgroup path `path` (from the hierarchy's root). `Err`: why it is
/// no node component, one line.
///
/// # Errors
/// As above.
pub(super) fn classify(path: &str) -> Result<Component, String> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    if let Some(top) = parts.first()
        && matches!(*top, "user.slice" | "machine.slice")
    {
        return Err(format!(
            "cgroup {path} is under {top} (a user's own or a guest's), not a node component's"
        ));
    }
    // systemd's names are case-sensitive: `X.SLICE` is no slice.
    #[allow(clippy::case_sensitive_file_extension_comparisons)]
    let slices = parts.iter().take_while(|p| p.ends_with(".slice")).count();
    let rest = &parts[slices..];
    if let [unit] = rest
        && unit.ends_with(".service")
    {
        return Ok(Component::Unit((*unit).to_owned()));
    }
    // The systemd driver's pod slice is itself a `.slice`: look for kubepods among them.
    let k = parts
        .iter()
        .position(|p| *p == "kubepods" || *p == "kubepods.slice");
    let pod = k.and_then(|k| {
        let below = &parts[k + 1..];
        let (pod, container) = match below {
            [pod, container] | [_, pod, container] => (*pod, *container),
            _ => return None,
        };
        let uid = pod.strip_prefix("pod").or_else(|| {
            pod.strip_suffix(".slice")?
                .rsplit_once("-pod")
                .map(|(_, u)| u)
        })?;
        Some((uid, container))
    });
    // Everything above kubepods must be slices (a cgroup root of the node's).
    let pod = pod.filter(|_| k.is_some_and(|k| k <= slices));
    match pod {
        Some((uid, container)) if is_static_uid(uid) => Ok(Component::StaticPod {
            uid: uid.to_owned(),
            container: container.to_owned(),
        }),
        Some((uid, _)) => Err(format!(
            "cgroup {path} is pod {uid}'s, a pod the API server created, not a static pod (kubelet names those by the MD5 of their manifest)"
        )),
        None => Err(format!(
            "cgroup {path} is neither a systemd unit's (/SLICE.slice/NAME.service) nor a static pod's (kubepods.../pod<MD5>/CONTAINER)"
        )),
    }
}

/// 32 lowercase hex digits: kubelet's MD5 of a static pod.
fn is_static_uid(uid: &str) -> bool {
    uid.len() == 32
        && uid
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MD5: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn units_and_static_pods_are_node_components() {
        assert_eq!(
            classify("/system.slice/haproxy.service"),
            Ok(Component::Unit("haproxy.service".into()))
        );
        assert_eq!(
            classify("/kube.slice/lab-x.slice/nginx.service"),
            Ok(Component::Unit("nginx.service".into()))
        );
        let cgroupfs = format!("/kubepods/burstable/pod{MD5}/0a1b2c");
        assert_eq!(
            classify(&cgroupfs),
            Ok(Component::StaticPod {
                uid: MD5.into(),
                container: "0a1b2c".into()
            })
        );
        let guaranteed = format!("/kubepods/pod{MD5}/0a1b2c");
        assert!(classify(&guaranteed).is_ok());
        let systemd = format!(
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{MD5}.slice/cri-containerd-0a1b.scope"
        );
        assert_eq!(
            classify(&systemd).map(|c| c.to_string()),
            Ok(format!("static pod {MD5}"))
        );
        let under_a_slice = format!("/ll-1-2.slice/kubepods.slice/kubepods-pod{MD5}.slice/c.scope");
        assert!(classify(&under_a_slice).is_ok(), "{under_a_slice}");
    }

    #[test]
    fn anything_else_is_refused_with_its_reason() {
        let api_pod = "/kubepods/burstable/pod3f0c6a8e-2b1d-4f5e-9a7b-1c2d3e4f5a6b/0a1b";
        assert!(classify(api_pod).is_err_and(|e| e.contains("the API server created")));
        let systemd_api_pod = "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod3f0c6a8e_2b1d_4f5e_9a7b_1c2d3e4f5a6b.slice/cri-containerd-1.scope";
        assert!(classify(systemd_api_pod).is_err());
        for path in [
            "/",
            "/ll-1-2",
            "/system.slice",
            "/system.slice/docker-0a1b.scope",
            "/system.slice/haproxy.service/extra",
            "/user.slice/user-1000.slice/user@1000.service",
            "/user.slice/user-1000.slice/user@1000.service/app.slice/nginx.service",
            "/machine.slice/systemd-nspawn@a.service",
            "/lab/kubepods/pod0123456789abcdef0123456789abcdef/c",
            "/kubepods/burstable/pod0123456789abcdef0123456789abcdef",
            "/kubepods/burstable/podZZ23456789abcdef0123456789abcdef/c",
        ] {
            assert!(classify(path).is_err(), "{path} accepted");
        }
    }
}
