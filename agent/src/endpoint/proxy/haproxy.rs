//! haproxy's servers for one bound port, from its `-f` files as kubeadm's HA guide and
//! kubespray write them: a `frontend` (or `listen`) with `bind *:6443` and
//! `default_backend`/`use_backend`, and the `backend`'s `server NAME ADDR:PORT ...` lines
//! (a `listen` section may hold its servers itself).

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
};

use super::files::{Files, ReadError, Root, split_host_port};

/// At most this many keywords kept in one read (sections, binds, backends, servers): a
/// kubeadm guide's file has a dozen, kubespray's forty.
pub(super) const MAX_KEYWORDS: usize = 10_000;

#[derive(Default, Debug)]
struct HaproxySection {
    kind: String,
    name: String,
    binds: Vec<String>,
    backends: Vec<String>,
    servers: Vec<(String, u16)>,
}

/// The sections of a configuration's text (from `file`) added to `out`; keywords outside
/// them are ignored. `kept`: keywords kept so far in this read.
fn sections(
    text: &str,
    file: &Path,
    out: &mut Vec<HaproxySection>,
    kept: &mut usize,
) -> Result<(), ReadError> {
    const KINDS: [&str; 10] = [
        "global",
        "defaults",
        "frontend",
        "backend",
        "listen",
        "resolvers",
        "peers",
        "userlist",
        "program",
        "cache",
    ];
    let first = out.len();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or_default();
        let mut words = line.split_whitespace();
        let Some(key) = words.next() else {
            continue;
        };
        // Only the first words of a line are looked at: a line of a million words costs
        // no more than one of three.
        let rest: Vec<&str> = words.take(2).collect();
        let keeps = KINDS.contains(&key)
            || matches!(key, "bind" | "default_backend" | "use_backend" | "server");
        if keeps {
            *kept += 1;
            if *kept > MAX_KEYWORDS {
                return Err(ReadError::Parse {
                    path: file.to_owned(),
                    why: format!("more than {MAX_KEYWORDS} sections and servers: not read further"),
                });
            }
        }
        if KINDS.contains(&key) {
            out.push(HaproxySection {
                kind: key.to_owned(),
                name: rest.first().copied().unwrap_or_default().to_owned(),
                ..HaproxySection::default()
            });
            continue;
        }
        let Some(s) = out[first..].last_mut() else {
            continue;
        };
        match key {
            // `bind ADDR:PORT[,ADDR:PORT] [options]`
            "bind" => s.binds.extend(
                rest.first()
                    .map(|a| a.split(',').map(str::to_owned).collect::<Vec<_>>())
                    .unwrap_or_default(),
            ),
            "default_backend" | "use_backend" => {
                s.backends.extend(rest.first().map(|b| (*b).to_owned()));
            }
            // `server NAME ADDR:PORT [options]`
            "server" => s
                .servers
                .extend(rest.get(1).and_then(|a| split_host_port(a))),
            _ => {}
        }
    }
    Ok(())
}

fn binds_port(bind: &str, port: u16) -> bool {
    bind.rsplit_once(':')
        .is_some_and(|(_, p)| p.parse() == Ok(port))
}

/// The servers behind every frontend or listen section bound on `port`, from the files
/// `configs` (paths inside the process's root `root`; a directory's `*.cfg` files in order,
/// as haproxy reads a `-f DIR`).
///
/// # Errors
/// When a file cannot be read or a bound is passed.
pub(super) fn upstreams(
    root: &Root,
    configs: &[PathBuf],
    port: u16,
) -> Result<super::nginx::Found, ReadError> {
    let mut files = Files::new(root, Path::new("/"));
    let (mut all, mut kept) = (Vec::new(), 0);
    for c in configs {
        if files.is_dir(c) {
            let pattern = c.join("*.cfg");
            for (path, text) in files.glob(&pattern.to_string_lossy())? {
                sections(&text, &path, &mut all, &mut kept)?;
            }
        } else {
            let text = files.read(c)?;
            sections(&text, c, &mut all, &mut kept)?;
        }
    }
    Ok((from_sections(&all, port), files.read_list()))
}

/// The servers of `text` (one file) for `port`.
///
/// # Errors
/// When a bound is passed.
#[cfg(test)]
pub(super) fn of_text(text: &str, port: u16) -> Result<Vec<(String, u16)>, ReadError> {
    let (mut all, mut kept) = (Vec::new(), 0);
    sections(
        text,
        Path::new("/etc/haproxy/haproxy.cfg"),
        &mut all,
        &mut kept,
    )?;
    Ok(from_sections(&all, port))
}

fn from_sections(all: &[HaproxySection], port: u16) -> Vec<(String, u16)> {
    let backends: HashMap<&str, &HaproxySection> = all
        .iter()
        .filter(|s| s.kind == "backend" || s.kind == "listen")
        .map(|s| (s.name.as_str(), s))
        .collect();
    let mut out = Vec::new();
    for s in all
        .iter()
        .filter(|s| s.kind == "frontend" || s.kind == "listen")
        .filter(|s| s.binds.iter().any(|b| binds_port(b, port)))
    {
        out.extend(s.servers.iter().cloned());
        for b in &s.backends {
            if let Some(b) = backends.get(b.as_str()) {
                out.extend(b.servers.iter().cloned());
            }
        }
    }
    out.dedup();
    out
}

#[cfg(test)]
#[path = "haproxy_tests.rs"]
mod tests;
