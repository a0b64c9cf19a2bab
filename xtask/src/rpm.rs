//! `cargo xtask rpm`: the RPMs (`x86_64`, `aarch64`) beside the .deb: the same static musl
//! binary (`image::release_musl`, stripped with the architecture's own strip as the image's
//! is), the unit, the example config as `%config(noreplace)`, man pages and completions,
//! packed by rpmbuild from Debian's `rpm` package with `packaging/rpm/lifeline.spec`, then
//! checked with rpmlint. rpmbuild rather than cargo-generate-rpm: it is one `apt-get install`
//! (the `rpm` package that `rpm -qpl` and the scratch-root install need anyway) instead of a
//! crate build of minutes, and the spec is what an RPM distribution's packager reads.
//! Reproducible like the image: every timestamp is the commit's (`SOURCE_DATE_EPOCH`).

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result};
use xtask::process::{Output, run};

use crate::{
    Phases,
    arch::{self, Arch},
    meta::Meta,
};

/// Where the packages go (and rpmbuild's scratch tree under it).
const OUT: &str = "target/rpm";
const SPEC: &str = "packaging/rpm/lifeline.spec";
/// rpmlint's configuration: each finding it filters says why.
const LINTRC: &str = "packaging/rpm/rpmlint.toml";

pub(crate) fn rpm(ws: &Path, phases: &mut Phases) -> Result<()> {
    crate::build_ebpf(ws, phases)?;
    phases.run("cross tools", crate::packages::ensure_cross)?;
    phases.run("rpm tools", crate::packages::ensure_rpm)?;
    let mut bins = Vec::new();
    for a in arch::ALL {
        bins.push((
            a,
            phases.run(a.phase, || crate::image::release_musl(ws, a))?,
        ));
    }
    phases.run("man pages", || crate::docs::generate(ws))?;
    let meta = Meta::read(ws)?;
    let rpms = phases.run("rpmbuild", || {
        bins.iter()
            .map(|(a, bin)| build(ws, &meta, a, bin))
            .collect::<Result<Vec<_>>>()
    })?;
    phases.run("rpmlint", || {
        run(
            "rpmlint",
            Command::new("rpmlint")
                .current_dir(ws)
                .arg("--strict")
                .arg("--config")
                .arg(ws.join(LINTRC))
                .args(&rpms),
            Output::Inherit,
        )
    })?;
    for r in &rpms {
        println!("{}", r.display());
    }
    Ok(())
}

/// One architecture's package: its files staged under `target/rpm/stage-ARCH/`, then
/// `rpmbuild -bb --target ARCH`; the package's path.
fn build(ws: &Path, meta: &Meta, a: &Arch, bin: &Path) -> Result<PathBuf> {
    let out = ws.join(OUT);
    let stage = out.join(format!("stage-{}", a.rpm));
    if stage.exists() {
        std::fs::remove_dir_all(&stage)?;
    }
    for d in ["bin", "man", "completions"] {
        std::fs::create_dir_all(stage.join(d))?;
    }
    let staged = stage.join("bin/lifeline");
    std::fs::copy(bin, &staged).with_context(|| format!("copying {}", bin.display()))?;
    run(
        &format!("stripping the {} binary", a.name),
        Command::new(a.strip.0).arg(&staged),
        Output::Inherit,
    )?;
    let assets = ws.join(crate::docs::DIR);
    for (from, to) in [
        (ws.join("packaging/lifeline.service"), "lifeline.service"),
        (ws.join("packaging/lifeline.toml"), "lifeline.toml"),
        (ws.join("README.md"), "README.md"),
    ] {
        std::fs::copy(&from, stage.join(to)).with_context(|| format!("{}", from.display()))?;
    }
    for sub in ["man", "completions"] {
        for e in std::fs::read_dir(assets.join(sub))? {
            let p = e?.path();
            if let Some(name) = p.file_name() {
                std::fs::copy(&p, stage.join(sub).join(name))?;
            }
        }
    }
    let name = format!("lifeline-{}-1.{}.rpm", meta.version, a.rpm);
    let defines = [
        ("_topdir", out.join("build").display().to_string()),
        ("_rpmdir", out.display().to_string()),
        (
            "_build_name_fmt",
            "%{NAME}-%{VERSION}-%{RELEASE}.%{ARCH}.rpm".into(),
        ),
        ("_buildhost", "lifeline-build".into()),
        ("use_source_date_epoch_as_buildtime", "1".into()),
        ("clamp_mtime_to_source_date_epoch", "1".into()),
        ("lifeline_version", meta.version.clone()),
        ("lifeline_src", stage.display().to_string()),
        ("license_text", meta.license.clone()),
        ("url_text", meta.source.clone()),
    ];
    let mut cmd = Command::new("rpmbuild");
    cmd.current_dir(ws)
        .env("SOURCE_DATE_EPOCH", meta.epoch.to_string())
        .args(["-bb", "--quiet", "--target", a.rpm]);
    for (k, v) in &defines {
        cmd.arg("--define").arg(format!("{k} {v}"));
    }
    cmd.arg(ws.join(SPEC));
    run(
        &format!("building the {} RPM", a.rpm),
        &mut cmd,
        Output::Inherit,
    )?;
    let rpm = out.join(name);
    anyhow::ensure!(
        rpm.is_file(),
        "rpmbuild ran but {} is not there",
        rpm.display()
    );
    Ok(rpm)
}
