use super::*;

#[test]
fn finds_cgroup2_on_hybrid_and_unified_layouts() {
    let hybrid = "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
    let pure = "30 22 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
    assert_eq!(
        mount_point_of(hybrid, "cgroup2"),
        Some(PathBuf::from("/sys/fs/cgroup/unified"))
    );
    assert_eq!(
        mount_point_of(pure, "cgroup2"),
        Some(PathBuf::from("/sys/fs/cgroup"))
    );
    assert_eq!(mount_point_of(pure, "bpf"), None);
    let spaced = "1 1 0:1 / /mnt/a\\040b rw - tmpfs x rw\n";
    assert_eq!(
        mount_point_of(spaced, "tmpfs"),
        Some(PathBuf::from("/mnt/a b"))
    );
}
