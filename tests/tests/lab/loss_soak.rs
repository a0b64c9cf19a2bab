//! A short loss soak: 50 idle connections of Go-like clients (keepalive 30,30,9 set after
//! connect, held at lifeline's 1s,1s,20) over a path that drops 10 % of the packets each way
//! for 3 minutes. At 10 % a keepalive round trip fails 19 % of the time, so probes go
//! unanswered all the time; the silent rule (12 in a row, a probe a second) and the kernel's
//! own abort (20) make a false kill of any of these sockets in 3 minutes about 2e-5 likely
//! (docs/ARCHITECTURE.md, "Idle connections"). Nothing may be killed, no client may see an
//! error, every socket must still be there, and the loss must have been real.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use lifeline_tests::scenarios::idle_lab::{agent_with, go_like_client, wait_armed};
use lifeline_tests::scenarios::scenario::Setup;
use lifeline_tests::{Lab, assertions::ss, mono_ms, require_root};

const CLIENTS: usize = 50;
const LOSS_PERCENT: u8 = 10;

#[test]
fn idle_go_clients_survive_three_minutes_of_ten_percent_loss() -> Result<()> {
    require_root();
    let s = Setup::new()?;
    let agent = agent_with(&s, &[])?;
    let clients = (0..CLIENTS)
        .map(|_| go_like_client(&s, "30,30,9", &["idle"]))
        .collect::<Result<Vec<_>>>()?;
    let ports = clients
        .iter()
        .map(|c| c.local_port().context("no local port"))
        .collect::<Result<Vec<_>>>()?;
    for p in &ports {
        wait_armed(&agent, *p, "1s,1s,20")?;
    }
    let loss = s.lab.loss(LOSS_PERCENT)?;
    let (start, window) = (mono_ms(), Duration::from_mins(3));
    std::thread::sleep(window);
    let (seen, dropped) = s.lab.counters(&loss)?;
    s.lab.heal(&loss)?;
    eprintln!(
        "{} s at {LOSS_PERCENT} % loss: {dropped} of {seen} packets dropped",
        (mono_ms() - start) / 1000
    );
    ensure!(
        agent.decisions().is_empty(),
        "a live connection was judged dead: {:?}",
        agent.decisions()
    );
    for c in &clients {
        ensure!(c.errors().is_empty(), "client died: {}", c.dump());
    }
    let established = ss::established(&s.lab.client)?;
    let server = Lab::server_addr(false);
    for p in &ports {
        ensure!(
            established
                .iter()
                .any(|r| r.local.port() == *p && r.peer == server),
            "socket {p} is gone:\n{}",
            ss::dump(&s.lab.client)
        );
    }
    // The loss was real: at 10 % of two packets per probe round trip every 1 s for 50
    // sockets, thousands of packets crossed and hundreds were dropped.
    ensure!(
        dropped >= 100 && dropped * 100 <= seen * 20,
        "loss not as configured: {dropped} of {seen} dropped"
    );
    Ok(())
}
