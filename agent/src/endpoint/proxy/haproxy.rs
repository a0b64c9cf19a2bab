//! haproxy's servers for one bound port, from its `-f` files as kubeadm's HA guide and
//! kubespray write them: a `frontend` (or `listen`) with `bind *:6443` and
//! `default_backend`/`use_backend`, and the `backend`'s `server NAME ADDR:PORT ...` lines
//! (a `listen` section may hold its servers itself).

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
};

use super::files::{Files, split_host_port};

#[derive(Default, Debug)]
struct Section {
    kind: String,
    name: String,
    binds: Vec<String>,
    backends: Vec<String>,
    servers: Vec<(String, u16)>,
}

/// The sections of a configuration's text; keywords outside them are ignored.
fn sections(text: &str) -> Vec<Section> {
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
    let mut out: Vec<Section> = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or_default();
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some((&key, rest)) = words.split_first() else {
            continue;
        };
        if KINDS.contains(&key) {
            out.push(Section {
                kind: key.to_owned(),
                name: rest.first().copied().unwrap_or_default().to_owned(),
                ..Section::default()
            });
            continue;
        }
        let Some(s) = out.last_mut() else { continue };
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
    out
}

fn binds_port(bind: &str, port: u16) -> bool {
    bind.rsplit_once(':')
        .is_some_and(|(_, p)| p.parse() == Ok(port))
}

/// The servers behind every frontend or listen section bound on `port`, from the files
/// `configs` (paths inside the process's root `root`; a directory's `*.cfg` files in order,
/// as haproxy reads a `-f DIR`).
#[must_use]
pub fn upstreams(
    root: &Path,
    configs: &[PathBuf],
    port: u16,
) -> (Vec<(String, u16)>, Vec<PathBuf>) {
    let mut files = Files::new(root, Path::new("/"));
    let mut all = Vec::new();
    for c in configs {
        if let Some(text) = files.read(c) {
            all.extend(sections(&text));
        } else {
            let pattern = c.join("*.cfg");
            for (_, text) in files.glob(&pattern.to_string_lossy()) {
                all.extend(sections(&text));
            }
        }
    }
    (from_sections(&all, port), files.read_list())
}

fn from_sections(all: &[Section], port: u16) -> Vec<(String, u16)> {
    let backends: HashMap<&str, &Section> = all
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
