//! Where the API endpoint comes from when no `--endpoint` is given: kubelet's kubeconfig,
//! found as kubelet itself was told (its running process's `--kubeconfig`), else at the
//! place a known distribution puts it.

use std::{
    fmt,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, PoisonError},
};

use super::{
    kubelet,
    trust::{Ignored, Trust},
};

/// A distribution's kubelet kubeconfig.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct WellKnown {
    pub path: &'static str,
    pub distribution: &'static str,
}

impl WellKnown {
    const fn new(path: &'static str, distribution: &'static str) -> Self {
        Self { path, distribution }
    }
}

/// Looked at in this order, only when no kubelet with a `--kubeconfig` runs in this network
/// namespace (e.g. lifeline started before kubelet). kubeadm's comes first: it was the only
/// default before discovery.
pub(crate) const WELL_KNOWN: &[WellKnown] = &[
    WellKnown::new("/etc/kubernetes/kubelet.conf", "kubeadm"),
    WellKnown::new("/var/lib/kubelet/kubeconfig", "EKS"),
    // kube-aws v0.14 and later (its cloud-config-worker); older releases used
    // /etc/kubernetes/kubeconfig/worker.yaml, and the project is retired since 2020.
    WellKnown::new("/etc/kubernetes/kubeconfig/kubelet.yaml", "kube-aws"),
    WellKnown::new("/var/lib/rancher/k3s/agent/kubelet.kubeconfig", "k3s"),
    WellKnown::new("/var/lib/rancher/rke2/agent/kubelet.kubeconfig", "RKE2"),
];

/// Where the followed endpoints came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// `--endpoint` (on the command line or in the config file).
    EndpointFlag,
    /// `--kubeconfig PATH`.
    KubeconfigFlag(PathBuf),
    /// The running kubelet's `--kubeconfig`.
    Kubelet {
        pid: u32,
        /// Its start time (`/proc/PID/stat` field 22): a restart is another (pid, start).
        start: u64,
        /// As written on kubelet's command line.
        arg: PathBuf,
        /// The path read (through `/proc/PID/...` when kubelet's view differs from ours).
        file: PathBuf,
        /// How many kubelet processes with a `--kubeconfig` there were (the oldest was used).
        of: usize,
    },
    WellKnown(&'static WellKnown),
}

impl Source {
    /// The kubeconfig read, if any.
    #[must_use]
    pub(crate) fn file(&self) -> Option<&Path> {
        match self {
            Self::EndpointFlag => None,
            Self::KubeconfigFlag(p) | Self::Kubelet { file: p, .. } => Some(p),
            Self::WellKnown(w) => Some(Path::new(w.path)),
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::EndpointFlag => f.write_str("--endpoint"),
            Self::KubeconfigFlag(p) => write!(f, "--kubeconfig {}", p.display()),
            Self::Kubelet {
                pid, arg, file, of, ..
            } => {
                write!(f, "kubelet pid {pid} --kubeconfig {}", arg.display())?;
                if file != arg {
                    write!(f, " (read as {})", file.display())?;
                }
                if *of > 1 {
                    write!(f, " (the oldest of {of} kubelet processes)")?;
                }
                Ok(())
            }
            Self::WellKnown(w) => write!(f, "well-known path {} ({})", w.path, w.distribution),
        }
    }
}

/// The source followed now, shared with re-discovery (which replaces it when kubelet
/// restarts); shown as the source it holds.
#[derive(Clone, Debug)]
pub(crate) struct Followed(Arc<Mutex<Source>>);

impl Followed {
    #[must_use]
    pub(crate) fn new(source: Source) -> Self {
        Self(Arc::new(Mutex::new(source)))
    }

    #[must_use]
    pub(crate) fn get(&self) -> Source {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn set(&self, source: Source) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = source;
    }
}

impl fmt::Display for Followed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.get().fmt(f)
    }
}

/// The kubeconfig to read: the running kubelet's (one `trust` accepts), else the first
/// well-known path that exists. None when there is neither (a node without kubelet yet).
#[must_use]
pub(crate) fn find(trust: &Trust) -> Option<Source> {
    kubelet_source(trust)
        .0
        .or_else(|| well_known(|p: &Path| p.exists()).map(Source::WellKnown))
}

/// The oldest running kubelet `trust` accepts, and every process named `kubelet` with a
/// `--kubeconfig` it does not.
#[must_use]
pub(crate) fn kubelet_source(trust: &Trust) -> (Option<Source>, Vec<Ignored>) {
    let mut ignored = Vec::new();
    let trusted: Vec<kubelet::Kubelet> = kubelet::running()
        .into_iter()
        .filter(|k| match trust.judge(k.pid, k.start) {
            Some(Ok(())) => true,
            Some(Err(i)) => {
                ignored.push(i);
                false
            }
            None => false,
        })
        .collect();
    let source = kubelet::oldest(trusted).map(|(k, of)| Source::Kubelet {
        pid: k.pid,
        start: k.start,
        file: kubelet::read_path(k.pid, &k.arg, |p: &Path| p.exists()),
        arg: k.arg,
        of,
    });
    (source, ignored)
}

/// The first entry of `WELL_KNOWN` that exists.
fn well_known(exists: impl Fn(&Path) -> bool) -> Option<&'static WellKnown> {
    WELL_KNOWN.iter().find(|w| exists(Path::new(w.path)))
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn well_known_table() {
        let paths: HashSet<&str> = WELL_KNOWN.iter().map(|w| w.path).collect();
        assert_eq!(paths.len(), WELL_KNOWN.len(), "a path listed twice");
        assert!(
            WELL_KNOWN
                .iter()
                .all(|w| w.path.starts_with('/') && !w.distribution.is_empty())
        );
        let names: Vec<&str> = WELL_KNOWN.iter().map(|w| w.distribution).collect();
        assert_eq!(names, ["kubeadm", "EKS", "kube-aws", "k3s", "RKE2"]);
    }

    #[test]
    fn first_existing_well_known_path_wins() {
        const BOTH: [&str; 2] = [
            "/var/lib/rancher/rke2/agent/kubelet.kubeconfig",
            "/var/lib/kubelet/kubeconfig",
        ];
        let some =
            |ps: &'static [&'static str]| move |p: &Path| ps.iter().any(|x| Path::new(x) == p);
        assert_eq!(well_known(some(&BOTH)).map(|w| w.distribution), Some("EKS"));
        assert_eq!(
            well_known(some(&BOTH[..1])).map(|w| w.distribution),
            Some("RKE2")
        );
        assert_eq!(well_known(|_| false), None);
    }

    #[test]
    fn sources_name_the_file() {
        let k = Source::Kubelet {
            pid: 812,
            start: 1,
            arg: "kc".into(),
            file: "/proc/812/cwd/kc".into(),
            of: 2,
        };
        assert_eq!(
            k.to_string(),
            "kubelet pid 812 --kubeconfig kc (read as /proc/812/cwd/kc) (the oldest of 2 kubelet processes)"
        );
        assert_eq!(k.file(), Some(Path::new("/proc/812/cwd/kc")));
        let k = Source::Kubelet {
            pid: 9,
            start: 1,
            arg: "/a".into(),
            file: "/a".into(),
            of: 1,
        };
        assert_eq!(k.to_string(), "kubelet pid 9 --kubeconfig /a");
        assert_eq!(
            Source::WellKnown(&WELL_KNOWN[1]).to_string(),
            "well-known path /var/lib/kubelet/kubeconfig (EKS)"
        );
        assert_eq!(Source::EndpointFlag.file(), None);
    }
}
