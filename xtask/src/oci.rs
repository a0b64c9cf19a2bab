//! The OCI image layout, assembled by hand with GNU tar, gzip and sha256sum (all in every
//! Debian install) rather than buildah or umoci: one layer of one file needs no container
//! storage, no daemon and no root, and every byte is fixed by the binary, the version and
//! the commit (names sorted, owners 0, mtimes at the commit's time, gzip without a name or
//! timestamp), so the same commit gives the same digests. The result is an `oci-archive`:
//! `podman load -i`, `skopeo copy oci-archive:...`, `ctr images import` all read it.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result};
use xtask::process::capture;

/// What [`assemble`] made.
pub struct Image {
    /// As Kubernetes normalises the `DaemonSet`'s `lifeline:<version>`.
    pub name: String,
    pub archive: PathBuf,
    pub layer_size: u64,
}

/// Builds `target/image/lifeline-<version>.oci.tar` around the static binary `bin`.
///
/// # Errors
/// When a tool fails or the workspace manifest lacks the version.
pub fn assemble(ws: &Path, bin: &Path) -> Result<Image> {
    let meta = crate::meta::Meta::read(ws)?;
    let out = ws.join("target/image");
    let work = out.join("build");
    if work.exists() {
        fs::remove_dir_all(&work)?;
    }
    let (rootfs, layout) = (work.join("rootfs"), work.join("layout"));
    let blobs = layout.join("blobs/sha256");
    fs::create_dir_all(rootfs.join("usr/bin"))?;
    fs::create_dir_all(&blobs)?;
    let dest = rootfs.join("usr/bin/lifeline");
    fs::copy(bin, &dest)?;
    capture("stripping the binary", Command::new("strip").arg(&dest))?;
    let mtime = format!("--mtime=@{}", meta.epoch);
    let tar = |dir: &Path, file: &Path, entries: &[&str]| {
        let mut cmd = Command::new("tar");
        cmd.args([
            "--format=gnu",
            "--sort=name",
            &mtime,
            "--owner=0",
            "--group=0",
        ])
        .args(["--numeric-owner", "--mode=u+rw,go=rX", "-C"])
        .arg(dir)
        .arg("-cf")
        .arg(file)
        .args(entries);
        capture("writing a tar archive", &mut cmd)
    };
    let layer_tar = work.join("layer.tar");
    tar(&rootfs, &layer_tar, &["usr"])?;
    let diff_id = sha256(&layer_tar)?;
    capture(
        "compressing the layer",
        Command::new("sh")
            .args(["-c", "gzip -n -9 -c \"$1\" > \"$1.gz\"", "sh"])
            .arg(&layer_tar),
    )?;
    let layer = blob(&blobs, &work.join("layer.tar.gz"))?;
    let config = meta.config_json(&diff_id);
    let config = blob_bytes(&blobs, &work, "config.json", config.as_bytes())?;
    let manifest = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:{}","size":{}}},"layers":[{{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:{}","size":{}}}]}}"#,
        config.0, config.1, layer.0, layer.1
    );
    let manifest = blob_bytes(&blobs, &work, "manifest.json", manifest.as_bytes())?;
    let name = format!("docker.io/library/lifeline:{}", meta.version);
    let index = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:{}","size":{},"platform":{{"architecture":"amd64","os":"linux"}},"annotations":{{"io.containerd.image.name":"{name}","org.opencontainers.image.ref.name":"{name}"}}}}]}}"#,
        manifest.0, manifest.1
    );
    fs::write(layout.join("index.json"), index)?;
    fs::write(
        layout.join("oci-layout"),
        r#"{"imageLayoutVersion":"1.0.0"}"#,
    )?;
    let archive = out.join(format!("lifeline-{}.oci.tar", meta.version));
    tar(&layout, &archive, &["oci-layout", "index.json", "blobs"])?;
    fs::remove_dir_all(&work)?;
    Ok(Image {
        name,
        archive,
        layer_size: layer.1,
    })
}

fn sha256(file: &Path) -> Result<String> {
    let out = capture("hashing", Command::new("sha256sum").arg(file))?;
    out.split_whitespace()
        .next()
        .map(str::to_owned)
        .context("sha256sum printed nothing")
}

/// Moves `file` into `blobs` under its digest: (digest, size).
fn blob(blobs: &Path, file: &Path) -> Result<(String, u64)> {
    let digest = sha256(file)?;
    let size = fs::metadata(file)?.len();
    fs::rename(file, blobs.join(&digest))?;
    Ok((digest, size))
}

fn blob_bytes(blobs: &Path, work: &Path, name: &str, bytes: &[u8]) -> Result<(String, u64)> {
    let file = work.join(name);
    fs::write(&file, bytes)?;
    blob(blobs, &file)
}
