//! podman with runc, in a store of the test's own: images, containers and their state live
//! in a temporary directory, so loading the image touches nothing of the host's podman and
//! dropping the guard removes every container (also one left running by a failed test) and
//! every image it loaded.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, ensure};

use crate::infra::util::TempDir;

pub struct Podman {
    dir: TempDir,
}

impl Podman {
    /// # Errors
    /// When the directory cannot be made or podman is missing.
    pub fn new() -> Result<Self> {
        crate::infra::stale::sweep();
        let p = Self {
            dir: TempDir::new()?,
        };
        p.run(&["version", "--format", "{{.Client.Version}}"])
            .context("podman (installed by xtask/src/packages.rs)")?;
        Ok(p)
    }

    /// `podman <global flags> args...`. vfs storage: layers are plain directories (nothing
    /// to unmount); cgroupfs: systemd is not PID 1 here; runc: crun cannot run containers on
    /// this hybrid-cgroup host (shared/ENVIRONMENT.md).
    #[must_use]
    pub fn command(&self, args: &[&str]) -> Command {
        let d = self.dir.path();
        let mut c = Command::new("podman");
        c.arg("--root")
            .arg(d.join("root"))
            .arg("--runroot")
            .arg(d.join("run"))
            .arg("--tmpdir")
            .arg(d.join("tmp"))
            .args(["--storage-driver", "vfs", "--cgroup-manager", "cgroupfs"])
            .args(["--events-backend", "none", "--runtime", "runc"])
            .args(args);
        c
    }

    /// Runs `podman args...` to completion; its stdout.
    ///
    /// # Errors
    /// When podman fails (the error has its stderr).
    pub fn run(&self, args: &[&str]) -> Result<String> {
        crate::infra::cmd::run(&mut self.command(args))
    }

    /// `podman load -i archive`, and checks that `image` (as a pod would name it) resolves.
    ///
    /// # Errors
    /// When the archive does not load or does not provide `image`.
    pub fn load(&self, archive: &Path, image: &str) -> Result<()> {
        let archive = archive.to_str().context("utf-8 path")?;
        let out = self.run(&["load", "-i", archive])?;
        let exists = self.command(&["image", "exists", image]).status()?;
        ensure!(
            exists.success(),
            "{archive} does not provide {image}: {out}"
        );
        Ok(())
    }
}

impl Drop for Podman {
    fn drop(&mut self) {
        for args in [&["rm", "-a", "-f", "-t", "0"][..], &["rmi", "-a", "-f"][..]] {
            if let Err(e) = self.run(args) {
                eprintln!("lab: podman {args:?}: {e:#}");
            }
        }
    }
}
