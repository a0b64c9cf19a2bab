//! A tracefs mount of the lab's own, standing in for a node's /sys/kernel/tracing (systemd
//! mounts it at boot on a node; a fresh lab machine has none, and the test must not mount
//! anything over the machine's own paths). Unmounted on drop.

use std::path::Path;

use anyhow::{Context, Result};

use crate::infra::util::TempDir;

pub struct LabTracefs {
    dir: TempDir,
}

impl LabTracefs {
    /// # Errors
    /// When tracefs cannot be mounted.
    pub fn new() -> Result<Self> {
        let dir = TempDir::new()?;
        let t = Self { dir };
        crate::infra::cmd::run_args(&[
            "mount",
            "-t",
            "tracefs",
            "nodev",
            t.path().to_str().context("utf-8 path")?,
        ])?;
        Ok(t)
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for LabTracefs {
    fn drop(&mut self) {
        let c = std::ffi::CString::new(self.path().as_os_str().as_encoded_bytes());
        if let Ok(c) = c {
            // SAFETY: a valid C string; MNT_DETACH: gone even if something still holds it.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
    }
}
