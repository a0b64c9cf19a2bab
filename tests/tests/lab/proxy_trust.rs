//! Issue 34, tests a and c: who counts as kubelet's proxy. The real proxy (Debian's haproxy
//! and nginx, in a unit's and a static pod's cgroup) is followed first; then a neighbour
//! tries to be taken for it:
//!
//! - (a) a root process in a cgroup of no node component, named nginx, listening with
//!   `SO_REUSEPORT` beside haproxy (which sets it) with a `-c` naming another address, so
//!   some of kubelet's new connections reach it: refused in one log line and in `check`,
//!   kubelet's real upstreams still followed and never killed as orphans;
//! - (c) nginx restarted (as its static pod would be) and its old pid taken at once by a
//!   uid-65534 process named nginx with its own `-c`: never read; the restarted nginx is
//!   followed.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use lifeline_tests::fixtures::fake_kubelet::kubeconfig;
use lifeline_tests::fixtures::local_listener::LocalListener;
use lifeline_tests::fixtures::proxy::{PROXY_LISTEN, ProxyKind};
use lifeline_tests::infra::api_addrs::API_V4;
use lifeline_tests::infra::paths::fixture;
use lifeline_tests::infra::util::{TempDir, wait_until};
use lifeline_tests::scenarios::proxy_lab::{ProxyLab, upstreams};
use lifeline_tests::{Agent, Cgroup, FakeKubelet, Proc, require_root};

/// The address the impostors' configurations name: api3, never one of the proxy's.
fn elsewhere() -> SocketAddr {
    SocketAddr::new(API_V4[2].into(), lifeline_tests::SERVER_PORT)
}

/// An nginx.conf passing 6443 to `elsewhere()`, readable by anyone.
fn impostor_conf(dir: &TempDir) -> Result<String> {
    use std::os::unix::fs::PermissionsExt as _;
    let conf = dir.path().join("nginx.conf");
    std::fs::write(
        &conf,
        format!(
            "stream {{ server {{ listen 127.0.0.1:6443; proxy_pass {}; }} }}\n",
            elsewhere()
        ),
    )?;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))?;
    std::fs::set_permissions(&conf, std::fs::Permissions::from_mode(0o644))?;
    Ok(conf.to_str().context("utf-8")?.to_owned())
}

/// The endpoint's addresses in status, sorted.
fn followed(agent: &Agent) -> Result<Vec<String>> {
    let mut a: Vec<String> = agent
        .status()?
        .endpoints
        .iter()
        .flat_map(|e| e.addrs.clone())
        .collect();
    a.sort();
    Ok(a)
}

fn the_upstreams() -> Vec<String> {
    let mut v: Vec<String> = upstreams().iter().map(|u| u.ip().to_string()).collect();
    v.sort();
    v
}

/// Nothing the agent logged or shows names the impostor's address.
fn never_followed_elsewhere(agent: &Agent) -> Result<()> {
    let ip = elsewhere().ip().to_string();
    ensure!(
        !followed(agent)?.contains(&ip),
        "the impostor's address is followed"
    );
    let named: Vec<String> = agent
        .messages("INFO")
        .into_iter()
        .filter(|m| m.contains(&ip))
        .collect();
    ensure!(
        named.is_empty(),
        "the impostor's upstream was read: {named:#?}"
    );
    Ok(())
}

#[test]
fn a_reuseport_neighbour_beside_the_proxy_is_refused() -> Result<()> {
    require_root();
    let mut lab = ProxyLab::new(ProxyKind::Haproxy)?;
    lab.start_agent()?;
    lab.start_client()?;
    lab.client()
        .wait_event("a first heartbeat", Duration::from_secs(15), |e| {
            e.event == "ok"
        })?;
    let agent = lab.agent.as_ref().context("agent")?;
    ensure!(
        followed(agent)? == the_upstreams(),
        "{:?}",
        followed(agent)?
    );
    let (flow_local, _) = lab.upstream_flow()?;
    // The neighbour: root, a cgroup of its own (no unit's, no static pod's), nginx by name.
    let dir = TempDir::new()?;
    let conf = impostor_conf(&dir)?;
    let cg = Cgroup::new()?;
    let impostor = LocalListener::start_reuseport(
        &lab.api.lab.client,
        &cg,
        ("nginx", PROXY_LISTEN),
        &["-c", &conf],
    )?;
    // kubelet's new connections: the kernel shares them between both listeners by a hash of
    // each connection's addresses, and each one holds its connection. With 6 dialers all of
    // them went to haproxy one run in 64 (a CI run saw it); with 16, one in 65,536.
    let kc = kubeconfig(&format!("https://{PROXY_LISTEN}"));
    let mut dialers = Vec::new();
    for _ in 0..16 {
        dialers.push(FakeKubelet::start(
            &lab.api.lab.client,
            &lab.api.cgroup,
            &kc,
        )?);
    }
    let agent = lab.agent.as_ref().context("agent")?;
    let pid = impostor.proc.pid();
    let refusal = format!(
        "refused the server of kubelet's connection to {PROXY_LISTEN} (pid {pid}, nginx, uid 0): cgroup /{} is neither a systemd unit's",
        cg.path()
            .strip_prefix(lifeline_tests::cgroup2_mount()?)?
            .display()
    );
    wait_until(
        "the neighbour's refusal",
        Duration::from_secs(20),
        Duration::from_millis(250),
        || {
            Ok(agent
                .messages("WARN")
                .iter()
                .any(|m| m.contains(&refusal))
                .then_some(()))
        },
    )
    .with_context(|| format!("{:#?}", agent.messages("WARN")))?;
    // Watched through it all: the proxy's upstreams, its flow never an orphan.
    std::thread::sleep(super_look());
    ensure!(
        followed(agent)? == the_upstreams(),
        "{:?}",
        followed(agent)?
    );
    never_followed_elsewhere(agent)?;
    let refusals = agent
        .messages("WARN")
        .into_iter()
        .filter(|m| m.contains(&refusal))
        .count();
    ensure!(refusals == 1, "{refusals} lines for one refusal");
    let kills = agent.decisions();
    ensure!(kills.is_empty(), "decided: {kills:?}");
    let flows = lab.proxy.upstream_flows(&lab.api.lab.client)?;
    ensure!(
        flows.iter().any(|f| f.local == SocketAddr::V4(flow_local)),
        "the client's upstream flow from {flow_local} is gone: {flows:?}"
    );
    // `lifeline check` says so too, as a warning.
    let bin = lifeline_tests::infra::paths::lifeline()?;
    let cgp = lab.api.cgroup.path().to_str().context("utf-8")?;
    let out = lifeline_tests::infra::cmd::output(
        &mut lab
            .api
            .lab
            .client
            .command(bin.to_str().context("utf-8")?, &["check", "--cgroup", cgp]),
    )?;
    let table = String::from_utf8_lossy(&out.stdout);
    let row = table
        .lines()
        .find(|l| l.starts_with("endpoint "))
        .context("no endpoint row")?;
    eprintln!("check: {row}");
    ensure!(row.contains(" warn ") && row.contains(&refusal), "{row}");
    Ok(())
}

/// Two of the follower's looks.
fn super_look() -> Duration {
    Duration::from_secs(11)
}

#[test]
fn a_reused_pid_of_the_proxy_is_never_read() -> Result<()> {
    require_root();
    let mut lab = ProxyLab::new(ProxyKind::Nginx)?;
    lab.start_agent()?;
    let agent = lab.agent.as_ref().context("agent")?;
    ensure!(
        followed(agent)? == the_upstreams(),
        "{:?}",
        followed(agent)?
    );
    // The impostor's program: a copy of bash named nginx, waiting on a FIFO, `-c FILE` last.
    let dir = TempDir::new()?;
    let conf = impostor_conf(&dir)?;
    let bin = dir.path().join("nginx");
    std::fs::copy("/bin/bash", &bin)?;
    let fifo = dir.path().join("fifo");
    lifeline_tests::infra::cmd::run(
        std::process::Command::new("mkfifo")
            .arg("-m")
            .arg("666")
            .arg(&fifo),
    )?;
    let wait = format!("read -t 60 _ <> {}", fifo.display());
    let old = lab.proxy.stop();
    let cg = Cgroup::new()?;
    let taker = fixture("lab-pid-taker")?;
    let args = [
        old.to_string(),
        bin.display().to_string(),
        "-c".into(),
        wait,
        "nginx".into(),
        "-c".into(),
        conf,
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut impostor = Proc::spawn(
        "pid taker",
        cg.command(taker.to_str().context("utf-8")?, &args),
    )?;
    impostor.wait_stdout("the old pid taken", Duration::from_secs(5), |l| {
        l.starts_with("took ")
    })?;
    let status = std::fs::read_to_string(format!("/proc/{old}/status"))?;
    ensure!(
        status.contains("Name:\tnginx") && status.contains("Uid:\t65534"),
        "pid {old} is not the impostor: {status}"
    );
    lab.proxy.start_again(&lab.api.lab.client)?;
    let new = lab.proxy.proc.pid();
    let agent = lab.agent.as_ref().context("agent")?;
    let hop = format!("kubelet -> {PROXY_LISTEN} (nginx, pid {new}, ");
    wait_until(
        "the restarted nginx followed",
        Duration::from_secs(20),
        Duration::from_millis(250),
        || {
            let st = agent.status()?;
            Ok(st
                .endpoint_source
                .is_some_and(|s| s.contains(&hop))
                .then_some(()))
        },
    )
    .with_context(|| format!("{:#?}", agent.messages("WARN")))?;
    let lost = format!("nginx (pid {old}) is no longer kubelet's proxy: ");
    ensure!(
        agent.messages("WARN").iter().any(|m| m.starts_with(&lost)),
        "{:#?}",
        agent.messages("WARN")
    );
    ensure!(
        followed(agent)? == the_upstreams(),
        "{:?}",
        followed(agent)?
    );
    never_followed_elsewhere(agent)?;
    drop(impostor);
    Ok(())
}
