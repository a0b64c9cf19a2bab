//! The Debian packages the lab and the bpf-linker build need, installed when missing, so that
//! `cargo xtask demo` and `cargo xtask test` do all the set-up on a fresh machine (and CI goes
//! through the same code).

use std::process::Command;

use anyhow::{Context as _, Result, bail};
use xtask::process::{Output, run};

/// (command that proves the package is installed, Debian package).
const NEEDED: &[(&str, &str)] = &[
    ("nft", "nftables"), // black holes and random loss in the lab
    ("ip", "iproute2"),  // namespaces, veth, bridge
    ("nsenter", "util-linux"),
    ("setpriv", "util-linux"),
    ("ss", "iproute2"),
    ("bpftool", "bpftool"), // inspecting what the agent attached
    ("iperf3", "iperf3"),
    // The lab's DNS server for the endpoint scenarios. dnsmasq-base: the binary without the
    // system service, which would grab port 53 of the host.
    ("dnsmasq", "dnsmasq-base"),
    ("cc", "build-essential"), // bpf-linker links against rustup's libLLVM
    // A real systemd manager, its bus and journald for the node-integration tests.
    ("systemctl", "systemd"),
    ("journalctl", "systemd"),
    ("dbus-daemon", "dbus-daemon"),
    ("unshare", "util-linux"),
    // The container lab test (tests/tests/lab/container/): podman with runc (crun cannot run
    // containers on a hybrid-cgroup host), and strip for the image's binary.
    ("podman", "podman"),
    ("runc", "runc"),
    ("strip", "binutils"),
    // The lab's Go client (tests/go), so a test dials with kubelet's own net.Dialer.
    ("go", "golang-go"),
    ("gofmt", "golang-go"),
    // The node-local API proxies of kubespray and kubeadm's HA guide (tests/src/fixtures/proxy.rs):
    // nginx with its stream module (a dynamic module, a package of its own), and haproxy.
    ("nginx", "nginx-light"),
    ("haproxy", "haproxy"),
    // The alert rules' checks (promtool) and the lab's alert test (a real Prometheus server,
    // started by the test in a lab namespace; the package's own service is not started).
    ("promtool", "prometheus"),
    ("prometheus", "prometheus"),
    // The lab's neighbour in a device's tc chain (tests/bpf/neighbour.c, built by the
    // lab-tc fixture with `clang -target bpf`; its headers are libbpf-dev's, below).
    ("clang", "clang"),
];

/// libbpf-dev has no command: checked by the header the neighbour includes.
const LIBBPF_HEADER: &str = "/usr/include/bpf/bpf_helpers.h";

/// What the kernel matrix needs on the host (`cargo xtask test --kernel`): qemu (with
/// virtiofsd), the initramfs' static busybox, and the tools that unpack a kernel package.
const MATRIX: &[(&str, &str)] = &[
    ("qemu-system-x86_64", "qemu-system-x86"),
    ("qemu-system-aarch64", "qemu-system-arm"),
    ("cpio", "cpio"),
    ("depmod", "kmod"),
    ("dpkg-deb", "dpkg"),
    ("xz", "xz-utils"),
    ("zstd", "zstd"),
];

/// What `cargo xtask rpm` needs: rpmbuild (and `rpm` for the checks in .ci/run) and rpmlint.
const RPM: &[(&str, &str)] = &[("rpmbuild", "rpm"), ("rpmlint", "rpmlint")];

/// Where Debian's `libnginx-mod-stream` installs the module (`tests/src/fixtures/proxy_conf.rs` loads it).
const NGINX_STREAM_MODULE: &str = "/usr/lib/nginx/modules/ngx_stream_module.so";

/// Packages whose command is missing, without duplicates.
fn missing(needed: &[(&str, &'static str)]) -> Vec<&'static str> {
    let mut out: Vec<&str> = Vec::new();
    for (cmd, pkg) in needed {
        if xtask::which(cmd).is_none() && !out.contains(pkg) {
            out.push(pkg);
        }
    }
    out
}

/// Install what is missing with apt-get (a no-op when everything is there).
///
/// # Errors
/// When packages are missing and apt-get is not available or fails.
pub(crate) fn ensure() -> Result<()> {
    let mut pkgs = missing(NEEDED);
    // A dynamic module, no command of its own: checked by the file the lab loads.
    if !std::path::Path::new(NGINX_STREAM_MODULE).exists() {
        pkgs.push("libnginx-mod-stream");
    }
    if !std::path::Path::new(LIBBPF_HEADER).exists() {
        pkgs.push("libbpf-dev");
    }
    if pkgs.is_empty() {
        return Ok(());
    }
    // zlib is linked by bpf-linker alongside the toolchain's libLLVM.
    pkgs.push("zlib1g-dev");
    install(&pkgs)
}

/// The tools that handle every architecture's binary (the host's `strip` reads x86 only; qemu
/// runs the arm64 one), installed when missing: `cargo xtask image` and `deb` need them without the lab's packages.
///
/// # Errors
/// As `ensure`.
pub(crate) fn ensure_cross() -> Result<()> {
    let arches = crate::arch::ALL.iter();
    let needed: Vec<_> = (arches.clone().map(|a| a.strip))
        .chain(arches.filter_map(|a| a.emulator))
        .collect();
    let pkgs = missing(&needed);
    if pkgs.is_empty() {
        return Ok(());
    }
    install(&pkgs)
}

/// `cargo xtask rpm`'s packages, installed when missing.
///
/// # Errors
/// As `ensure`.
pub(crate) fn ensure_rpm() -> Result<()> {
    let pkgs = missing(RPM);
    if pkgs.is_empty() {
        return Ok(());
    }
    install(&pkgs)
}

/// The kernel matrix's packages, installed when missing. busybox-static is checked by
/// package: a dynamic busybox would be found on PATH as well, and cannot run in an
/// initramfs.
///
/// # Errors
/// As `ensure`.
pub(crate) fn ensure_matrix() -> Result<()> {
    let mut pkgs = missing(MATRIX);
    let status = Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", "busybox-static"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    if !status.ends_with(" installed") {
        pkgs.push("busybox-static");
    }
    if pkgs.is_empty() {
        return Ok(());
    }
    install(&pkgs)
}

pub(crate) fn install(pkgs: &[&str]) -> Result<()> {
    if xtask::which("apt-get").is_none() {
        bail!(
            "missing packages {} and no apt-get to install them; install them and retry",
            pkgs.join(" ")
        );
    }
    eprintln!("xtask: installing {}", pkgs.join(" "));
    let quiet = || {
        let mut c = Command::new("apt-get");
        c.env("DEBIAN_FRONTEND", "noninteractive");
        c
    };
    run(
        "apt-get update",
        quiet().args(["update", "-qq"]),
        Output::Inherit,
    )?;
    let _no_services = NoServiceStarts::new()?;
    run(
        "installing the lab's packages",
        quiet()
            .args(["install", "-y", "-qq", "--no-install-recommends"])
            .args(pkgs),
        Output::Inherit,
    )
}

/// nginx's and haproxy's packages start their system service on install when they can; the
/// lab runs them itself, in its namespaces, and a service on the host's port 80 is unwanted.
/// Debian's way to say no: /usr/sbin/policy-rc.d exiting 101 ("action forbidden",
/// <https://people.debian.org/~hmh/invokerc.d-policyrc.d-specification.txt>), written for the
/// install when there is none and removed after it; an existing one is left as it is.
struct NoServiceStarts(Option<&'static str>);

impl NoServiceStarts {
    const PATH: &'static str = "/usr/sbin/policy-rc.d";

    fn new() -> Result<Self> {
        use std::os::unix::fs::PermissionsExt as _;
        if std::path::Path::new(Self::PATH).exists() {
            return Ok(Self(None));
        }
        std::fs::write(
            Self::PATH,
            "#!/bin/sh\n# written by cargo xtask for one install\nexit 101\n",
        )
        .with_context(|| format!("writing {}", Self::PATH))?;
        std::fs::set_permissions(Self::PATH, std::fs::Permissions::from_mode(0o755))
            .with_context(|| format!("making {} executable", Self::PATH))?;
        Ok(Self(Some(Self::PATH)))
    }
}

impl Drop for NoServiceStarts {
    fn drop(&mut self) {
        if let Some(p) = self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}
