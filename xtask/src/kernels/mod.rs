//! `cargo xtask test --kernel 5.10|6.1|6.12|all`: the kernel matrix. Each kernel is a
//! Debian cloud kernel, downloaded with apt (never installed) and cached; it boots under
//! qemu (TCG: this host's KVM cannot boot a stock kernel) with the host's userland shared
//! read-only, runs `lifeline check` and the lab tests below against the release agent, and
//! docs/KERNELS.md is written from what the tests reported (`tests/src/kernel.rs`).

mod apt;
mod build;
mod fetch;
mod initrd;
mod report;
mod results;
mod vm;

use std::path::Path;

use anyhow::{Result, bail};

use crate::Phases;

/// A kernel line of the matrix: Debian's cloud kernel of a release series.
pub struct Series {
    pub name: &'static str,
    /// The Debian suites it comes from; `None`: the host's own apt sources (bookworm).
    pub suites: Option<[&'static str; 2]>,
    /// The metapackage whose `Depends:` names the current kernel package.
    pub meta: &'static str,
    /// Where fleets run it.
    pub seen_on: &'static str,
}

pub const SERIES: [Series; 3] = [
    Series {
        name: "5.10",
        suites: Some(["bullseye", "bullseye-security"]),
        meta: "linux-image-cloud-amd64",
        seen_on: "Debian 11, Amazon Linux 2",
    },
    Series {
        name: "6.1",
        suites: None,
        meta: "linux-image-cloud-amd64",
        seen_on: "Debian 12, Amazon Linux 2023",
    },
    Series {
        name: "6.12",
        suites: None,
        meta: "linux-image-6.12-cloud-amd64",
        seen_on: "Debian 13 (here: bookworm's backport)",
    },
];

/// The lab subset run in every guest: every kernel-dependent path (`lifeline_common::
/// features`) and the watch model, longest first so two at a time finish together.
/// (test binary, test name).
pub const TESTS: [(&str, &str); 12] = [
    ("idle", "idle_long_poll_blackholed_is_killed_as_silent"),
    (
        "keepalive_news",
        "unanswered_keepalive_probes_are_news_and_answered_ones_are_not",
    ),
    ("no_false_positive", "healthy_connections_are_left_alone"),
    (
        "unit_lifecycle",
        "restart_recreates_the_cgroup_and_the_new_connection_is_watched",
    ),
    (
        "unit_lifecycle",
        "started_before_the_unit_exists_waits_then_watches_its_first_connection",
    ),
    (
        "endpoint_clients",
        "endpoint_clients_anywhere_are_healed_and_other_peers_left_alone",
    ),
    ("check", "check_passes_here_and_names_the_failing_row"),
    ("idle", "application_keepalive_is_never_loosened"),
    (
        "endpoint_probe",
        "dead_peer_is_confirmed_by_the_probe_within_7s",
    ),
    ("preexisting", "preexisting_socket_is_killed"),
    ("blackhole", "blackhole_is_killed"),
    ("blackhole", "blackhole_v6_is_killed"),
];

/// `--kernel` values: one series, a comma-separated list, or `all`.
///
/// # Errors
/// When a name is not a series of the matrix.
pub fn parse(arg: &str) -> Result<Vec<&'static Series>> {
    if arg == "all" {
        return Ok(SERIES.iter().collect());
    }
    arg.split(',')
        .map(|name| match SERIES.iter().find(|s| s.name == name) {
            Some(s) => Ok(s),
            None => bail!("unknown kernel `{name}`: use 5.10, 6.1, 6.12 or all"),
        })
        .collect()
}

/// Build, fetch, boot each kernel in turn, write the report; fails when any test failed or
/// any feature went unreported on any kernel.
///
/// # Errors
/// When a step fails; the report is written first when the guests ran.
pub fn test(ws: &Path, phases: &mut Phases, series: &[&'static Series]) -> Result<()> {
    crate::lab::require_root("test --kernel")?;
    phases.run("packages", crate::packages::ensure)?;
    phases.run("matrix packages", crate::packages::ensure_matrix)?;
    crate::build_ebpf(ws, phases)?;
    let built = phases.run("build", || build::build(ws))?;
    let out = crate::cargo_run::target_dir(ws)?.join("kernels");
    std::fs::create_dir_all(&out)?;
    let kernels = phases.run("fetch kernels", || fetch::kernels(series, &out))?;
    let mut runs = Vec::new();
    phases.run("boot kernels", || {
        for k in &kernels {
            runs.push(vm::run(k, &built, &out.join(&k.release))?);
        }
        Ok(())
    })?;
    let all = series.len() == SERIES.len();
    let doc = if all {
        ws.join("docs/KERNELS.md")
    } else {
        out.join("KERNELS.md")
    };
    let verdict = report::write(ws, &runs, &doc)?;
    eprintln!("xtask: kernel matrix written to {}", doc.display());
    verdict
}
