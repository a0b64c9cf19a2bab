//! The k3s / RKE2 agent's load balancer: the agent process itself listens on loopback and
//! dials the servers listed in a JSON file under its data directory. k3s writes it in
//! `pkg/agent/loadbalancer` (`writeConfig`: the `LoadBalancer` struct marshalled, its
//! exported fields `ServerURL`, `ServerAddresses` and `Listener`) as
//! `<data-dir>/agent/etc/<program>-agent-load-balancer.json` (the supervisor's, which
//! kubelet's kubeconfig uses on k3s, where one port serves both) and, where the API server
//! has a port of its own (RKE2: 9345 and 6443), `<program>-api-server-agent-load-balancer.json`.
//! <https://github.com/k3s-io/k3s/blob/master/pkg/agent/loadbalancer/loadbalancer.go>

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::files::{Files, ReadError, Root, split_host_port};

#[derive(Deserialize)]
struct LoadBalancer {
    /// Always written (the server kubelet was first given); its absence says another file.
    #[serde(rename = "ServerURL")]
    #[allow(
        dead_code,
        reason = "required to tell k3s's file from another JSON file"
    )]
    server_url: String,
    /// A Go nil slice is marshalled as `null`.
    #[serde(rename = "ServerAddresses", default)]
    server_addresses: Option<Vec<String>>,
}

/// The server addresses of a load-balancer file's text; `None` when it is not one.
#[must_use]
pub(super) fn parse(text: &str) -> Option<Vec<(String, u16)>> {
    let lb: LoadBalancer = serde_json::from_str(text).ok()?;
    Some(
        lb.server_addresses
            .unwrap_or_default()
            .iter()
            .filter_map(|a| split_host_port(a))
            .collect(),
    )
}

/// `k3s` or `rke2` from the process's name (`k3s`, `k3s-agent`, `k3s-server`, `rke2`).
#[must_use]
pub(super) fn program(comm: &str) -> Option<&'static str> {
    ["k3s", "rke2"].into_iter().find(|p| comm.starts_with(p))
}

/// The data directory: `--data-dir`/`-d` on the command line, else the program's default.
#[must_use]
pub(super) fn data_dir(program: &str, args: &[String]) -> PathBuf {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if let Some(v) = a.strip_prefix("--data-dir=") {
            return PathBuf::from(v);
        }
        if (a == "--data-dir" || a == "-d")
            && let Some(v) = it.next()
        {
            return PathBuf::from(v);
        }
    }
    PathBuf::from(format!("/var/lib/rancher/{program}"))
}

/// The load-balancer file to read, and its server addresses: the API server's own when
/// there is one, else the supervisor's. Each is read inside the agent's root with the
/// files' bounds (a 100 GB sparse file is refused by its size before a byte is read);
/// `serde_json` nests at most 128 levels.
///
/// # Errors
/// When neither file can be read, or one exists and is no load-balancer file.
pub(super) fn upstreams(
    root: &Root,
    program: &str,
    data_dir: &Path,
) -> Result<super::nginx::Found, ReadError> {
    let etc = data_dir.join("agent/etc");
    let mut first = None;
    for name in [
        format!("{program}-api-server-agent-load-balancer.json"),
        format!("{program}-agent-load-balancer.json"),
    ] {
        let file = etc.join(name);
        let mut files = Files::new(root, Path::new("/"));
        match files.read(&file) {
            Ok(text) => {
                return parse(&text)
                    .map(|list| (list, vec![file.clone()]))
                    .ok_or_else(|| ReadError::Parse {
                        path: file,
                        why: "not a load-balancer file (JSON with ServerURL and ServerAddresses)"
                            .into(),
                    });
            }
            // No API-server file: the supervisor's is the one then.
            Err(e @ ReadError::Missing { .. }) => {
                first.get_or_insert(e);
            }
            Err(e) => return Err(e),
        }
    }
    Err(first.unwrap_or(ReadError::TooManyFiles))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As k3s's `json.MarshalIndent(lb, "", "  ")` writes it (`Listener` is an interface:
    /// null before the proxy starts listening, `{}` after).
    const FILE: &str = r#"{
  "ServerURL": "https://198.51.100.2:6443",
  "ServerAddresses": [
    "198.51.100.2:6443",
    "198.51.100.3:6443",
    "[2001:db8::4]:6443"
  ],
  "Listener": {}
}"#;

    #[test]
    fn server_addresses_of_the_file() {
        assert_eq!(
            parse(FILE).unwrap(),
            [
                ("198.51.100.2".to_owned(), 6443),
                ("198.51.100.3".to_owned(), 6443),
                ("2001:db8::4".to_owned(), 6443)
            ]
        );
        assert_eq!(
            parse(r#"{"ServerURL":"https://a:6443","ServerAddresses":null,"Listener":null}"#)
                .unwrap(),
            []
        );
        assert_eq!(parse("[]"), None);
        assert_eq!(parse(r#"{"ServerAddresses":["198.51.100.2:6443"]}"#), None);
        assert_eq!(parse("not json"), None);
        assert_eq!(parse(r#"{"ServerURL":"https://a:6443"}"#).unwrap(), []);
    }

    #[test]
    fn program_and_data_dir() {
        assert_eq!(program("k3s-agent"), Some("k3s"));
        assert_eq!(program("rke2"), Some("rke2"));
        assert_eq!(program("nginx"), None);
        let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            data_dir("k3s", &args(&["k3s", "agent"])),
            Path::new("/var/lib/rancher/k3s")
        );
        assert_eq!(
            data_dir("k3s", &args(&["k3s", "agent", "-d", "/srv/k3s"])),
            Path::new("/srv/k3s")
        );
        assert_eq!(
            data_dir("rke2", &args(&["rke2", "agent", "--data-dir=/x"])),
            Path::new("/x")
        );
    }
}
