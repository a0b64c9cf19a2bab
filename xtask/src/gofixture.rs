//! The lab's Go client (`tests/go/go-watch.go`), built with Debian's `golang-go` into the
//! directory of the other fixtures, so a lab test can dial with the very `net.Dialer` code
//! kubelet runs. Offline and self-contained: the standard library only, the build cache under
//! the target directory, no module proxy.

use std::path::Path;
use std::process::Command;

use anyhow::Result;
use xtask::process::{Output, run};

use crate::cargo_run::target_dir;

/// The Go sources, relative to the workspace.
pub(crate) const SOURCE: &str = "tests/go/go-watch.go";

/// # Errors
/// When the Go toolchain is missing or the build fails.
pub(crate) fn build(ws: &Path) -> Result<()> {
    let target = target_dir(ws)?;
    let mut cmd = Command::new("go");
    cmd.current_dir(ws)
        .env("GOCACHE", target.join("go-cache"))
        .env("GOPATH", target.join("go-path"))
        .env("GOPROXY", "off")
        .env("GOFLAGS", "-trimpath")
        .env("CGO_ENABLED", "0")
        .args(["build", "-o"])
        .arg(target.join("debug/go-watch"))
        .arg(SOURCE);
    run("go build (go-watch)", &mut cmd, Output::Inherit)
}

/// `gofmt -l`: the Go fixture is formatted (a lint gate, like `cargo fmt --check`).
///
/// # Errors
/// When gofmt fails or lists the file.
pub(crate) fn check_format(ws: &Path) -> Result<()> {
    let out = Command::new("gofmt")
        .current_dir(ws)
        .args(["-l", SOURCE])
        .output()
        .map_err(|e| {
            anyhow::anyhow!("gofmt: {e}: install golang-go (`cargo xtask test` installs it)")
        })?;
    anyhow::ensure!(
        out.status.success(),
        "gofmt failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    anyhow::ensure!(
        out.stdout.is_empty(),
        "gofmt: {SOURCE} is not formatted (run `gofmt -w {SOURCE}`)"
    );
    Ok(())
}
