//! The OCI image layout, assembled by hand with GNU tar, gzip and sha256sum (all in every
//! Debian install) rather than buildah or umoci: one layer of one file needs no container
//! storage, no daemon and no root, and every byte is fixed by the binary, the version and
//! the commit (names sorted, owners 0, mtimes at the commit's time, gzip without a name or
//! timestamp), so the same commit gives the same digests; the index lists the architectures
//! in a fixed order. The result is an `oci-archive`:
//! `podman load -i`, `skopeo copy oci-archive:...`, `ctr images import` all read it.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result};
use xtask::process::capture;

use crate::{arch::Arch, meta::Meta};

/// What [`assemble`] made.
pub(crate) struct Image {
    /// As Kubernetes normalises the `DaemonSet`'s `lifeline:<version>`.
    pub name: String,
    pub archive: PathBuf,
    /// The digest of the multi-arch index the name points at (what a node resolves).
    pub index: String,
    /// Each architecture's compressed layer size.
    pub layers: Vec<(&'static str, u64)>,
}

/// Builds `target/image/lifeline-<version>.oci.tar` around the static binaries `bins`: one
/// image per architecture, and an image index naming them by platform. `index.json` holds one
/// descriptor, the index, under the image's name: `podman load` and `ctr import` then pick the
/// host's platform from it (two top-level entries with one name would be ambiguous to them).
///
/// # Errors
/// When a tool fails or the workspace manifest lacks the version.
pub(crate) fn assemble(ws: &Path, bins: &[(&Arch, PathBuf)]) -> Result<Image> {
    let meta = crate::meta::Meta::read(ws)?;
    let out = ws.join("target/image");
    let work = out.join("build");
    if work.exists() {
        fs::remove_dir_all(&work)?;
    }
    let layout = work.join("layout");
    let blobs = layout.join("blobs/sha256");
    fs::create_dir_all(&blobs)?;
    let mut manifests = Vec::new();
    let mut layers = Vec::new();
    for (arch, bin) in bins {
        let (manifest, layer) = image(&meta, &work, &blobs, arch, bin)?;
        manifests.push(format!(
            r#"{{"mediaType":"{MANIFEST}","digest":"sha256:{}","size":{},"platform":{{"architecture":"{}","os":"linux"}}}}"#,
            manifest.0, manifest.1, arch.name
        ));
        layers.push((arch.name, layer));
    }
    let list = format!(
        r#"{{"schemaVersion":2,"mediaType":"{INDEX}","manifests":[{}]}}"#,
        manifests.join(",")
    );
    let list = blob_bytes(&blobs, &work, "index.json", list.as_bytes())?;
    let name = format!("docker.io/library/lifeline:{}", meta.version);
    let index = format!(
        r#"{{"schemaVersion":2,"mediaType":"{INDEX}","manifests":[{{"mediaType":"{INDEX}","digest":"sha256:{}","size":{},"annotations":{{"io.containerd.image.name":"{name}","org.opencontainers.image.ref.name":"{name}"}}}}]}}"#,
        list.0, list.1
    );
    fs::write(layout.join("index.json"), index)?;
    fs::write(
        layout.join("oci-layout"),
        r#"{"imageLayoutVersion":"1.0.0"}"#,
    )?;
    let archive = out.join(format!("lifeline-{}.oci.tar", meta.version));
    tar(
        &meta,
        &layout,
        &archive,
        &["oci-layout", "index.json", "blobs"],
    )?;
    fs::remove_dir_all(&work)?;
    Ok(Image {
        name,
        archive,
        index: list.0,
        layers,
    })
}

const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const INDEX: &str = "application/vnd.oci.image.index.v1+json";

/// One architecture's layer, config and manifest into `blobs`: (manifest digest and size,
/// compressed layer size).
fn image(
    meta: &Meta,
    work: &Path,
    blobs: &Path,
    arch: &Arch,
    bin: &Path,
) -> Result<((String, u64), u64)> {
    let rootfs = work.join(format!("rootfs-{}", arch.name));
    fs::create_dir_all(rootfs.join("usr/bin"))?;
    let dest = rootfs.join("usr/bin/lifeline");
    fs::copy(bin, &dest)?;
    capture(
        &format!("stripping the {} binary", arch.name),
        Command::new(arch.strip.0).arg(&dest),
    )?;
    let layer_tar = work.join(format!("layer-{}.tar", arch.name));
    tar(meta, &rootfs, &layer_tar, &["usr"])?;
    let diff_id = sha256(&layer_tar)?;
    capture(
        "compressing the layer",
        Command::new("sh")
            .args(["-c", "gzip -n -9 -c \"$1\" > \"$1.gz\"", "sh"])
            .arg(&layer_tar),
    )?;
    let gz = layer_tar.with_extension("tar.gz");
    let layer = blob(blobs, &gz)?;
    let config = meta.config_json(arch.name, &diff_id);
    let config = blob_bytes(blobs, work, "config.json", config.as_bytes())?;
    let manifest = format!(
        r#"{{"schemaVersion":2,"mediaType":"{MANIFEST}","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:{}","size":{}}},"layers":[{{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:{}","size":{}}}]}}"#,
        config.0, config.1, layer.0, layer.1
    );
    let manifest = blob_bytes(blobs, work, "manifest.json", manifest.as_bytes())?;
    Ok((manifest, layer.1))
}

/// A tar archive fixed by its contents alone: names sorted, owners 0, mtimes at the commit's.
fn tar(meta: &Meta, dir: &Path, file: &Path, entries: &[&str]) -> Result<String> {
    let mtime = format!("--mtime=@{}", meta.epoch);
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
