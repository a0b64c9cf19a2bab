//! Cleanup after lab runs that could not clean up themselves (a test binary killed by
//! SIGKILL or Ctrl-C never runs its Drops). Our names carry the creating pid, `ll-PID-N`, so
//! anything named so whose process is gone is a leftover of ours and safe to remove.

use std::path::Path;
use std::sync::Once;

use crate::infra::mountinfo::cgroup2_mount;
use crate::infra::teardown;

/// Removes leftover namespaces, cgroups and temp dirs of dead lab processes, once per process.
pub(crate) fn sweep() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let netns = crate::infra::cmd::run_args(&["ip", "netns", "list"]).unwrap_or_default();
        for name in netns.lines().filter_map(|l| l.split_whitespace().next()) {
            if is_stale(name) {
                eprintln!("lab: removing leftover netns {name}");
                teardown::netns(name);
            }
        }
        if let Ok(mount) = cgroup2_mount() {
            for dir in stale_entries(&mount) {
                eprintln!("lab: removing leftover cgroup {}", dir.display());
                teardown::cgroup(&dir);
            }
        }
        for dir in stale_entries(&std::env::temp_dir()) {
            let _ = std::fs::remove_dir_all(dir);
        }
    });
}

fn stale_entries(parent: &Path) -> Vec<std::path::PathBuf> {
    let Ok(rd) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    rd.filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().is_some_and(is_stale) && e.path().is_dir())
        .map(|e| e.path())
        .collect()
}

/// `ll-PID-...` where PID is not a live process.
fn is_stale(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("ll-") else {
        return false;
    };
    let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
        return false;
    };
    pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists()
}
