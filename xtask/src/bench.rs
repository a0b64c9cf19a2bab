//! `cargo xtask bench [--quick] [--trials N] [--scenario A,B] [--cost] [--scale] [--soak
//! [--soak-minutes N]] [--fleet [--fleet-nodes N]]`: lifeline against the alternatives in the
//! lab, its cost, its scale, the loss soak and the fleet (needs root). The agent is built in
//! release mode, as it ships: its CPU and memory are what the bench reports. The bench itself
//! is `bench/` (lab-bench).

use std::path::Path;
use std::process::Command;

use anyhow::Result;
use xtask::process::{Output, run};

use crate::Phases;
use crate::cargo_run::{cargo, target_dir};
use crate::lab::require_root;

/// `cargo xtask bench`'s flags, passed on to lab-bench (which checks the values).
#[derive(Debug, Default, PartialEq, Eq)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "each bool is one independent command-line switch"
)]
pub(crate) struct Options {
    pub quick: bool,
    /// `--cost` / `--scale`: only that part, writing only its own section.
    pub cost: bool,
    pub scale: bool,
    /// `--usual`: only the usual-load measurement, printed.
    pub usual: bool,
    pub trials: Option<String>,
    pub scenario: Option<String>,
    /// The loss soak alone (`--soak`), optionally shortened (`--soak-minutes N`).
    pub soak: bool,
    pub soak_minutes: Option<String>,
    /// `--fleet`: only the fleet part.
    pub fleet: bool,
    pub fleet_nodes: Option<String>,
}

impl Options {
    /// `--quick`, `--trials N`, `--scenario A,B` (also `--flag=value`), in any order.
    ///
    /// # Errors
    /// An unknown argument, a flag given twice or without its value, a bad trial count.
    pub(crate) fn parse(args: &[&str]) -> std::result::Result<Self, String> {
        let mut o = Self::default();
        let mut rest = args.iter().copied();
        while let Some(arg) = rest.next() {
            let (flag, inline) = arg
                .split_once('=')
                .map_or((arg, None), |(f, v)| (f, Some(v)));
            let switch = match flag {
                "--quick" => Some(&mut o.quick),
                "--cost" => Some(&mut o.cost),
                "--scale" => Some(&mut o.scale),
                "--usual" => Some(&mut o.usual),
                "--soak" => Some(&mut o.soak),
                "--fleet" => Some(&mut o.fleet),
                _ => None,
            };
            if let Some(on) = switch.filter(|on| inline.is_none() && !**on) {
                *on = true;
                continue;
            }
            let slot = match flag {
                "--trials" => &mut o.trials,
                "--scenario" => &mut o.scenario,
                "--soak-minutes" => &mut o.soak_minutes,
                "--fleet-nodes" => &mut o.fleet_nodes,
                _ => return Err(format!("`bench` does not take `{arg}`")),
            };
            if slot.is_some() {
                return Err(format!("`{flag}` given twice"));
            }
            let value = inline
                .or_else(|| rest.next())
                .filter(|v| !v.is_empty() && !v.starts_with("--"))
                .ok_or_else(|| format!("`{flag}` needs a value"))?;
            *slot = Some(value.to_owned());
        }
        if let Some(t) = &o.trials
            && !t.parse::<u16>().is_ok_and(|n| (1..=200).contains(&n))
        {
            return Err(format!("`--trials` takes 1 to 200, got `{t}`"));
        }
        if let Some(m) = &o.soak_minutes
            && !m.parse::<u16>().is_ok_and(|n| (1..=30).contains(&n))
        {
            return Err(format!("`--soak-minutes` takes 1 to 30, got `{m}`"));
        }
        if let Some(n) = &o.fleet_nodes
            && !n.parse::<u16>().is_ok_and(|n| (1..=250).contains(&n))
        {
            return Err(format!("`--fleet-nodes` takes 1 to 250, got `{n}`"));
        }
        if o.fleet_nodes.is_some() && !o.fleet {
            return Err("`--fleet-nodes` goes with `--fleet`".to_owned());
        }
        Ok(o)
    }

    /// The same flags for lab-bench.
    fn lab_bench_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        for (on, flag) in [
            (self.quick, "--quick"),
            (self.cost, "--cost"),
            (self.scale, "--scale"),
            (self.usual, "--usual"),
            (self.soak, "--soak"),
            (self.fleet, "--fleet"),
        ] {
            if on {
                args.push(flag.to_owned());
            }
        }
        for (flag, value) in [
            ("--trials", &self.trials),
            ("--scenario", &self.scenario),
            ("--soak-minutes", &self.soak_minutes),
            ("--fleet-nodes", &self.fleet_nodes),
        ] {
            if let Some(v) = value {
                args.extend([flag.to_owned(), v.clone()]);
            }
        }
        args
    }
}

pub(crate) fn bench(ws: &Path, phases: &mut Phases, options: &Options) -> Result<()> {
    require_root("bench")?;
    phases.run("packages", crate::packages::ensure)?;
    crate::build_ebpf(ws, phases)?;
    phases.run("build (release agent)", || {
        cargo(
            ws,
            "building lifeline (release)",
            &["build", "--release", "-p", "lifeline"],
        )
    })?;
    let fixtures = [
        "build",
        "-p",
        "lifeline-tests",
        "--bins",
        "-p",
        "lifeline-bench",
    ];
    phases.run("build (lab, bench)", || {
        cargo(ws, "building the lab fixtures and lab-bench", &fixtures)
    })?;
    let target = target_dir(ws)?;
    let mut cmd = Command::new(target.join("debug/lab-bench"));
    let args = options.lab_bench_args();
    let shown = std::iter::once("cargo xtask bench")
        .chain(args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    cmd.current_dir(ws)
        .env("LIFELINE_BIN", target.join("release/lifeline"))
        .env("LAB_BENCH_COMMAND", shown)
        .args(&args);
    phases.run("bench", || run("the bench", &mut cmd, Output::Inherit))
}

#[cfg(test)]
mod tests {
    use super::Options;

    #[test]
    fn flags_in_any_order_and_both_spellings() {
        let o = Options::parse(&["--scenario", "flow-only,restarted-flow-only", "--quick"]);
        let want = Options {
            quick: true,
            scenario: Some("flow-only,restarted-flow-only".into()),
            ..Options::default()
        };
        assert_eq!(o, Ok(want));
        let o = Options::parse(&["--trials=10", "--scenario=flow-only"]).unwrap();
        assert_eq!(
            o.lab_bench_args(),
            ["--trials", "10", "--scenario", "flow-only"]
        );
        assert_eq!(Options::parse(&[]), Ok(Options::default()));
        let o = Options::parse(&["--soak", "--soak-minutes=3"]).unwrap();
        assert_eq!(o.lab_bench_args(), ["--soak", "--soak-minutes", "3"]);
        let o = Options::parse(&["--cost", "--scale", "--quick"]).unwrap();
        assert_eq!(o.lab_bench_args(), ["--quick", "--cost", "--scale"]);
        let o = Options::parse(&["--fleet", "--fleet-nodes=25"]).unwrap();
        assert_eq!(o.lab_bench_args(), ["--fleet", "--fleet-nodes", "25"]);
    }

    #[test]
    fn bad_arguments_are_named() {
        for (args, msg) in [
            (&["--fast"][..], "`bench` does not take `--fast`"),
            (&["--scenario"], "`--scenario` needs a value"),
            (&["--scenario", "--quick"], "`--scenario` needs a value"),
            (&["--trials", "0"], "`--trials` takes 1 to 200, got `0`"),
            (&["--trials", "x"], "`--trials` takes 1 to 200, got `x`"),
            (&["--quick", "--quick"], "`bench` does not take `--quick`"),
            (&["--trials=3", "--trials=4"], "`--trials` given twice"),
            (
                &["--soak-minutes", "31"],
                "`--soak-minutes` takes 1 to 30, got `31`",
            ),
            (
                &["--fleet-nodes", "30"],
                "`--fleet-nodes` goes with `--fleet`",
            ),
            (
                &["--fleet", "--fleet-nodes", "0"],
                "`--fleet-nodes` takes 1 to 250, got `0`",
            ),
        ] {
            assert_eq!(Options::parse(args), Err(msg.to_owned()), "{args:?}");
        }
    }
}
