//! A process of a chosen name that only listens on a loopback address of a lab namespace:
//! the k3s / RKE2 agent's load balancer as the agent's discovery sees it (its `comm`, its
//! `--data-dir`, its listening socket, its cgroup), or a neighbour squatting kubelet's port.
//! It is Debian's python3 run through a symlink of that name (the kernel names a process
//! after the file it exec'd), and it ends by itself after 120 s or when killed on drop.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, Result};

use crate::cgroup::Cgroup;
use crate::netns::NetNs;
use crate::proc::Proc;
use crate::util::TempDir;

const PYTHON: &str = "/usr/bin/python3";

/// Binds, listens, says `listening`, then sleeps (the arguments after the script are the
/// process's own, e.g. `agent --data-dir DIR`).
const SCRIPT: &str = r#"import os, socket, sys, time
a, p = sys.argv[1].rsplit(":", 1)
s = socket.socket(socket.AF_INET6 if ":" in a else socket.AF_INET)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
if os.environ.get("REUSEPORT"):
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
s.bind((a.strip("[]"), int(p)))
s.listen()
print("listening", flush=True)
time.sleep(120)
"#;

pub struct LocalListener {
    pub proc: Proc,
    _dir: TempDir,
}

impl LocalListener {
    /// Starts `name` listening on `listen` in `ns`, in `cgroup` (None: the test's own), as
    /// `uid` (None: root), with `args` on its command line; waits until it listens.
    ///
    /// # Errors
    /// When python3 is missing or it does not listen within 10 s.
    pub fn start(
        ns: &NetNs,
        cgroup: Option<&Cgroup>,
        uid: Option<u32>,
        (name, listen): (&str, SocketAddr),
        args: &[&str],
    ) -> Result<Self> {
        Self::start_opts(ns, (cgroup, uid), (name, listen), args, false)
    }

    /// `start` with `SO_REUSEPORT` on the listener: it binds beside another listener of
    /// the same uid with that option (haproxy sets it on its own), and the kernel shares
    /// the new connections between them.
    ///
    /// # Errors
    /// As `start`.
    pub fn start_reuseport(
        ns: &NetNs,
        cgroup: &Cgroup,
        (name, listen): (&str, SocketAddr),
        args: &[&str],
    ) -> Result<Self> {
        Self::start_opts(ns, (Some(cgroup), None), (name, listen), args, true)
    }

    fn start_opts(
        ns: &NetNs,
        (cgroup, uid): (Option<&Cgroup>, Option<u32>),
        (name, listen): (&str, SocketAddr),
        args: &[&str],
        reuseport: bool,
    ) -> Result<Self> {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = TempDir::new()?;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))?;
        let bin = dir.path().join(name);
        std::os::unix::fs::symlink(PYTHON, &bin).context("symlink python3")?;
        let bin = bin.to_str().context("utf-8 path")?.to_owned();
        let at = listen.to_string();
        let mut line: Vec<&str> = Vec::new();
        let setpriv = uid.map(|u| [format!("--reuid={u}"), format!("--regid={u}")]);
        if let Some([reuid, regid]) = &setpriv {
            line.extend([reuid.as_str(), regid.as_str(), "--clear-groups", "--", &bin]);
        }
        line.extend(["-c", SCRIPT, &at]);
        line.extend_from_slice(args);
        let program = if uid.is_some() { "setpriv" } else { &bin };
        let mut cmd = match cgroup {
            Some(cg) => cg.command_in_netns(ns.name(), program, &line),
            None => ns.command(program, &line),
        };
        if reuseport {
            cmd.env("REUSEPORT", "1");
        }
        let mut proc = Proc::spawn(name, cmd)?;
        proc.wait_stdout(
            &format!("{name} to listen on {at}"),
            Duration::from_secs(10),
            |l| l == "listening",
        )?;
        Ok(Self { proc, _dir: dir })
    }
}

/// A k3s agent's load-balancer file as k3s writes it (`pkg/agent/loadbalancer`:
/// `json.MarshalIndent` of its `LoadBalancer`, two-space indent; `Listener` is `{}` once the
/// balancer listens), for the server URL it was given and the servers it knows.
#[must_use]
pub fn k3s_load_balancer_json(server_url: &str, servers: &[SocketAddr]) -> String {
    let list: Vec<String> = servers.iter().map(|s| format!("    \"{s}\"")).collect();
    format!(
        "{{\n  \"ServerURL\": \"{server_url}\",\n  \"ServerAddresses\": [\n{}\n  ],\n  \"Listener\": {{}}\n}}",
        list.join(",\n")
    )
}

/// Writes `text` as `<data_dir>/agent/etc/<file>`, where a k3s agent keeps it.
///
/// # Errors
/// When the directories or the file cannot be made.
pub fn write_agent_etc(data_dir: &Path, file: &str, text: &str) -> Result<()> {
    let etc = data_dir.join("agent/etc");
    std::fs::create_dir_all(&etc)?;
    std::fs::write(etc.join(file), text)?;
    Ok(())
}
