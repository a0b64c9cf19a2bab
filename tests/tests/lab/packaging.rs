//! `packaging/kubernetes/`: the base is `packaging/daemonset.yaml` as shipped (the container
//! test's input), and each distribution's overlay changes the base in exactly the ways its
//! kustomization's comment says, nothing else: the table below is those differences (EKS's
//! port 443 and kubeconfig paths, kubespray's proxy configuration, the k3s/RKE2 units and
//! kubeconfigs, Talos' `KubePrism` port and kubelet cgroup). `cargo xtask test` also validates
//! every rendering against the Kubernetes API schemas (xtask/src/shipcheck.rs). Needs kubectl
//! with kustomize 4 or later, not root.

use std::path::PathBuf;

use anyhow::{Context, Result, ensure};
use lifeline_tests::infra::kustomize::{one, parse, render, render_with};
use lifeline_tests::infra::paths::{lifeline, workspace};
use serde_json::{Value, json};

/// An overlay's differences from the base.
struct Overlay {
    name: &'static str,
    /// Appended to the container's command (the base has no `args`).
    args: &'static [&'static str],
    /// Read-only hostPath mounts at the host's own path: (path, hostPath type, volume name).
    mounts: &'static [(&'static str, &'static str, &'static str)],
    /// The container's `SELinux` type, where the node enforces it.
    selinux_type: Option<&'static str>,
}

const KUBECONFIG: &str = "kubelet-kubeconfig";

const OVERLAYS: &[Overlay] = &[
    Overlay {
        name: "kubeadm",
        args: &["--kubeconfig", "/etc/kubernetes/kubelet.conf"],
        mounts: &[("/etc/kubernetes/kubelet.conf", "File", KUBECONFIG)],
        selinux_type: None,
    },
    Overlay {
        name: "kubespray",
        args: &["--kubeconfig", "/etc/kubernetes/kubelet.conf"],
        mounts: &[
            ("/etc/kubernetes/kubelet.conf", "File", KUBECONFIG),
            // nginx-proxy's configuration, where lifeline reads its upstreams.
            ("/etc/nginx", "DirectoryOrCreate", "nginx-proxy-config"),
        ],
        selinux_type: None,
    },
    Overlay {
        name: "eks-al2023",
        args: &[
            "--cgroup",
            "runtime.slice/kubelet.service",
            "--endpoint-clients",
            "--kubeconfig",
            "/var/lib/kubelet/kubeconfig",
            "--ports",
            "443",
        ],
        mounts: &[("/var/lib/kubelet/kubeconfig", "File", KUBECONFIG)],
        selinux_type: None,
    },
    Overlay {
        name: "eks-bottlerocket",
        args: &[
            "--cgroup",
            "runtime.slice/kubelet.service",
            "--endpoint-clients",
            "--kubeconfig",
            "/etc/kubernetes/kubelet/kubeconfig",
            "--ports",
            "443",
        ],
        mounts: &[("/etc/kubernetes/kubelet/kubeconfig", "File", KUBECONFIG)],
        selinux_type: Some("super_t"),
    },
    Overlay {
        name: "k3s",
        args: &[
            "--cgroup",
            "system.slice/k3s.service",
            "--cgroup",
            "system.slice/k3s-agent.service",
            "--endpoint-clients",
            "--kubeconfig",
            "/var/lib/rancher/k3s/agent/kubelet.kubeconfig",
            "--ports",
            "443,6443,6444",
        ],
        mounts: &[
            (
                "/var/lib/rancher/k3s/agent/kubelet.kubeconfig",
                "File",
                KUBECONFIG,
            ),
            ("/var/lib/rancher/k3s/agent/etc", "Directory", "agent-lb"),
        ],
        selinux_type: None,
    },
    Overlay {
        name: "rke2",
        args: &[
            "--cgroup",
            "system.slice/rke2-server.service",
            "--cgroup",
            "system.slice/rke2-agent.service",
            "--endpoint-clients",
            "--kubeconfig",
            "/var/lib/rancher/rke2/agent/kubelet.kubeconfig",
            "--ports",
            "443,6443,6444,9345",
        ],
        mounts: &[
            (
                "/var/lib/rancher/rke2/agent/kubelet.kubeconfig",
                "File",
                KUBECONFIG,
            ),
            ("/var/lib/rancher/rke2/agent/etc", "Directory", "agent-lb"),
        ],
        selinux_type: None,
    },
    Overlay {
        name: "talos",
        args: &[
            "--cgroup",
            "podruntime/kubelet",
            "--endpoint-clients",
            "--kubeconfig",
            "/etc/kubernetes/kubeconfig-kubelet",
            "--ports",
            "443,6443,7445",
        ],
        mounts: &[("/etc/kubernetes/kubeconfig-kubelet", "File", KUBECONFIG)],
        selinux_type: None,
    },
];

fn kubernetes() -> PathBuf {
    workspace().join("packaging/kubernetes")
}

/// The base as `kubectl apply -f packaging/daemonset.yaml` creates it: the file the README
/// and the container test use and `kubectl kustomize` of the base are the same objects.
#[test]
fn the_base_is_the_shipped_daemonset() -> Result<()> {
    let file = workspace().join("packaging/daemonset.yaml");
    let shipped = parse(&std::fs::read_to_string(&file)?)?;
    let base = render(&kubernetes().join("base"))?;
    ensure!(base.len() == 2, "ConfigMap and DaemonSet: {base:#?}");
    for kind in ["ConfigMap", "DaemonSet"] {
        ensure!(
            one(&base, kind)? == one(&shipped, kind)?,
            "the base's {kind} differs from {}",
            file.display()
        );
    }
    Ok(())
}

/// The base with an overlay's documented differences applied by hand.
fn expected(base: &[Value], o: &Overlay) -> Result<Vec<Value>> {
    let mut out = base.to_vec();
    let ds = out
        .iter_mut()
        .find(|d| d["kind"] == "DaemonSet")
        .context("no DaemonSet in the base")?;
    let spec = &mut ds["spec"]["template"]["spec"];
    let volumes = spec["volumes"].as_array_mut().context("no volumes")?;
    for (path, kind, name) in o.mounts {
        volumes.push(json!({"name": name, "hostPath": {"path": path, "type": kind}}));
    }
    let c = &mut spec["containers"][0];
    ensure!(c.get("args").is_none(), "the base has args: {c}");
    c["args"] = json!(o.args);
    let mounts = c["volumeMounts"]
        .as_array_mut()
        .context("no volumeMounts")?;
    for (path, _, name) in o.mounts {
        mounts.push(json!({"name": name, "mountPath": path, "readOnly": true}));
    }
    if let Some(t) = o.selinux_type {
        c["securityContext"]["seLinuxOptions"] = json!({"type": t});
    }
    Ok(out)
}

/// Lists in the order kustomize's strategic merge leaves them may differ from ours (a patch's
/// volumes can come first): compare volumes and mounts by name.
fn sort_named(docs: &mut [Value]) {
    for d in docs.iter_mut().filter(|d| d["kind"] == "DaemonSet") {
        let spec = &mut d["spec"]["template"]["spec"];
        let by_name = |v: &mut Value| {
            if let Some(a) = v.as_array_mut() {
                a.sort_by_key(|x| x["name"].as_str().unwrap_or_default().to_owned());
            }
        };
        by_name(&mut spec["volumes"]);
        by_name(&mut spec["containers"][0]["volumeMounts"]);
    }
}

#[test]
fn each_overlay_changes_only_what_its_distribution_needs() -> Result<()> {
    let base = render(&kubernetes().join("base"))?;
    for o in OVERLAYS {
        let mut got = render(&kubernetes().join("overlays").join(o.name))?;
        let mut want = expected(&base, o)?;
        sort_named(&mut got);
        sort_named(&mut want);
        ensure!(
            got == want,
            "overlay {}: got\n{}\nwant\n{}",
            o.name,
            serde_json::to_string_pretty(&got)?,
            serde_json::to_string_pretty(&want)?
        );
    }
    Ok(())
}

/// The distribution facts the README's install table states, read from the renderings
/// themselves (not from the table above).
#[test]
fn the_distribution_facts_hold_in_the_renderings() -> Result<()> {
    let args_of = |name: &str| -> Result<Vec<String>> {
        let docs = render(&kubernetes().join("overlays").join(name))?;
        let c = &one(&docs, "DaemonSet")?["spec"]["template"]["spec"]["containers"][0];
        Ok(c["args"]
            .as_array()
            .context("no args")?
            .iter()
            .filter_map(|a| a.as_str().map(str::to_owned))
            .collect())
    };
    let flag = |args: &[String], f: &str| -> Vec<String> {
        args.windows(2)
            .filter(|w| w[0] == f)
            .map(|w| w[1].clone())
            .collect()
    };
    for eks in ["eks-al2023", "eks-bottlerocket"] {
        let a = args_of(eks)?;
        ensure!(
            flag(&a, "--ports") == ["443"],
            "{eks}: the API on 443: {a:?}"
        );
        ensure!(
            flag(&a, "--cgroup") == ["runtime.slice/kubelet.service"],
            "{eks}: {a:?}"
        );
    }
    let al2023 = args_of("eks-al2023")?;
    ensure!(flag(&al2023, "--kubeconfig") == ["/var/lib/kubelet/kubeconfig"]);
    let k3s = args_of("k3s")?;
    ensure!(flag(&k3s, "--kubeconfig") == ["/var/lib/rancher/k3s/agent/kubelet.kubeconfig"]);
    let rke2 = args_of("rke2")?;
    ensure!(flag(&rke2, "--kubeconfig") == ["/var/lib/rancher/rke2/agent/kubelet.kubeconfig"]);
    let talos = args_of("talos")?;
    ensure!(
        flag(&talos, "--ports")
            .first()
            .is_some_and(|p| p.split(',').any(|p| p == "7445")),
        "Talos: KubePrism's 7445: {talos:?}"
    );
    let spray = render(&kubernetes().join("overlays/kubespray"))?;
    let volumes = &one(&spray, "DaemonSet")?["spec"]["template"]["spec"]["volumes"];
    ensure!(
        volumes
            .as_array()
            .is_some_and(|v| v.iter().any(|v| v["hostPath"]["path"] == "/etc/nginx")),
        "kubespray: nginx-proxy's configuration is mounted: {volumes}"
    );
    Ok(())
}

#[test]
fn every_overlay_directory_is_in_the_table() -> Result<()> {
    let mut dirs: Vec<String> = std::fs::read_dir(kubernetes().join("overlays"))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    dirs.sort();
    let mut named: Vec<String> = OVERLAYS.iter().map(|o| o.name.to_owned()).collect();
    named.sort();
    ensure!(dirs == named, "overlays {dirs:?}, tested {named:?}");
    Ok(())
}

/// Every overlay's rendered arguments parse with the real binary: it gets as far as refusing
/// a non-loopback metrics address (exit 1, one line), not a usage error (exit 2).
#[test]
fn overlay_arguments_parse() -> Result<()> {
    let bin = lifeline()?;
    for o in OVERLAYS {
        let docs = render(&kubernetes().join("overlays").join(o.name))?;
        let c = &one(&docs, "DaemonSet")?["spec"]["template"]["spec"]["containers"][0];
        let args: Vec<&str> = c["args"]
            .as_array()
            .context("no args")?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let out = std::process::Command::new(&bin)
            .arg("run")
            .args(&args)
            .args(["--metrics-addr", "198.51.100.1:9464"])
            .output()?;
        let err = String::from_utf8_lossy(&out.stderr);
        ensure!(
            out.status.code() == Some(1) && err.lines().count() == 1,
            "overlay {}: {:?} {err}",
            o.name,
            out.status
        );
        ensure!(
            err.starts_with("lifeline: error:"),
            "overlay {}: {err}",
            o.name
        );
    }
    Ok(())
}

/// The metrics component on the base: the `ConfigMap`'s `lifeline.toml` is the base's with the
/// metrics served on every address (and allowed to be), the container names the port, and
/// the `PodMonitor` scrapes it as the job the alert rules name.
#[test]
fn the_metrics_component_changes_only_where_metrics_are_served() -> Result<()> {
    let base = render(&kubernetes().join("base"))?;
    let with = render_with(
        &kubernetes().join("base"),
        &kubernetes().join("components/metrics"),
    )?;
    let toml_of = |docs: &[Value]| -> Result<toml::Table> {
        let text = one(docs, "ConfigMap")?["data"]["lifeline.toml"]
            .as_str()
            .context("no lifeline.toml")?
            .to_owned();
        Ok(text.parse()?)
    };
    let mut want = toml_of(&base)?;
    want.insert("metrics_addr".into(), "0.0.0.0:9464".into());
    want.insert("metrics_allow_remote".into(), true.into());
    ensure!(
        toml_of(&with)? == want,
        "the component's lifeline.toml: {:?}",
        toml_of(&with)?
    );

    let mut ds = one(&with, "DaemonSet")?.clone();
    let ports = ds["spec"]["template"]["spec"]["containers"][0]
        .as_object_mut()
        .context("container")?
        .remove("ports");
    ensure!(
        ports == Some(json!([{"name": "metrics", "containerPort": 9464, "protocol": "TCP"}])),
        "{ports:?}"
    );
    ensure!(
        &ds == one(&base, "DaemonSet")?,
        "the DaemonSet differs beyond its port"
    );

    let pm = one(&with, "PodMonitor")?;
    let label = pm["spec"]["jobLabel"].as_str().context("jobLabel")?;
    let pod_labels = &one(&with, "DaemonSet")?["spec"]["template"]["metadata"]["labels"];
    ensure!(
        pod_labels[label] == "lifeline",
        "job from {label}: {pod_labels}"
    );
    ensure!(pm["spec"]["selector"]["matchLabels"] == *pod_labels, "{pm}");
    ensure!(
        pm["spec"]["podMetricsEndpoints"][0]["port"] == "metrics",
        "{pm}"
    );
    let rules =
        std::fs::read_to_string(workspace().join("packaging/prometheus/lifeline-rules.yaml"))?;
    ensure!(
        rules.contains(r#"up{job="lifeline"}"#),
        "the rules name another job than the PodMonitor's"
    );
    ensure!(with.len() == base.len() + 1, "only the PodMonitor is added");
    Ok(())
}
