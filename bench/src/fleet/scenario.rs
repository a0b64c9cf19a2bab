//! The four fleet scenarios, as timed steps on the fleet's wire and DNS. Time 0 is the
//! scenario's first step; every step is a fault the balancer or control plane really makes.

use std::net::{IpAddr, SocketAddrV4};

use anyhow::Result;
use lifeline_tests::infra::nft::Fault;
use lifeline_tests::{api, mono_ms};

use super::topo::{Fleet, all_apis};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Scenario {
    /// a: api1 leaves DNS, then black-holes 60 s later.
    Scaling,
    /// b: api1 black-holes and leaves DNS at once.
    Sudden,
    /// c: the balancer forgets every flow to api1; new connections still work.
    FlowOnly,
    /// d: every address black-holes for 60 s, then all come back.
    ControlPlaneDown,
}

/// When the second step (a's black hole, d's recovery) comes, after the first.
pub(super) const SECOND_STEP_S: u64 = 60;

impl Scenario {
    pub(super) const ALL: [Self; 4] = [
        Self::Scaling,
        Self::Sudden,
        Self::FlowOnly,
        Self::ControlPlaneDown,
    ];

    pub(super) fn label(self) -> &'static str {
        match self {
            Self::Scaling => "a. scaling event",
            Self::Sudden => "b. sudden loss",
            Self::FlowOnly => "c. flow-only",
            Self::ControlPlaneDown => "d. control plane down 60 s",
        }
    }

    pub(super) fn what(self) -> &'static str {
        match self {
            Self::Scaling => "api1 leaves DNS at 0 s and black-holes at 60 s",
            Self::Sudden => "api1 black-holes and leaves DNS at 0 s",
            Self::FlowOnly => {
                "at 0 s the balancer forgets every flow to api1 (new connections still work)"
            }
            Self::ControlPlaneDown => "all three addresses black-hole at 0 s and come back at 60 s",
        }
    }

    /// How long the scenario is watched after its first step: long enough to see a node that
    /// hangs pass the 40 s `NotReady` grace after the last fault step.
    pub(super) fn window_s(self) -> u64 {
        match self {
            Self::Scaling => 140,
            Self::Sudden | Self::FlowOnly => 95,
            Self::ControlPlaneDown => 125,
        }
    }

    /// The second step's time, if the scenario has one.
    pub(super) fn second_step_s(self) -> Option<u64> {
        matches!(self, Self::Scaling | Self::ControlPlaneDown).then_some(SECOND_STEP_S)
    }
}

/// The rules a scenario added, lifted when it ends.
#[derive(Default)]
pub(super) struct Applied {
    pub faults: Vec<Fault>,
}

/// The first step. `flows_to_api1`: the client ends of the connections api1 holds now.
pub(super) fn first_step(
    fleet: &Fleet,
    s: Scenario,
    flows_to_api1: &[SocketAddrV4],
    applied: &mut Applied,
) -> Result<u64> {
    let others: Vec<IpAddr> = vec![api(2, false), api(3, false)];
    let wire = &fleet.lab.lab;
    match s {
        Scenario::Scaling => fleet.lab.dns.set(&others)?,
        Scenario::Sudden => {
            applied.faults.push(wire.blackhole(Fleet::api1())?);
            fleet.lab.dns.set(&others)?;
        }
        Scenario::FlowOnly => {
            let api1 = lifeline_tests::infra::api_addrs::API_V4[0];
            applied
                .faults
                .push(wire.blackhole_flows(api1, flows_to_api1)?);
        }
        Scenario::ControlPlaneDown => {
            for a in all_apis() {
                applied.faults.push(wire.blackhole(a)?);
            }
        }
    }
    Ok(mono_ms())
}

/// The second step (a: the black hole; d: the control plane back).
pub(super) fn second_step(fleet: &Fleet, s: Scenario, applied: &mut Applied) -> Result<u64> {
    match s {
        Scenario::Scaling => applied.faults.push(fleet.lab.lab.blackhole(Fleet::api1())?),
        Scenario::ControlPlaneDown => heal(fleet, applied)?,
        Scenario::Sudden | Scenario::FlowOnly => {}
    }
    Ok(mono_ms())
}

/// Lifts every rule and restores the three addresses in DNS.
pub(super) fn heal(fleet: &Fleet, applied: &mut Applied) -> Result<()> {
    for f in applied.faults.drain(..) {
        fleet.lab.lab.heal(&f)?;
    }
    fleet.lab.dns.set(&all_apis())
}
