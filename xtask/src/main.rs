//! `cargo xtask`: build the eBPF object, run the tests, run the demo, package.
//!
//! Arguments are parsed by hand: the library half of this crate is a build-dependency of the
//! agent and is kept to anyhow alone, and a handful of subcommands with a few flags each do not need clap.

mod arch;
mod bench;
mod cargo_run;
mod deb;
mod deny;
mod docs;
mod gofixture;
mod image;
mod imports;
mod kernels;
mod lab;
mod lab_tree;
mod lanes;
mod layout;
mod lint;
mod manifests;
mod meta;
mod oci;
mod packages;
mod purity;
mod rpm;
mod shipcheck;

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
    time::{Duration, Instant},
};

use anyhow::Result;
use xtask::process::StepFailed;

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  setup        install what the eBPF build needs and `cargo build` never installs: the pinned
               nightly with rust-src, and bpf-linker built against its LLVM (quick when done;
               every command below that needs the eBPF object runs it first)
  build-ebpf   setup, then build the eBPF object and print its path
  test         setup, the packaging checks (see check-packaging), unit tests, then the lab
               tests (needs root): what CI runs. The lab is one test binary, one module per
               scenario; one module (or test): cargo xtask build-ebpf &&
               cargo build -p lifeline -p lifeline-tests &&
               LIFELINE_BIN=$PWD/target/debug/lifeline cargo test -p lifeline-tests --test lab
               -- MODULE::
    --kernel K     instead, the kernel matrix: boot Debian's cloud kernel K (5.10, 6.1,
                   6.12, a comma-separated list, or all) under qemu and run `lifeline check`
                   and the kernel-dependent lab tests in it (about 4 minutes per kernel);
                   arm64-6.1 and arm64-6.12 boot Debian's arm64 kernels under
                   qemu-system-aarch64 and run `lifeline check` there (under a minute each);
                   `all` writes docs/KERNELS.md, both arm64 kernels only its arm64 section,
                   another subset target/kernels/KERNELS.md
  lint         cargo fmt --check, the import gate (no import circles; prints each crate's
               longest import chain), the judge's purity (no I/O crate among its
               dependencies), setup, clippy pedantic on the host crates, clippy on
               the eBPF crate with the pinned nightly (installs its clippy when missing),
               cargo doc -D warnings, and cargo deny check bans licenses sources
               (deny.toml; installs cargo-deny when missing)
  demo         run the black-hole scenario without and with lifeline (needs root) and print
               both timelines
  bench        lifeline against the alternatives, its cost and scale (needs root; about 40
               minutes); writes docs/BENCHMARKS.md and docs/bench-outage.svg
    --quick        3 trials per cell, a 60 s cap, short cost runs (under 10 minutes);
                   writes under target/bench/ instead
    --trials N     trials per cell (default 20; 10 for restarted-flow-only and
                   blip-one-of-two-3s; 3 with --quick)
    --scenario A,B only these rows, no targets, cost or scale; writes under target/bench/
                   and prints the tables. Rows: peer-gone-1s, peer-gone-10s, flow-only,
                   restarted-flow-only, idle-watch, idle-watch-go15,
                   idle-watch-no-keepalive, elb-rotation, proxy-nginx, proxy-haproxy,
                   and the blips (the path back by itself; served again, re-dials):
                   blip-1s, blip-3s, blip-6s, blip-15s, blip-one-of-two-3s
    --soak         only the loss soak (30 minutes: 100 idle Go-like connections, 50
                   heartbeats, a bulk flow, at 5 %, 10 %, then 5 % with 30 % bursts);
                   writes its section of docs/BENCHMARKS.md
    --soak-minutes N  the soak shortened to N minutes (phases scaled); writes under
                   target/bench/ instead
    --cost         only the cost part (iperf3 rounds, each hook's runs with
                   kernel.bpf_stats_enabled=1, a node's usual load); replaces only its
                   section of the document
    --usual        only the cost part's usual load (40 watched sockets at 5 % loss, the
                   agent's CPU over 2 minutes); printed, nothing written
    --scale        only the scale part (10,000 and 100,000 watched sockets); likewise
    --fleet        only the fleet part: simulated nodes behind one rotating endpoint, four
                   scenarios, four contenders (about 10 minutes); writes the fleet section
                   of docs/BENCHMARKS.md and docs/bench-fleet.svg
    --fleet-nodes N  nodes per contender (default 100; sized down to the 64 programs the
                   kernel attaches per cgroup, see the report)
  deb          build the Debian packages for amd64 and arm64 (installs cargo-deb when
               missing), with man pages and shell completions:
               target/debian/lifeline_<version>_<arch>.deb
  rpm          build the RPMs for x86_64 and aarch64 (rpmbuild from Debian's rpm package,
               installed when missing) with the same files as the .deb, then rpmlint them:
               target/rpm/lifeline-<version>-1.<arch>.rpm
  check-packaging  what `test` checks of packaging/ before the lab (seconds): promtool check
               and test of the alert rules, the PrometheusRule up to date, every kustomization
               rendered with `kubectl kustomize` and validated against Kubernetes 1.28 to 1.37
               (kubernetes-validate, installed in a virtualenv under ~/.cache/lifeline)
  manifests    regenerate packaging/prometheus/lifeline-prometheusrule.yaml (the Prometheus
               operator's PrometheusRule) from packaging/prometheus/lifeline-rules.yaml
  image        build the container image for amd64 and arm64 (a static musl binary each,
               nothing else) as one multi-arch OCI archive and print its path:
               target/image/lifeline-<version>.oci.tar

demo, test, bench, deb, rpm and image run setup first too. Without the pinned nightly or bpf-linker
`cargo build -p lifeline` fails with one line naming `cargo xtask setup`;
LIFELINE_SKIP_EBPF=1 cargo check/clippy -p lifeline need neither (a binary built so refuses
to run).
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut phases = Phases::default();
    let result = match args.as_slice() {
        ["setup"] => phases.run("setup", xtask::setup::setup).map(drop),
        ["build-ebpf"] => build_ebpf(&workspace(), &mut phases).map(|object| {
            println!("{}", object.display());
        }),
        ["test"] => lab::test(&workspace(), &mut phases),
        ["lint"] => phases.run("lint", || lint::lint(&workspace())),
        ["test", "--kernel", k] => match kernels::parse(k) {
            Ok(series) => kernels::test(&workspace(), &mut phases, &series),
            Err(e) => {
                eprint!("{USAGE}");
                eprintln!("xtask: error: {e}");
                return ExitCode::from(2);
            }
        },
        ["demo"] => lab::demo(&workspace(), &mut phases),
        ["-h" | "--help" | "help"] | ["bench" | "test" | "lint" | "demo", "-h" | "--help"] => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        ["bench", rest @ ..] => match bench::Options::parse(rest) {
            Ok(options) => bench::bench(&workspace(), &mut phases, &options),
            Err(e) => {
                eprint!("{USAGE}");
                eprintln!("xtask: error: {e}");
                return ExitCode::from(2);
            }
        },
        ["deb"] => deb::deb(&workspace(), &mut phases),
        ["rpm"] => rpm::rpm(&workspace(), &mut phases),
        ["check-packaging"] => (|| {
            lab::require_root("check-packaging")?;
            phases.run("packages", packages::ensure)?;
            phases.run("packaging checks", || shipcheck::check(&workspace()))
        })(),
        ["manifests"] => manifests::generate(&workspace()).map(|changed| {
            let state = if changed { "rewritten" } else { "up to date" };
            eprintln!("xtask: {}: {state}", manifests::PROMETHEUS_RULE);
        }),
        ["image"] => image::image(&workspace(), &mut phases).map(drop),
        _ => {
            eprint!("{USAGE}");
            match args.as_slice() {
                [] => {}
                ["test", extra, ..] => {
                    eprintln!("xtask: error: `test` takes only `--kernel K`, got `{extra}`");
                }
                [cmd, extra, ..]
                    if [
                        "setup",
                        "build-ebpf",
                        "test",
                        "demo",
                        "deb",
                        "rpm",
                        "manifests",
                        "check-packaging",
                        "lint",
                        "image",
                    ]
                    .contains(cmd) =>
                {
                    eprintln!("xtask: error: `{cmd}` takes no arguments, got `{extra}`");
                }
                [cmd, ..] => eprintln!("xtask: error: unknown command `{cmd}`"),
            }
            return ExitCode::from(2);
        }
    };
    phases.summary();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // `{:#}` is the whole chain on one line, and never a backtrace (RUST_BACKTRACE=1
            // is set on our machines and would make `{:?}` print one).
            eprintln!("xtask: error: {err:#}");
            let code = err
                .downcast_ref::<StepFailed>()
                .map_or(1, StepFailed::exit_code);
            ExitCode::from(u8::try_from(code).ok().filter(|&c| c != 0).unwrap_or(1))
        }
    }
}

/// Setup, then the eBPF object: what every command that needs the object runs first, so a
/// fresh machine is set up by it and the agent's build script finds everything installed.
pub(crate) fn build_ebpf(ws: &Path, phases: &mut Phases) -> Result<PathBuf> {
    phases.run("setup", xtask::setup::setup)?;
    phases.run("build-ebpf", || xtask::ebpf::build(ws))
}

/// xtask lives at `<workspace>/xtask`; known at compile time, so it works from any directory.
fn workspace() -> PathBuf {
    let xtask_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    xtask_dir.parent().unwrap_or(xtask_dir).to_path_buf()
}

/// Times each phase, so CI logs show where the minutes go.
#[derive(Default)]
struct Phases(Vec<(&'static str, Duration, bool)>);

impl Phases {
    fn run<T>(&mut self, name: &'static str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        eprintln!("xtask: ==> {name}");
        let start = Instant::now();
        let result = f();
        let elapsed = start.elapsed();
        let verdict = if result.is_ok() { "done" } else { "FAILED" };
        eprintln!(
            "xtask: <== {name}: {verdict} in {:.1}s",
            elapsed.as_secs_f64()
        );
        self.0.push((name, elapsed, result.is_ok()));
        result
    }

    fn summary(&self) {
        if self.0.len() < 2 {
            return;
        }
        eprintln!("xtask: phase timings:");
        for (name, elapsed, ok) in &self.0 {
            let verdict = if *ok { "ok" } else { "FAILED" };
            eprintln!(
                "xtask:   {name:<22} {:>7.1}s  {verdict}",
                elapsed.as_secs_f64()
            );
        }
    }
}
