//! A known proxy's upstream list from its configuration: which files (its command line's
//! `-c`/`-f`/`--data-dir`, else the package's default) and which parser.

use std::path::PathBuf;

use super::{
    files::{ReadError, Root},
    haproxy, k3s, listener, nginx,
};

/// The upstreams for one port, and the files they were read from.
pub(super) type Upstreams = nginx::Found;

/// The kinds of proxy lifeline reads the configuration of, from the process's `comm`.
#[must_use]
pub(super) fn kind(comm: &str) -> Option<&'static str> {
    match comm {
        "nginx" => Some("nginx"),
        "haproxy" => Some("haproxy"),
        c => k3s::program(c),
    }
}

/// The upstreams process `pid` of kind `kind` (`kind()`) lists for `port`, its files read
/// inside its root (`files::Root`). `None` for a proxy of no known kind.
#[must_use]
pub(super) fn read(pid: u32, kind: &str, port: u16) -> Option<Result<Upstreams, ReadError>> {
    let args = listener::cmdline(pid);
    let root = match Root::of(pid) {
        Ok(r) => r,
        Err(e) => {
            return Some(Err(ReadError::Open {
                path: PathBuf::from("/"),
                error: e.to_string(),
            }));
        }
    };
    let flag = |f: &str| -> Vec<PathBuf> {
        args.windows(2)
            .filter(|w| w[0] == f)
            .map(|w| PathBuf::from(&w[1]))
            .collect()
    };
    Some(match kind {
        "nginx" => {
            let main = flag("-c")
                .pop()
                .unwrap_or_else(|| PathBuf::from("/etc/nginx/nginx.conf"));
            nginx::upstreams(&root, &main, port)
        }
        "haproxy" => {
            let mut cfgs = flag("-f");
            if cfgs.is_empty() {
                cfgs.push(PathBuf::from("/etc/haproxy/haproxy.cfg"));
            }
            haproxy::upstreams(&root, &cfgs, port)
        }
        program @ ("k3s" | "rke2") => {
            let dir = k3s::data_dir(program, &args);
            k3s::upstreams(&root, program, &dir)
        }
        _ => return None,
    })
}
