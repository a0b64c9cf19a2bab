//! apt, read-only for the host: which kernel package a metapackage depends on, and
//! `apt-get download`. bookworm's kernels come from the host's own sources; bullseye's from
//! a private configuration in the cache (its own sources, lists and package cache, an empty
//! dpkg status) that points the host's own archive URIs at the bullseye suites; arm64's
//! (kernels and busybox) from one for bookworm with arm64 as its only architecture, so the
//! host's dpkg never learns a foreign architecture.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result, anyhow};
use xtask::process::{Output, capture, run};

use super::Series;

pub(super) struct Apt {
    /// `-o` options of the private configuration; empty for the host's.
    options: Vec<String>,
}

impl Apt {
    /// # Errors
    /// When the private configuration cannot be written.
    pub(super) fn new(series: &Series, cache: &Path) -> Result<Self> {
        let Some([main, security]) = series.suites else {
            return Ok(Self {
                options: Vec::new(),
            });
        };
        // amd64 keeps the directory it always had (`apt-bullseye`).
        let arm = series.arch.name != "amd64";
        let dir = if arm {
            cache.join(format!("apt-{main}-{}", series.arch.name))
        } else {
            cache.join(format!("apt-{main}"))
        };
        for sub in ["parts", "lists/partial", "cache/archives/partial"] {
            fs::create_dir_all(dir.join(sub))?;
        }
        let (main_uri, security_uri) = host_uris();
        let key = "/usr/share/keyrings/debian-archive-keyring.gpg";
        let sources = format!(
            "Types: deb\nURIs: {main_uri}\nSuites: {main}\nComponents: main\nSigned-By: {key}\n\n\
             Types: deb\nURIs: {security_uri}\nSuites: {security}\nComponents: main\nSigned-By: {key}\n"
        );
        fs::write(dir.join(format!("parts/{main}.sources")), sources)?;
        let d = |p: &str| dir.join(p).display().to_string();
        let options = [
            "Dir::Etc::sourcelist=/dev/null".to_owned(),
            format!("Dir::Etc::sourceparts={}", d("parts")),
            format!("Dir::State::Lists={}", d("lists")),
            format!("Dir::Cache={}", d("cache")),
            "Dir::State::status=/dev/null".to_owned(),
        ];
        // Another architecture's packages: this configuration's lists hold that one alone.
        let arch = [
            format!("APT::Architecture={}", series.arch.name),
            format!("APT::Architectures::={}", series.arch.name),
        ];
        let options = options.iter().chain(arch.iter().filter(|_| arm));
        Ok(Self {
            options: options.flat_map(|o| ["-o".to_owned(), o.clone()]).collect(),
        })
    }

    fn cmd(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        // As root apt hands downloads to user _apt, who cannot write our cache.
        c.env("DEBIAN_FRONTEND", "noninteractive")
            .args(["-o", "APT::Sandbox::User=root"])
            .args(&self.options);
        c
    }

    /// The `linux-image-*` package `meta` depends on; the lists are updated once if they
    /// do not know `meta` yet (a fresh machine or a fresh cache).
    ///
    /// # Errors
    /// When apt does not know it even after an update.
    pub(super) fn kernel_package(&self, meta: &str) -> Result<String> {
        let step = format!("finding the kernel behind {meta}");
        let depends = |apt: &Self| {
            capture(&step, apt.cmd("apt-cache").args(["depends", meta]))
                .ok()
                .and_then(|out| {
                    out.lines()
                        .filter_map(|l| l.trim().strip_prefix("Depends: "))
                        .find(|p| p.starts_with("linux-image-"))
                        .map(str::to_owned)
                })
        };
        if let Some(p) = depends(self) {
            return Ok(p);
        }
        self.update()?;
        depends(self).ok_or_else(|| anyhow!("{step} failed: apt knows no {meta} after an update"))
    }

    /// `apt-get update` of this configuration's lists.
    ///
    /// # Errors
    /// When apt-get fails.
    pub(super) fn update(&self) -> Result<()> {
        let mut cmd = self.cmd("apt-get");
        run(
            "apt-get update",
            cmd.args(["update", "-qq"]),
            Output::Inherit,
        )
    }

    /// Downloads `package` into `dir` unless it is there; returns the .deb.
    ///
    /// # Errors
    /// When apt-get fails or leaves no such file.
    pub(super) fn download(&self, package: &str, dir: &Path) -> Result<PathBuf> {
        let find = || -> Option<PathBuf> {
            let prefix = format!("{package}_");
            fs::read_dir(dir)
                .ok()?
                .flatten()
                .map(|e| e.path())
                .find(|p| {
                    p.extension().is_some_and(|e| e == "deb")
                        && p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with(&prefix))
                })
        };
        if let Some(deb) = find() {
            return Ok(deb);
        }
        let mut cmd = self.cmd("apt-get");
        cmd.current_dir(dir).args(["download", "-qq", package]);
        run(&format!("downloading {package}"), &mut cmd, Output::Inherit)?;
        find().with_context(|| format!("apt-get download left no {package} in {}", dir.display()))
    }
}

/// The host's Debian archive and security URIs (deb822 sources of its own codename), so a
/// mirror configured there is used for bullseye too.
fn host_uris() -> (String, String) {
    let mut uris = (
        "http://deb.debian.org/debian".to_owned(),
        "http://deb.debian.org/debian-security".to_owned(),
    );
    let os = fs::read_to_string("/etc/os-release").unwrap_or_default();
    let Some(codename) = os.lines().find_map(|l| l.strip_prefix("VERSION_CODENAME=")) else {
        return uris;
    };
    let files = fs::read_dir("/etc/apt/sources.list.d")
        .into_iter()
        .flatten()
        .flatten();
    for text in files.filter_map(|e| fs::read_to_string(e.path()).ok()) {
        for stanza in text.split("\n\n") {
            let field = |k: &str| {
                stanza
                    .lines()
                    .find_map(|l| l.strip_prefix(k))
                    .map(str::trim)
            };
            let (Some(uri), Some(suites)) = (field("URIs:"), field("Suites:")) else {
                continue;
            };
            let uri = uri.split_whitespace().next().unwrap_or(uri).to_owned();
            let suites: Vec<&str> = suites.split_whitespace().collect();
            if suites.contains(&codename) {
                uris.0 = uri;
            } else if suites.contains(&format!("{codename}-security").as_str()) {
                uris.1 = uri;
            }
        }
    }
    uris
}
