//! The endpoint is resolved as the node's clients resolve it: the hosts file before DNS
//! (a name pinned only there, as kubeadm on-prem clusters do, is followed, and an edit of
//! the file moves the set as a DNS change does: the old connection is migrated), and a
//! short name through resolv.conf's search domains, asked of the real dnsmasq. The files
//! are the test's own, bind-mounted in the agent's private mount namespace.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use lifeline_tests::infra::api_addrs::DNS_V4;
use lifeline_tests::scenarios::endpoint_scenario::{back_on, wait_kill, watched_on};
use lifeline_tests::{Agent, AgentArgs, ApiLab, Client, TempDir, api, require_root, wait_until};

const PINNED: &str = "pinned.lab.test";

/// `--endpoint NAME:6443` and `extra`, with `(file, over)` bind-mounted for the agent.
fn args(endpoint: &str, extra: &[&str], binds: &[(&Path, &str)]) -> AgentArgs {
    let mut all = vec!["--endpoint".to_owned(), format!("{endpoint}:6443")];
    all.extend(extra.iter().map(|a| (*a).to_owned()));
    AgentArgs {
        extra: all,
        binds: binds
            .iter()
            .map(|(f, over)| (f.to_path_buf(), PathBuf::from(over)))
            .collect(),
        ..AgentArgs::default()
    }
}

/// Waits until `lifeline status` shows `want` (sorted) as the one endpoint's set.
fn wait_set(agent: &Agent, want: &[IpAddr], timeout: Duration) -> Result<()> {
    let mut want: Vec<String> = want.iter().map(ToString::to_string).collect();
    want.sort_unstable();
    wait_until(
        "the set in lifeline status",
        timeout,
        Duration::from_millis(200),
        || {
            // Before the first answer the endpoint has no refresh age, which the lab's
            // typed status does not take: not there yet.
            let Ok(st) = agent.status() else {
                return Ok(None);
            };
            let mut got = st
                .endpoints
                .first()
                .map(|e| e.addrs.clone())
                .unwrap_or_default();
            got.sort_unstable();
            Ok((got == want).then_some(()))
        },
    )
    .with_context(|| agent.proc.stderr_text())
}

/// Where the agent's latest "endpoint resolved" line says the answer came from.
fn answered_from(agent: &Agent) -> Option<String> {
    agent
        .log()
        .into_iter()
        .rev()
        .find(|(_, v)| {
            v.pointer("/fields/message").and_then(|m| m.as_str()) == Some("endpoint resolved")
        })
        .and_then(|(_, v)| Some(v.pointer("/fields/from")?.as_str()?.to_owned()))
}

/// Starts the agent with `a`, waits until its endpoint's set is `want`, and asserts which
/// source answered ("hosts file" or "DNS").
fn start_answered(l: &ApiLab, a: &AgentArgs, want: &[IpAddr], from: &str) -> Result<Agent> {
    let mut agent = Agent::start_with(&l.lab, &l.cgroup, a)?;
    agent.wait_ready(Duration::from_mins(1))?;
    wait_set(&agent, want, Duration::from_secs(20))?;
    ensure!(
        answered_from(&agent).as_deref() == Some(from),
        "{}",
        agent.proc.stderr_text()
    );
    Ok(agent)
}

fn hosts_text(v4: IpAddr, v6: IpAddr) -> String {
    format!(
        "# the test's own hosts file\n127.0.0.1 localhost\n{v4} {PINNED} k8s-api\n{v6}\tPinned.Lab.Test.  # AAAA too\n"
    )
}

/// (b) The name only in the hosts file: its set and its connection are the endpoint's; an
/// edit to another API host migrates the old connection after the grace, and the client
/// re-dials the new address.
#[test]
fn a_name_only_in_the_hosts_file_is_followed_and_an_edit_migrates() -> Result<()> {
    const GRACE_MS: u64 = 10_000;
    require_root();
    let l = ApiLab::new(&[api(1, false)])?;
    let dir = TempDir::new()?;
    let hosts = dir.path().join("hosts");
    std::fs::write(&hosts, hosts_text(api(1, false), api(1, true)))?;
    let dns = DNS_V4.to_string();
    let flags = [
        "--dns-server",
        &dns,
        "--orphan-grace",
        "10s",
        "--migrate-spread",
        "5s",
    ];
    let agent = start_answered(
        &l,
        &args(PINNED, &flags, &[(&hosts, "/etc/hosts")]),
        &[api(1, false), api(1, true)],
        "hosts file",
    )?;

    let hosts_s = hosts.to_str().context("utf-8")?;
    let cargs = [
        "--server",
        PINNED,
        "--dns-server",
        &dns,
        "--hosts-file",
        hosts_s,
    ];
    let c = Client::start_bin("kube-client", &l.lab, Some(&l.cgroup), &cargs)?;
    let old = watched_on(&agent, &c, api(1, false), "ok")?;
    let member = agent
        .status()?
        .socket_for_port(old.local_port)
        .and_then(|s| s.endpoint_member.clone());
    ensure!(
        member.as_deref() == Some("in-set"),
        "the connection is not the endpoint's: {member:?}"
    );

    // Rewritten in place (the bind mount holds the inode), as `echo > /etc/hosts` does.
    let change_ms = lifeline_tests::mono_ms();
    std::fs::write(&hosts, hosts_text(api(2, false), api(2, true)))?;
    wait_set(
        &agent,
        &[api(2, false), api(2, true)],
        Duration::from_secs(15),
    )?;
    eprintln!(
        "new set in status {} ms after the edit",
        lifeline_tests::mono_ms() - change_ms
    );
    let kill = wait_kill(&agent, old.local_port, Duration::from_secs(40))?;
    let after = kill.at_ms - change_ms;
    eprintln!("migrated {after} ms after the edit: {}", kill.raw);
    ensure!(
        kill.verdict == "orphaned" && kill.outcome == "killed",
        "{}",
        kill.raw
    );
    ensure!(kill.endpoint == format!("{PINNED}:6443"), "{}", kill.raw);
    ensure!(
        after >= GRACE_MS,
        "killed {after} ms after the edit, before the grace"
    );
    let now = back_on(&c, &old, api(2, false), "ok", Duration::from_secs(15))?;
    eprintln!("re-dialed to {:?}", now.peer);
    Ok(())
}

/// The hosts file comes before DNS (nsswitch's `files dns`): a name both know is pinned.
#[test]
fn the_hosts_file_comes_before_dns() -> Result<()> {
    require_root();
    let l = ApiLab::new(&[api(1, false)])?;
    let dir = TempDir::new()?;
    let hosts = dir.path().join("hosts");
    std::fs::write(&hosts, format!("{} api.lab.test\n", api(3, false)))?;
    let dns = DNS_V4.to_string();
    let a = args(
        "api.lab.test",
        &["--dns-server", &dns],
        &[(&hosts, "/etc/hosts")],
    );
    let _agent = start_answered(&l, &a, &[api(3, false)], "hosts file")?;
    Ok(())
}

/// A short name is looked up with resolv.conf's search domains, of the server it names.
#[test]
fn a_short_name_goes_through_the_search_domains() -> Result<()> {
    require_root();
    let l = ApiLab::new(&[api(1, false), api(1, true)])?;
    let dir = TempDir::new()?;
    let (hosts, resolv) = (dir.path().join("hosts"), dir.path().join("resolv.conf"));
    std::fs::write(&hosts, "127.0.0.1 localhost\n")?;
    std::fs::write(
        &resolv,
        format!("nameserver {DNS_V4}\nsearch lab.test\noptions ndots:1 timeout:1\n"),
    )?;
    let a = args(
        "api",
        &[],
        &[(&hosts, "/etc/hosts"), (&resolv, "/etc/resolv.conf")],
    );
    let _agent = start_answered(&l, &a, &[api(1, false), api(1, true)], "DNS")?;
    Ok(())
}
