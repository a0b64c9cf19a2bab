//! What the image's labels say, read from the project's own files: the agent's version and
//! description, the workspace's license and repository, and the commit being built
//! (`SOURCE_DATE_EPOCH` overrides its time, as reproducible builds expect).

use std::{fmt::Write as _, path::Path, process::Command};

use anyhow::{Context as _, Result};
use xtask::process::capture;

pub(crate) struct Meta {
    pub version: String,
    pub description: String,
    pub license: String,
    pub source: String,
    /// The commit, or "unknown" outside a git checkout.
    revision: String,
    /// Seconds since 1970 of the commit: every file's mtime, and the `created` time.
    pub epoch: u64,
    created: String,
}

impl Meta {
    /// # Errors
    /// When a manifest cannot be read or lacks a key.
    pub(crate) fn read(ws: &Path) -> Result<Self> {
        let agent = std::fs::read_to_string(ws.join("agent/Cargo.toml"))?;
        let workspace = std::fs::read_to_string(ws.join("Cargo.toml"))?;
        let git = |args: &[&str]| {
            capture("asking git", Command::new("git").current_dir(ws).args(args)).ok()
        };
        let epoch = std::env::var("SOURCE_DATE_EPOCH")
            .ok()
            .or_else(|| git(&["log", "-1", "--format=%ct"]))
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        let created = capture(
            "formatting the commit time",
            Command::new("date").args(["-u", "-d", &format!("@{epoch}"), "+%Y-%m-%dT%H:%M:%SZ"]),
        )?;
        Ok(Self {
            version: key(&agent, "version")?,
            description: key(&agent, "description")?,
            license: key(&workspace, "license")?,
            source: key(&workspace, "repository")?,
            revision: git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".to_owned()),
            epoch,
            created,
        })
    }

    /// The image configuration for `arch` (OCI platform name): entry point, labels, the one layer's uncompressed digest.
    #[must_use]
    pub(crate) fn config_json(&self, arch: &str, diff_id: &str) -> String {
        let labels = [
            ("org.opencontainers.image.title", "lifeline"),
            ("org.opencontainers.image.description", &self.description),
            ("org.opencontainers.image.version", &self.version),
            ("org.opencontainers.image.revision", &self.revision),
            ("org.opencontainers.image.source", &self.source),
            ("org.opencontainers.image.licenses", &self.license),
            ("org.opencontainers.image.created", &self.created),
        ]
        .iter()
        .map(|(k, v)| format!("{}:{}", quote(k), quote(v)))
        .collect::<Vec<_>>()
        .join(",");
        format!(
            r#"{{"architecture":"{arch}","os":"linux","created":{},"config":{{"User":"0","Env":["PATH=/usr/bin"],"Entrypoint":["/usr/bin/lifeline"],"Cmd":["run"],"Labels":{{{labels}}}}},"rootfs":{{"type":"layers","diff_ids":["sha256:{diff_id}"]}},"history":[{{"created":{},"created_by":"cargo xtask image"}}]}}"#,
            quote(&self.created),
            quote(&self.created)
        )
    }
}

/// The string value of the first top-level `key = "..."` line.
fn key(manifest: &str, key: &str) -> Result<String> {
    manifest
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == key).then(|| v.trim().strip_prefix('"')?.strip_suffix('"'))?
        })
        .map(str::to_owned)
        .with_context(|| format!("no `{key} = \"...\"` in a Cargo.toml"))
}

/// A JSON string literal.
fn quote(s: &str) -> String {
    let mut out = String::from('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::{key, quote};

    #[test]
    fn reads_keys_and_quotes_json() {
        let toml = "[package]\nname = \"lifeline\"\nversion = \"0.1.0\"\n";
        assert_eq!(key(toml, "version").unwrap(), "0.1.0");
        assert!(key(toml, "license").is_err());
        assert_eq!(quote("a \"b\"\\\n"), r#""a \"b\"\\\u000a""#);
    }
}
