//! Escalation and kill budgets scoped to what they protect, under a real systemd manager
//! whose `kubelet.service` is the lab's client: a noisy process outside the unit's cgroup
//! neither restarts the unit nor spends the unit's kill budget.

use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use lifeline_tests::assertions::watched::wait_watched;
use lifeline_tests::fixtures::client::{Client, start_server};
use lifeline_tests::fixtures::kubelet_unit::{self, UNIT, identity, wait_connection};
use lifeline_tests::fixtures::unit_agent::{decisions, field, start as agent};
use lifeline_tests::infra::cgroup::Cgroup;
use lifeline_tests::infra::paths::fixture;
use lifeline_tests::infra::proc::Proc;
use lifeline_tests::infra::systemd::UserManager;
use lifeline_tests::infra::util::TempDir;
use lifeline_tests::{Agent, Decision, Lab, require_root, wait_until};

const NOISY: &str = "noisy-client";

/// A `lab-client` copy named `noisy-client`, in a cgroup of its own (outside the unit's),
/// sending a heartbeat every second and never re-dialling.
fn noisy_client(lab: &Lab, dir: &TempDir, cg: &Cgroup) -> Result<Client> {
    let bin = dir.path().join(NOISY);
    if !bin.exists() {
        std::fs::copy(fixture("lab-client")?, &bin).context("copy lab-client")?;
    }
    let peer = Lab::server_addr(false).to_string();
    let args = [
        "--peer",
        &peer,
        "--lifetime",
        "2m",
        "heartbeat",
        "--interval",
        "1s",
    ];
    let cmd: Command = cg.command_in_netns(lab.client.name(), bin.to_str().context("path")?, &args);
    let mut c = Client {
        proc: Proc::spawn(NOISY, cmd)?,
    };
    c.proc.wait_stdout(
        "the noisy client to connect",
        Duration::from_secs(15),
        |l| l.contains("\"connected\""),
    )?;
    Ok(c)
}

/// `--comm noisy-client --max-kills-per-minute 2 --escalate-after 3s`: three noisy sockets
/// black-holed at once spend their own budget (two kills, one `rate-limited`), and none of
/// their kills is watched for a recovery or restarts the unit (they never re-dial); the
/// unit's socket, black-holed next, is killed at once from the unit's own budget, and its
/// re-dial means no restart either.
#[test]
fn a_noisy_client_neither_restarts_the_unit_nor_spends_its_budget() -> Result<()> {
    require_root();
    let lab = Lab::new()?;
    let _server = start_server(&lab, &[])?;
    let m = UserManager::start()?;
    kubelet_unit::start(&m, &lab, true)?;
    let before = identity(&m)?;
    let unit_port = wait_connection(&m, 1)?;
    let args = [
        "--comm",
        NOISY,
        "--max-kills-per-minute",
        "2",
        "--escalate-after",
        "3s",
    ];
    let a = agent(&lab, &m, &args)?;
    let dir = TempDir::new()?;
    let cg = Cgroup::new()?;
    let noisy = (0..3)
        .map(|_| noisy_client(&lab, &dir, &cg))
        .collect::<Result<Vec<_>>>()?;
    let ports = noisy
        .iter()
        .map(|c| c.local_port().context("a noisy client's port"))
        .collect::<Result<Vec<_>>>()?;
    // The unit's connection predates the agent (adopted), in the unit's target cgroup.
    let unit_sock = wait_watched(&a, unit_port, Duration::from_secs(15))?;
    let main_pid = kubelet_unit::main_pid(&m)?;
    ensure!(unit_sock.owner_pid == Some(main_pid), "{}", unit_sock.raw);
    for p in &ports {
        let s = wait_watched(&a, *p, Duration::from_secs(15))?;
        let by_comm = s.watched_by.iter().any(|w| w.contains("comm"));
        ensure!(by_comm, "not watched by its comm: {}", s.raw);
    }

    let _noisy_faults = ports
        .iter()
        .map(|p| lab.blackhole_flow(*p))
        .collect::<Result<Vec<_>>>()?;
    let first_noisy_kill = noisy_spend_their_own_budget(&a, &ports)?;

    // The unit's socket: killed at once, from its own budget, while the noisy one is spent.
    let _unit_fault = lab.blackhole_flow(unit_port)?;
    let unit_kill = wait_until(
        "the unit socket's kill decision",
        Duration::from_secs(30),
        Duration::from_millis(100),
        || {
            let restarted = a.decisions().into_iter().find(|d| d.action == "restart");
            ensure!(restarted.is_none(), "the unit was restarted: {restarted:?}");
            Ok(decisions(&a, "kill", unit_port).into_iter().next())
        },
    )?;
    ensure!(unit_kill.outcome == "killed", "{}", unit_kill.raw);
    let unit_budget = format!("cgroup {}", unit_key(&m)?);
    ensure!(
        field(&unit_kill, "budget") == unit_budget,
        "{}",
        unit_kill.raw
    );
    let gap = unit_kill
        .logged_ms
        .map(|u| u.saturating_sub(first_noisy_kill));
    ensure!(
        gap.is_some_and(|ms| ms < 60_000),
        "the unit's kill came {gap:?} ms after the noisy kills: not inside their budget's minute"
    );

    // The unit re-dials: no restart; the noisy kills (no re-dial) never escalate either.
    wait_connection(&m, 2)?;
    std::thread::sleep(Duration::from_secs(7)); // twice --escalate-after, and more
    let restarts: Vec<_> = a
        .decisions()
        .into_iter()
        .filter(|d| d.action == "restart")
        .collect();
    ensure!(restarts.is_empty(), "restart decisions: {restarts:?}");
    ensure!(identity(&m)? == before, "the unit was restarted");
    scope_was_said(&a, &m)
}

/// The first decision about each noisy socket: two kills and one `rate-limited`, all from
/// the noisy client's own budget. Returns when the first kill was logged.
fn noisy_spend_their_own_budget(a: &Agent, ports: &[u16]) -> Result<u64> {
    let firsts = wait_until(
        "two noisy kills and one rate-limited",
        Duration::from_secs(30),
        Duration::from_millis(100),
        || {
            let firsts: Vec<Decision> = ports
                .iter()
                .filter_map(|p| decisions(a, "kill", *p).into_iter().next())
                .collect();
            Ok((firsts.len() == ports.len()).then_some(firsts))
        },
    )?;
    let killed = firsts.iter().filter(|d| d.outcome == "killed").count();
    let limited: Vec<_> = firsts
        .iter()
        .filter(|d| d.outcome == "rate-limited")
        .collect();
    ensure!(
        killed == 2 && limited.len() == 1,
        "noisy decisions: {firsts:?}"
    );
    for d in &firsts {
        ensure!(
            field(d, "budget") == format!("comm {NOISY}"),
            "budget: {}",
            d.raw
        );
    }
    let spent = format!("the kill budget of comm {NOISY} is spent");
    ensure!(
        limited[0].message.contains(&spent),
        "{}",
        limited[0].message
    );
    firsts
        .iter()
        .filter_map(|d| d.logged_ms)
        .min()
        .context("no log time on the noisy decisions")
}

/// What the log says of the scope: the unit's cgroup as systemd reported it, once that the
/// noisy client's sockets are outside it, and the unit's recovery after its kill.
fn scope_was_said(a: &Agent, m: &UserManager) -> Result<()> {
    let info = a.messages("INFO");
    let outside = format!("sockets of comm {NOISY} are not in {UNIT}'s cgroup");
    let said = info.iter().filter(|msg| msg.contains(&outside)).count();
    ensure!(
        said == 1,
        "said {said} times that the noisy sockets are not the unit's"
    );
    let scope = format!(
        "only by sockets created in its cgroup {} (systemd's ControlGroup)",
        kubelet_unit::cgroup_dir(m).display()
    );
    ensure!(
        info.iter().any(|msg| msg.contains(&scope)),
        "the unit's cgroup was not learnt from systemd: {info:?}"
    );
    let recovered = info.iter().any(|msg| msg.contains("no restart needed"));
    ensure!(recovered, "the unit's recovery was not logged");
    Ok(())
}

/// The unit's cgroup path from the hierarchy's root, as the budget names it.
fn unit_key(m: &UserManager) -> Result<String> {
    let dir = kubelet_unit::cgroup_dir(m);
    let mount = lifeline_tests::cgroup2_mount()?;
    let rel = dir
        .strip_prefix(&mount)
        .context("the unit's cgroup under the mount")?;
    Ok(format!("/{}", rel.display()))
}
