//! `cargo xtask test --kernel 5.10|6.1|6.12|arm64-6.1|arm64-6.12|all`: the kernel matrix.
//! Each kernel is a Debian cloud kernel, downloaded with apt (never installed) and cached; an
//! amd64 one boots under qemu (TCG: this host's KVM cannot boot a stock kernel) with the
//! host's userland shared read-only, runs `lifeline check` and the lab tests below against
//! the release agent; an arm64 one boots under qemu-system-aarch64 with a userland of its
//! own and runs `lifeline check` (arm64.rs). docs/KERNELS.md is written from what the tests
//! and checks reported (`tests/src/infra/kernel.rs`).

mod apt;
mod arm64;
mod build;
mod died;
mod fetch;
mod initrd;
mod initrd_arm64;
mod report;
mod report_arm64;
mod results;
mod vm;

use std::path::Path;

use anyhow::{Result, bail};

use crate::{
    Phases,
    arch::{AMD64, ARM64, Arch},
};

/// A kernel line of the matrix: Debian's cloud kernel of a release series.
pub(crate) struct Series {
    pub name: &'static str,
    /// The Debian suites it comes from; `None`: the host's own apt sources (bookworm).
    pub suites: Option<[&'static str; 2]>,
    /// The metapackage whose `Depends:` names the current kernel package.
    pub meta: &'static str,
    /// Where fleets run it.
    pub seen_on: &'static str,
    pub arch: &'static Arch,
}

pub(crate) const SERIES: [Series; 5] = [
    Series {
        name: "5.10",
        suites: Some(["bullseye", "bullseye-security"]),
        meta: "linux-image-cloud-amd64",
        seen_on: "Debian 11, Amazon Linux 2",
        arch: &AMD64,
    },
    Series {
        name: "6.1",
        suites: None,
        meta: "linux-image-cloud-amd64",
        seen_on: "Debian 12, Amazon Linux 2023",
        arch: &AMD64,
    },
    Series {
        name: "6.12",
        suites: None,
        meta: "linux-image-6.12-cloud-amd64",
        seen_on: "Debian 13 (here: bookworm's backport)",
        arch: &AMD64,
    },
    // arm64: a private apt configuration (the host's dpkg knows amd64 only), bookworm's.
    Series {
        name: "arm64-6.1",
        suites: Some(["bookworm", "bookworm-security"]),
        meta: "linux-image-cloud-arm64",
        seen_on: "Debian 12 and Amazon Linux 2023 on Graviton, Ampere",
        arch: &ARM64,
    },
    Series {
        name: "arm64-6.12",
        suites: Some(["bookworm", "bookworm-security"]),
        meta: "linux-image-6.12-cloud-arm64",
        seen_on: "Debian 13 on arm64 (here: bookworm's backport)",
        arch: &ARM64,
    },
];

/// The lab subset run in every guest: every kernel-dependent path (`lifeline_common::
/// features`) and the watch model, longest first so two at a time finish together. Names
/// of tests in the lab's one binary (`tests/tests/lab/`), `module::test`.
pub(crate) const TESTS: [&str; 18] = [
    "dry_run::dry_run_never_aborts_sooner_than_the_applications_own_settings",
    "tc_neighbour::a_neighbour_attached_after_lifeline_passes_packets_on_or_hides_it_and_status_says_so",
    "tc_leftovers::a_killed_agent_leaves_one_filter_at_most_and_its_octets_stop",
    "idle::idle_long_poll_blackholed_is_killed_as_silent",
    "keepalive_news::unanswered_keepalive_probes_are_news_and_answered_ones_are_not",
    "no_false_positive::healthy_connections_are_left_alone",
    "unit_lifecycle::restart_recreates_the_cgroup_and_the_new_connection_is_watched",
    "unit_lifecycle::started_before_the_unit_exists_waits_then_watches_its_first_connection",
    "endpoint_clients::endpoint_clients_anywhere_are_healed_and_other_peers_left_alone",
    "check::check_passes_here_and_names_the_failing_row",
    "idle::application_keepalive_is_never_loosened",
    "endpoint_probe::dead_peer_is_confirmed_by_the_probe_within_7s",
    "preexisting::preexisting_socket_is_killed",
    "restore::a_clean_stop_gives_the_applications_their_own_options_back",
    "blackhole::blackhole_is_killed",
    "blackhole::blackhole_v6_is_killed",
    "tc_neighbour::neighbours_attached_before_keep_their_verdicts_and_lifeline_s_octets_go_out",
    "tc_leftovers::an_interrupted_check_leaves_nothing_on_the_device",
];

/// `--kernel` values: one series, a comma-separated list, or `all`.
///
/// # Errors
/// When a name is not a series of the matrix.
pub(crate) fn parse(arg: &str) -> Result<Vec<&'static Series>> {
    if arg == "all" {
        return Ok(SERIES.iter().collect());
    }
    arg.split(',')
        .map(|name| match SERIES.iter().find(|s| s.name == name) {
            Some(s) => Ok(s),
            None => {
                bail!("unknown kernel `{name}`: use 5.10, 6.1, 6.12, arm64-6.1, arm64-6.12 or all")
            }
        })
        .collect()
}

/// Build, fetch, boot each kernel in turn, write the report; fails when any test failed or
/// any feature went unreported on any kernel.
///
/// # Errors
/// When a step fails; the report is written first when the guests ran.
pub(crate) fn test(ws: &Path, phases: &mut Phases, series: &[&'static Series]) -> Result<()> {
    crate::lab::require_root("test --kernel")?;
    phases.run("packages", crate::packages::ensure)?;
    phases.run("matrix packages", crate::packages::ensure_matrix)?;
    crate::build_ebpf(ws, phases)?;
    let has = |a: &Arch| series.iter().any(|s| s.arch.name == a.name);
    let built = if has(&AMD64) {
        Some(phases.run("build", || build::build(ws))?)
    } else {
        None
    };
    let arm = if has(&ARM64) {
        Some(phases.run(ARM64.phase, || crate::image::release_musl(ws, &ARM64))?)
    } else {
        None
    };
    let out = crate::cargo_run::target_dir(ws)?.join("kernels");
    std::fs::create_dir_all(&out)?;
    let kernels = phases.run("fetch kernels", || fetch::kernels(series, &out))?;
    let mut runs = Vec::new();
    phases.run("boot kernels", || {
        for k in &kernels {
            let dir = out.join(&k.release);
            runs.push(match (&built, &arm) {
                (_, Some(bin)) if k.series.arch.name == ARM64.name => arm64::run(k, bin, &dir)?,
                (Some(b), _) => vm::run(k, b, &dir)?,
                _ => bail!("nothing was built for {}", k.release),
            });
        }
        Ok(())
    })?;
    let all = series.len() == SERIES.len();
    let every_arm64 = (SERIES.iter())
        .filter(|s| s.arch.name == ARM64.name)
        .all(|s| series.iter().any(|x| x.name == s.name));
    let arm64_only = every_arm64 && !has(&AMD64);
    let doc = if all || arm64_only {
        ws.join("docs/KERNELS.md")
    } else {
        out.join("KERNELS.md")
    };
    // The arm64 kernels alone (a minute) rewrite only their section of the document.
    let verdict = if arm64_only {
        report_arm64::replace(ws, &runs, &doc)?
    } else {
        report::write(ws, &runs, &doc)?
    };
    eprintln!("xtask: kernel matrix written to {}", doc.display());
    verdict
}
