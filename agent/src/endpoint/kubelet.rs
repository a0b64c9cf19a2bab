//! The running kubelet's `--kubeconfig`, read from /proc: the file kubelet really uses,
//! whatever the distribution.

use std::{
    ffi::OsStr,
    os::unix::{ffi::OsStrExt as _, fs::MetadataExt as _},
    path::{Path, PathBuf},
};

/// A kubelet process that was given a kubeconfig.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Kubelet {
    pub pid: u32,
    /// Start time in clock ticks after boot (`/proc/PID/stat` field 22).
    pub start: u64,
    /// `--kubeconfig` as written on its command line.
    pub arg: PathBuf,
}

/// Every process named `kubelet` in this network namespace that has a `--kubeconfig`.
/// Kubelet must share the host's network namespace with lifeline anyway, and a process in
/// another one (a lab test's fake kubelet, a kubelet-in-docker node) is some other node's.
pub(super) fn running() -> Vec<Kubelet> {
    let (Ok(own_ns), Ok(own_dev)) = (id("self", NS), id("self", NET_DEV)) else {
        return Vec::new();
    };
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            // Any read may fail because the process just exited: then it is no candidate.
            let p = format!("/proc/{pid}");
            let comm = std::fs::read(format!("{p}/comm")).ok()?;
            let pid_s = pid.to_string();
            let same_netns = match id(&pid_s, NS) {
                Ok(ns) => ns == own_ns,
                Err(_) => id(&pid_s, NET_DEV).ok()? == own_dev,
            };
            if comm.strip_suffix(b"\n").unwrap_or(&comm) != b"kubelet" || !same_netns {
                return None;
            }
            let arg = kubeconfig_arg(&std::fs::read(format!("{p}/cmdline")).ok()?)?;
            let start = start_time(&std::fs::read_to_string(format!("{p}/stat")).ok()?)?;
            Some(Kubelet { pid, start, arg })
        })
        .collect()
}

/// A network namespace's identity is its nsfs file's inode. Reading another process's takes
/// ptrace access, which lifeline's hardened unit lacks (no `CAP_SYS_PTRACE`) towards a kubelet
/// holding every capability; its `/proc/PID/net/` entries need none, and each network
/// namespace has its own `dev` entry with an inode of its own: that identifies it too.
const NS: &str = "ns/net";
const NET_DEV: &str = "net/dev";

/// Device and inode of `/proc/PID/WHAT`.
fn id(pid: &str, what: &str) -> std::io::Result<(u64, u64)> {
    let m = std::fs::metadata(format!("/proc/{pid}/{what}"))?;
    Ok((m.dev(), m.ino()))
}

/// `--kubeconfig PATH` or `--kubeconfig=PATH` from a NUL-separated command line, as kubelet's
/// flag parser reads it: the last one wins, nothing after `--` is a flag, and an empty value
/// means none (kubelet then runs standalone, without an API server).
#[must_use]
pub(super) fn kubeconfig_arg(cmdline: &[u8]) -> Option<PathBuf> {
    let mut args = cmdline.split(|b| *b == 0).skip(1);
    let mut found: Option<&[u8]> = None;
    while let Some(a) = args.next() {
        match a {
            b"--" => break,
            b"--kubeconfig" => found = args.next(),
            _ => {
                if let Some(v) = a.strip_prefix(b"--kubeconfig=") {
                    found = Some(v);
                }
            }
        }
    }
    found
        .filter(|v| !v.is_empty())
        .map(|v| PathBuf::from(OsStr::from_bytes(v)))
}

/// Field 22 of `/proc/PID/stat`, counted after the `)` that ends the command name (which
/// may itself contain spaces and parentheses).
#[must_use]
pub(crate) fn start_time(stat: &str) -> Option<u64> {
    let (_, rest) = stat.rsplit_once(')')?;
    // `rest` starts at field 3 (state): field 22 is the 20th from there.
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// The oldest kubelet (the one that has been serving the node, not a restart's overlap or
/// a stray copy), and how many there were.
#[must_use]
pub(super) fn oldest(mut all: Vec<Kubelet>) -> Option<(Kubelet, usize)> {
    let n = all.len();
    all.sort_by_key(|k| (k.start, k.pid));
    all.into_iter().next().map(|k| (k, n))
}

/// Where to read the kubeconfig kubelet `pid` was given: the path as kubelet sees it (a
/// relative one against its working directory) when that exists here too, else the same
/// path inside kubelet's own root (kubelet in a container, lifeline on the host or the
/// other way round).
#[must_use]
pub(super) fn read_path(pid: u32, arg: &Path, exists: impl Fn(&Path) -> bool) -> PathBuf {
    let proc = PathBuf::from(format!("/proc/{pid}"));
    if arg.is_relative() {
        // The cwd link resolves inside kubelet's mount namespace and root.
        return proc.join("cwd").join(arg);
    }
    if exists(arg) {
        return arg.to_owned();
    }
    let inside = proc.join("root").join(arg.strip_prefix("/").unwrap_or(arg));
    if exists(&inside) {
        inside
    } else {
        arg.to_owned()
    }
}

#[cfg(test)]
#[path = "kubelet_tests.rs"]
mod tests;
