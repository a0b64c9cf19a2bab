//! Scenario (f): with no `--endpoint` or `--kubeconfig`, the agent follows the
//! `server:` of the kubeconfig the running kubelet was given, and says which file that is
//! (log, `lifeline status`, `lifeline check`). Kubelets in other network namespaces are not
//! this node's; with several, the oldest wins. A broken kubeconfig found this way is one
//! warning, not a crash: the agent runs without an endpoint. Only a root process in
//! kubelet's cgroup counts: anything else named kubelet is ignored and logged once. A
//! kubelet restarted with another kubeconfig moves the endpoint.

use std::time::Duration;

use anyhow::{Context, Result};
use lifeline_tests::fixtures::fake_kubelet::kubeconfig;
use lifeline_tests::{
    Agent, Cgroup, FakeKubelet, Lab, SERVER_PORT, SERVER_V4, Status, require_root,
};

const READY: Duration = Duration::from_mins(1);

fn endpoints(st: &Status) -> Vec<&str> {
    st.endpoints.iter().map(|e| e.endpoint.as_str()).collect()
}

#[test]
fn follows_the_running_kubelets_kubeconfig_and_names_it() -> Result<()> {
    require_root();
    let lab = Lab::new()?;
    let cgroup = Cgroup::new()?;
    let server = format!("{SERVER_V4}:{SERVER_PORT}");
    let kubelet = FakeKubelet::start(
        &lab.client,
        &cgroup,
        &kubeconfig(&format!("https://{server}")),
    )?;
    let mut agent = Agent::start(&lab, &cgroup)?;
    agent.wait_ready(READY)?;

    let st = agent.swept_status()?;
    let named = kubelet.source();
    eprintln!("status: {:?} from {:?}", st.endpoints, st.endpoint_source);
    assert_eq!(endpoints(&st), [server.as_str()]);
    assert_eq!(st.endpoint_source.as_deref(), Some(named.as_str()));
    let table = agent.status_table()?;
    assert!(
        table.contains(&format!("endpoints from: {named}\n")),
        "{table}"
    );
    let infos = agent.messages("INFO");
    assert!(
        infos.contains(&format!("API endpoint {server} from {named}")),
        "no info line naming the file: {infos:#?}"
    );

    // `lifeline check` names the same file in its endpoint row.
    let bin = lifeline_tests::infra::paths::lifeline()?;
    let cg = cgroup.path().to_str().context("utf-8")?;
    let mut cmd = lab
        .client
        .command(bin.to_str().context("utf-8")?, &["check", "--cgroup", cg]);
    let out = lifeline_tests::infra::cmd::output(&mut cmd)?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let row = stdout
        .lines()
        .find(|l| l.starts_with("endpoint "))
        .context("no endpoint row")?;
    eprintln!("check: {row}");
    assert!(row.contains(" pass ") && row.ends_with(&named), "{stdout}");
    Ok(())
}

#[test]
fn only_this_netns_counts_and_the_oldest_kubelet_wins() -> Result<()> {
    require_root();
    let lab = Lab::new()?;
    let cgroup = Cgroup::new()?;
    // Oldest of all, but in another network namespace: some other node's kubelet.
    let _elsewhere = FakeKubelet::start(
        &lab.server,
        &cgroup,
        &kubeconfig("https://203.0.113.9:6443"),
    )?;
    std::thread::sleep(Duration::from_millis(50)); // start times count in 10 ms ticks
    let oldest = FakeKubelet::start(
        &lab.client,
        &cgroup,
        &kubeconfig("https://198.51.100.2:6443"),
    )?;
    std::thread::sleep(Duration::from_millis(50));
    let _newer = FakeKubelet::start(
        &lab.client,
        &cgroup,
        &kubeconfig("https://203.0.113.7:6443"),
    )?;
    let mut agent = Agent::start(&lab, &cgroup)?;
    agent.wait_ready(READY)?;

    let st = agent.swept_status()?;
    eprintln!("status: {:?} from {:?}", st.endpoints, st.endpoint_source);
    assert_eq!(endpoints(&st), ["198.51.100.2:6443"]);
    assert_eq!(
        st.endpoint_source,
        Some(format!(
            "{} (the oldest of 2 kubelet processes)",
            oldest.source()
        ))
    );
    Ok(())
}

#[test]
fn a_broken_discovered_kubeconfig_is_one_warning_and_no_endpoint() -> Result<()> {
    require_root();
    let lab = Lab::new()?;
    let cgroup = Cgroup::new()?;
    let kubelet = FakeKubelet::start(
        &lab.client,
        &cgroup,
        "apiVersion: v1\nkind: Config\nclusters: []\n",
    )?;
    let mut agent = Agent::start(&lab, &cgroup)?;
    agent.wait_ready(READY)?;

    let file = kubelet.kubeconfig.display().to_string();
    let warnings: Vec<String> = agent
        .messages("WARN")
        .into_iter()
        .filter(|m| m.contains(&file))
        .collect();
    eprintln!("warnings: {warnings:#?}");
    assert_eq!(warnings.len(), 1, "want one warning naming {file}");
    assert!(
        warnings[0].starts_with(&format!("kubeconfig {file} has no cluster `server:` URL")),
        "{}",
        warnings[0]
    );
    let st = agent.swept_status()?;
    assert!(st.endpoints.is_empty(), "{:?}", st.endpoints);
    assert_eq!(st.endpoint_source, None);
    assert!(agent.proc.try_status().is_none(), "the agent keeps running");
    Ok(())
}
