//! The endpoint lab itself, without the agent: dnsmasq answers what the test sets (A and
//! AAAA, TTL 5 s, over IPv4 and IPv6), goes silent when stopped, rotates subsets; the
//! kubelet-like client follows the name when its connection dies.

use std::net::IpAddr;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use lifeline_tests::fixtures::kube::outage;
use lifeline_tests::infra::api_addrs::{API_NAME, DNS_V4, DNS_V6};
use lifeline_tests::infra::dnsquery::lookup;
use lifeline_tests::{ApiLab, api, mono_ms, require_root};

#[test]
fn dnsmasq_serves_sets_over_both_families_and_stops() -> Result<()> {
    require_root();
    let mut l = ApiLab::new(&[api(1, false), api(1, true)])?;
    let client_ns = l.lab.client.name().to_owned();
    for server in [IpAddr::V4(DNS_V4), IpAddr::V6(DNS_V6)] {
        let a = lookup(&client_ns, server, API_NAME)?;
        ensure!(
            a.addrs == [api(1, false), api(1, true)],
            "via {server}: {a:?}"
        );
        ensure!(a.ttls == [5, 5], "TTL is not 5 s via {server}: {a:?}");
    }
    l.dns.set(&[api(3, false), api(2, false)])?;
    let a = lookup(&client_ns, DNS_V4.into(), API_NAME)?;
    ensure!(a.addrs == [api(2, false), api(3, false)], "{a:?}");
    l.dns.stop();
    ensure!(
        lookup(&client_ns, DNS_V4.into(), API_NAME).is_err(),
        "a stopped dnsmasq still answers"
    );
    l.dns.start()?;
    let a = lookup(&client_ns, DNS_V4.into(), API_NAME)?;
    ensure!(
        a.addrs == [api(2, false), api(3, false)],
        "after restart: {a:?}"
    );
    Ok(())
}

#[test]
fn rotation_serves_every_subset_and_stops() -> Result<()> {
    require_root();
    let l = ApiLab::new(&[api(1, false)])?;
    let sets = vec![vec![api(1, false), api(2, false)], vec![api(3, false)]];
    // api1 is absent for one step of 1 s: a 500 ms bound must be refused.
    let bad = l.dns.rotate(
        sets.clone(),
        Duration::from_secs(1),
        Duration::from_secs(5),
        Duration::from_millis(500),
    );
    ensure!(bad.is_err(), "an absence over the bound was accepted");
    let rot = l.dns.rotate(
        sets.clone(),
        Duration::from_secs(1),
        Duration::from_secs(5),
        Duration::from_secs(1),
    )?;
    let mut seen = std::collections::BTreeSet::new();
    let start = mono_ms();
    while mono_ms() - start < 4000 {
        seen.insert(l.dns.query()?.addrs);
        std::thread::sleep(Duration::from_millis(200));
    }
    let applied = rot.finish();
    ensure!(
        applied.len() >= 4,
        "only {} steps in 4 s: {applied:?}",
        applied.len()
    );
    for set in &sets {
        let mut want = set.clone();
        want.sort_unstable();
        ensure!(
            seen.contains(&want),
            "never answered {want:?}; saw {seen:?}"
        );
    }
    // Stopped: the answer stays what the last step wrote.
    let last = l.dns.query()?.addrs;
    std::thread::sleep(Duration::from_millis(1500));
    ensure!(
        l.dns.query()?.addrs == last,
        "the rotation went on after finish()"
    );
    Ok(())
}

/// A killed connection: the client reports ECONNABORTED, resolves again (now api2), and its
/// heartbeats and watch resume there. The outage is measured from the client's own events.
#[test]
fn kube_client_follows_the_name_after_a_kill() -> Result<()> {
    require_root();
    let l = ApiLab::new(&[api(1, false)])?;
    let c = l.kube_client(&["--watch-every", "1"])?;
    let first = c.current().context("no connection")?;
    ensure!(first.peer.ip() == api(1, false), "{first:?}");
    c.wait_event("heartbeats", Duration::from_secs(10), |e| {
        e.event == "ok" && e.raw["seq"] == 2
    })?;
    c.wait_event("a watch event", Duration::from_secs(10), |e| {
        e.event == "watch-event"
    })?;
    l.dns.set(&[api(2, false)])?;
    let fault = l.lab.blackhole(api(1, false))?;
    let fault_ms = mono_ms();
    std::thread::sleep(Duration::from_secs(2));
    let port = first.local_port.to_string();
    l.lab.client.exec(
        "ss",
        &["-K", "-t", "src", "198.51.100.1", "sport", "=", &port],
    )?;
    let err = c.wait_event("the error", Duration::from_secs(5), |e| e.event == "error")?;
    ensure!(err.errno == Some(103), "not ECONNABORTED: {}", err.raw);
    c.wait_event("the re-dial", Duration::from_secs(15), |e| {
        e.event == "redialed"
    })?;
    let now = c.current().context("no connection")?;
    ensure!(
        now.peer.ip() == api(2, false),
        "re-dialed to {now:?}\n{}",
        c.dump()
    );
    c.wait_event("a heartbeat on api2", Duration::from_secs(5), |e| {
        e.event == "ok" && e.local_port == Some(now.local_port)
    })?;
    c.wait_event("a watch event on api2", Duration::from_secs(5), |e| {
        e.event == "watch-event" && e.local_port == Some(now.local_port)
    })?;
    let o = outage(&c.events(), "ok", fault_ms);
    let ms = o.ms().context("no outage end")?;
    eprintln!("outage {ms} ms: {o:?}");
    ensure!(
        (2000..8000).contains(&ms),
        "outage {ms} ms, want 2-8 s (the kill came at 2 s)"
    );
    let (_, dropped) = l.lab.counters(&fault)?;
    ensure!(dropped > 0, "the black hole dropped nothing");
    Ok(())
}
