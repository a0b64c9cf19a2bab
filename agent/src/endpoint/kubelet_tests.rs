use super::*;

fn arg(cmdline: &[u8]) -> Option<String> {
    kubeconfig_arg(cmdline).map(|p| p.display().to_string())
}

#[test]
fn kubeconfig_flag_in_both_spellings() {
    let line = b"/usr/bin/kubelet\0--v=2\0--kubeconfig\0/var/lib/kubelet/kubeconfig\0--node-ip=1\0";
    assert_eq!(arg(line).as_deref(), Some("/var/lib/kubelet/kubeconfig"));
    let line = b"kubelet\0--kubeconfig=/etc/kubernetes/kubelet.conf\0--config=/x";
    assert_eq!(arg(line).as_deref(), Some("/etc/kubernetes/kubelet.conf"));
    let line = b"kubelet\0--kubeconfig=a\0--kubeconfig\0b\0";
    assert_eq!(arg(line).as_deref(), Some("b"), "the last one wins");
}

#[test]
fn no_kubeconfig_flag() {
    assert_eq!(
        arg(b"kubelet\0--bootstrap-kubeconfig=/b\0--kubeconfig-x=/c\0"),
        None
    );
    assert_eq!(arg(b"kubelet\0--kubeconfig="), None, "empty: standalone");
    assert_eq!(arg(b"kubelet\0--kubeconfig"), None, "no value");
    assert_eq!(arg(b"--kubeconfig=/argv0-is-the-program"), None);
    assert_eq!(arg(b"kubelet\0--\0--kubeconfig=/not-a-flag"), None);
    assert_eq!(arg(b""), None);
}

#[test]
fn start_time_after_a_tricky_comm() {
    let stat = "812 (kube let) x) S 1 812 812 0 -1 4194560 9 0 0 0 5 3 0 0 20 0 14 0 4242 1 2";
    assert_eq!(start_time(stat), Some(4242));
    assert_eq!(start_time("812 (kubelet) S 1"), None);
}

#[test]
fn oldest_wins_and_counts_the_others() {
    let k = |pid, start| Kubelet {
        pid,
        start,
        arg: PathBuf::from("/k"),
    };
    let (chosen, n) = oldest(vec![k(900, 50), k(812, 10), k(700, 30)]).unwrap();
    assert_eq!((chosen.pid, n), (812, 3));
    assert_eq!(oldest(Vec::new()), None);
}

#[test]
fn read_path_prefers_the_direct_path() {
    let p = |s: &str| PathBuf::from(s);
    let only = |e: &'static str| move |x: &Path| x == Path::new(e);
    assert_eq!(read_path(7, &p("/k.conf"), only("/k.conf")), p("/k.conf"));
    assert_eq!(
        read_path(7, &p("/k.conf"), only("/proc/7/root/k.conf")),
        p("/proc/7/root/k.conf")
    );
    assert_eq!(
        read_path(7, &p("/k.conf"), |_| false),
        p("/k.conf"),
        "named as given"
    );
    assert_eq!(
        read_path(7, &p("etc/k.conf"), |_| true),
        p("/proc/7/cwd/etc/k.conf")
    );
}
