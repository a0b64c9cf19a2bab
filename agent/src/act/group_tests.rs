use std::os::unix::fs::MetadataExt as _;

use super::*;

const MD5: &str = "0123456789abcdef0123456789abcdef";
const UUID_SYSTEMD: &str = "3f0c6a8e_2b1d_4f5e_9a7b_1c2d3e4f5a6b";

#[test]
fn units_pods_and_users_are_one_group_each() {
    for (path, group) in [
        (
            "/system.slice/kube-proxy.service",
            "/system.slice/kube-proxy.service",
        ),
        (
            "/system.slice/containerd.service/sub/deeper",
            "/system.slice/containerd.service",
        ),
        (
            "/system.slice/docker-0a1b.scope",
            "/system.slice/docker-0a1b.scope",
        ),
        // Everything a user's manager and sessions make: one group.
        (
            "/user.slice/user-65534.slice/user@65534.service/app.slice/a.service",
            "/user.slice/user-65534.slice",
        ),
        (
            "/user.slice/user-65534.slice/session-3.scope",
            "/user.slice/user-65534.slice",
        ),
        (
            "/ll-1-2.slice/user.slice/user-65534.slice/session-1.scope",
            "/ll-1-2.slice/user.slice/user-65534.slice",
        ),
        ("/user.slice", "/user.slice"),
        // Every container of a pod, both drivers, static and API pods.
        (
            &format!("/kubepods/burstable/pod{MD5}/0a1b2c"),
            &format!("/kubepods/burstable/pod{MD5}"),
        ),
        (
            &format!("/kubepods/pod{MD5}/0a1b2c"),
            &format!("/kubepods/pod{MD5}"),
        ),
        (
            &format!(
                "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{UUID_SYSTEMD}.slice/cri-containerd-1.scope"
            ),
            &format!(
                "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{UUID_SYSTEMD}.slice"
            ),
        ),
        (
            "/kubepods/burstable/pod3f0c6a8e-2b1d-4f5e-9a7b-1c2d3e4f5a6b/c",
            "/kubepods/burstable/pod3f0c6a8e-2b1d-4f5e-9a7b-1c2d3e4f5a6b",
        ),
        // Unknown layouts: the top-level cgroup, which only root makes.
        ("/ll-1-2/client", "/ll-1-2"),
        ("/kubepods.slice", "/kubepods.slice"),
        ("/", "/"),
        ("", "/"),
    ] {
        assert_eq!(collapse(path), group, "{path}");
    }
}

#[test]
fn a_user_cannot_name_its_way_into_another_group() {
    // Directories a user's manager may make below its own unit: still the user's slice.
    for path in [
        "/user.slice/user-1000.slice/user@1000.service/kubepods/pod0123456789abcdef0123456789abcdef/c",
        "/user.slice/user-1000.slice/user@1000.service/user.slice/user-0.slice",
        "/user.slice/user-1000.slice/user@1000.service/system.slice/kube-proxy.service",
    ] {
        assert_eq!(collapse(path), "/user.slice/user-1000.slice", "{path}");
    }
    // A `user.slice` or `kubepods` below a unit is the unit's.
    assert_eq!(
        collapse("/system.slice/x.service/user.slice/user-0.slice"),
        "/system.slice/x.service"
    );
    assert_eq!(
        collapse(&format!("/system.slice/x.service/kubepods/pod{MD5}")),
        "/system.slice/x.service"
    );
    // Not a pod: no kubepods above it, or not a UID.
    assert_eq!(collapse(&format!("/lab/pod{MD5}/c")), "/lab");
    assert_eq!(collapse("/kubepods/burstable/podZZ/c"), "/kubepods");
}

/// A tree of plain directories stands for the hierarchy: the walk names ids by inode.
#[test]
fn the_walk_names_every_id_of_a_batch_once() {
    let root = std::env::temp_dir().join(format!("lifeline-groups-{}", std::process::id()));
    let unit = root.join("system.slice/kube-proxy.service/inner");
    let user = root.join("user.slice/user-65534.slice/session-1.scope");
    std::fs::create_dir_all(&unit).unwrap();
    std::fs::create_dir_all(&user).unwrap();
    let ino = |p: &std::path::Path| std::fs::metadata(p).unwrap().ino();
    let mut g = Groups::at(Some(root.clone()));
    // pid 0 has no /proc entry: no hint, the walk.
    assert_eq!(
        g.group(ino(&unit), 0).as_deref(),
        Some("/system.slice/kube-proxy.service")
    );
    let walked = g.walked;
    assert_eq!(
        g.group(ino(&user), 0).as_deref(),
        Some("/user.slice/user-65534.slice")
    );
    assert!(g.walked >= walked, "one walk, resumed");
    let again = g.walked;
    assert!(g.group(ino(&unit), 0).is_some());
    assert_eq!(g.walked, again, "a known id costs no walk");
    assert_eq!(g.group(u64::MAX, 0), None, "an id nowhere in the tree");
    assert_eq!(Groups::at(None).group(ino(&unit), 0), None);
    std::fs::remove_dir_all(&root).unwrap();
}

/// `/proc/PID/cgroup` names the cgroup at once when the directory there has the id.
#[test]
fn the_owners_proc_entry_is_a_hint_checked_by_the_id() {
    let text = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let path = text.lines().find_map(|l| l.strip_prefix("0::")).unwrap();
    if path.starts_with("/..") {
        return; // a test run inside a cgroup namespace: nothing to mirror
    }
    let root = std::env::temp_dir().join(format!("lifeline-hint-{}", std::process::id()));
    let dir = root.join(path.trim_start_matches('/'));
    std::fs::create_dir_all(&dir).unwrap();
    let id = std::fs::metadata(&dir).unwrap().ino();
    let me = std::process::id();
    let g = Groups::at(Some(root.clone()));
    assert_eq!(g.hint(id, me), Some(collapse(path)));
    assert_eq!(
        g.hint(id + 1, me),
        None,
        "another id: the hint is not taken"
    );
    std::fs::remove_dir_all(&root).unwrap();
}
