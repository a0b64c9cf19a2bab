use super::*;

fn client(group: &str, uid: u32) -> Budget {
    Budget::EndpointClient {
        group: Some(group.into()),
        uid,
    }
}

#[test]
fn each_target_has_its_own_sliding_minute() {
    let mut b = KillBudgets::new(2);
    let t0 = Mono::from_secs(100);
    let noisy = Budget::Comm("noisy".into());
    let kubelet = Budget::Cgroup("/system.slice/kubelet.service".into());
    assert!(b.try_take(&noisy, t0));
    assert!(b.try_take(&noisy, t0 + Duration::from_secs(1)));
    assert!(
        !b.try_take(&noisy, t0 + Duration::from_secs(2)),
        "the noisy client's budget is spent"
    );
    assert!(
        b.try_take(&kubelet, t0 + Duration::from_secs(2)),
        "kubelet's budget is untouched by the noisy client's kills"
    );
    assert!(b.try_take(&client("/system.slice/x.service", 0), t0));
    assert!(b.try_take(&Budget::Unattributed, t0));
    assert!(
        !b.try_take(&noisy, t0 + Duration::from_secs(59)),
        "still inside the minute of the first kill"
    );
    assert!(
        b.try_take(&noisy, t0 + Duration::from_mins(1)),
        "the first kill aged out"
    );
}

/// Test d's rule: a local user killing its own endpoint connections as fast as it can spends
/// its own budget only; kube-proxy's unit and kubelet's target still have theirs.
#[test]
fn an_endpoint_client_cannot_spend_another_owners_budget() {
    let mut b = KillBudgets::new(6);
    let t0 = Mono::from_secs(100);
    let nobody = client("/user.slice/user-65534.slice", 65534);
    let taken = (0..100)
        .filter(|i| b.try_take(&nobody, t0 + Duration::from_millis(*i)))
        .count();
    assert_eq!(taken, 6, "the user's own budget");
    let proxy = client("/system.slice/kube-proxy.service", 0);
    assert!(b.try_take(&proxy, t0 + Duration::from_secs(1)));
    let kubelet = Budget::Cgroup("/system.slice/kubelet.service".into());
    assert!(b.try_take(&kubelet, t0 + Duration::from_secs(1)));
    // Root's own sockets in the user's slice (sudo in a session) are another owner.
    assert!(b.try_take(&client("/user.slice/user-65534.slice", 0), t0));
}

#[test]
fn the_uids_of_one_group_share_its_bound() {
    let mut b = KillBudgets::new(3);
    let t0 = Mono::from_secs(100);
    let pod = "/kubepods.slice/kubepods-pod0123.slice";
    let taken = (0..10_u32)
        .flat_map(|uid| (0..3).map(move |_| uid))
        .filter(|uid| b.try_take(&client(pod, *uid), t0))
        .count();
    assert_eq!(
        taken,
        3 * GROUP_SHARE,
        "every uid of one pod: the group's bound"
    );
    assert!(
        b.try_take(&client("/system.slice/kube-proxy.service", 0), t0),
        "another group is untouched"
    );
}

#[test]
fn all_endpoint_clients_share_a_total_and_targets_are_outside_it() {
    let mut b = KillBudgets::new(2);
    let t0 = Mono::from_secs(100);
    let mut taken = 0;
    for unit in 0..100 {
        let owner = client(&format!("/system.slice/u{unit}.service"), 0);
        taken += (0..2).filter(|_| b.try_take(&owner, t0)).count();
    }
    assert_eq!(taken, 2 * TOTAL_SHARE, "the total bound");
    let kubelet = Budget::Cgroup("/system.slice/kubelet.service".into());
    assert!(b.try_take(&kubelet, t0), "a target's budget is its own");
    assert!(b.try_take(&Budget::Comm("x".into()), t0));
    // A refusal by a shared bound spends nothing: the owner's own kills come back in a minute.
    let late = client("/system.slice/late.service", 0);
    assert!(!b.try_take(&late, t0 + Duration::from_secs(30)));
    assert!(b.try_take(&late, t0 + Duration::from_mins(1)));
    assert!(b.try_take(&late, t0 + Duration::from_mins(1)));
    assert!(!b.try_take(&late, t0 + Duration::from_mins(1)));
}

#[test]
fn budgets_are_named_in_the_log() {
    assert_eq!(
        Budget::Cgroup("/system.slice/kubelet.service".into()).to_string(),
        "cgroup /system.slice/kubelet.service"
    );
    assert_eq!(
        Budget::Comm("kube-proxy".into()).to_string(),
        "comm kube-proxy"
    );
    assert_eq!(
        client("/system.slice/kube-proxy.service", 0).to_string(),
        "endpoint client /system.slice/kube-proxy.service uid 0"
    );
    assert_eq!(
        Budget::EndpointClient {
            group: None,
            uid: 65534
        }
        .to_string(),
        "endpoint client (cgroup unknown) uid 65534"
    );
    assert_eq!(Whose::default().unit, UnitOwned::Unknown);
}
