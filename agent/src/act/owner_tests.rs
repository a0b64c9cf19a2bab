use lifeline_common::watch::BY_CGROUP;

use super::*;

fn rec(comm: &str, reasons: u32) -> Record {
    let mut r = Record {
        reasons,
        ..Record::default()
    };
    r.owner_comm.0[..comm.len()].copy_from_slice(comm.as_bytes());
    r
}

fn scopes(unit: Option<&[u64]>) -> Scopes {
    Scopes {
        targets: vec![
            (
                "/system.slice/kube-proxy.service".into(),
                HashSet::from([CgroupId(5)]),
            ),
            (
                "/system.slice/kubelet.service".into(),
                HashSet::from([CgroupId(7), CgroupId(8)]),
            ),
        ],
        comms: vec!["noisy".into()],
        unit: unit.map(|ids| ids.iter().copied().map(CgroupId).collect()),
        groups: Groups::at(None),
    }
}

fn seen(cgroup_id: Option<u64>) -> LastRead {
    LastRead {
        cgroup_id: cgroup_id.map(CgroupId),
        uid: Some(0),
    }
}

#[test]
fn the_most_specific_target_pays_and_only_the_units_cgroup_is_the_unit() {
    let mut s = scopes(Some(&[7, 8]));
    let kubelet = s.whose(seen(Some(8)), &rec("kubelet", BY_CGROUP | BY_ENDPOINT));
    assert_eq!(
        kubelet.budget,
        Budget::Cgroup("/system.slice/kubelet.service".into())
    );
    assert_eq!(kubelet.unit, UnitOwned::Yes, "a child cgroup of the unit's");
    let proxy = s.whose(seen(Some(5)), &rec("kube-proxy", BY_CGROUP));
    assert_eq!(
        (proxy.budget.to_string(), proxy.unit),
        (
            "cgroup /system.slice/kube-proxy.service".into(),
            UnitOwned::No
        )
    );
    let noisy = s.whose(seen(Some(99)), &rec("noisy", BY_COMM | BY_ENDPOINT));
    assert_eq!(
        (noisy.budget, noisy.unit),
        (Budget::Comm("noisy".into()), UnitOwned::No)
    );
    let adopted = s.whose(seen(Some(99)), &rec("-", 0));
    assert_eq!(adopted.budget, Budget::Unattributed);
}

/// An endpoint client no target selects pays from its owner's budget: its group (here not
/// found: no hierarchy) and the socket's uid; without the socket's uid, nobody's.
#[test]
fn an_endpoint_client_pays_as_its_owner() {
    let mut s = scopes(None);
    let client = s.whose(
        LastRead {
            cgroup_id: Some(CgroupId(99)),
            uid: Some(65534),
        },
        &rec("curl", BY_ENDPOINT),
    );
    assert_eq!(
        client.budget,
        Budget::EndpointClient {
            group: None,
            uid: 65534
        }
    );
    let unread = s.whose(LastRead::default(), &rec("curl", BY_ENDPOINT));
    assert_eq!(
        unread.budget,
        Budget::Unattributed,
        "the socket was not read"
    );
}

#[test]
fn without_evidence_the_socket_is_never_the_units() {
    let gone = scopes(Some(&[7])).whose(seen(None), &rec("kubelet", BY_CGROUP));
    assert_eq!(
        gone.unit,
        UnitOwned::Unknown,
        "its cgroup could not be read"
    );
    let no_unit = scopes(None).whose(seen(Some(7)), &rec("kubelet", BY_CGROUP));
    assert_eq!(
        no_unit.unit,
        UnitOwned::Unknown,
        "the unit's cgroup unknown"
    );
    let stopped = scopes(Some(&[])).whose(seen(Some(7)), &rec("kubelet", BY_CGROUP));
    assert_eq!(
        stopped.unit,
        UnitOwned::Unknown,
        "the unit's cgroup is not there"
    );
}
