//! Crowds of idle connections (the `lab-crowd` fixture) in the lab's client namespace, and the
//! agent's descriptors they might cost it, and its descriptor limit: the hostile neighbour of
//! the servers' tests.

use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, ensure};

use crate::lab::Lab;
use crate::paths::fixture;
use crate::proc::Proc;

/// `lab-crowd` holding `n` idle connections to `to` (`kind`: "tcp" or "unix"), as uid 65534
/// when `nobody`, once it has made them; with what it said (`uid U pid P`, `connected K`,
/// `took MS ms`, `failed M: ERROR`...). Dropping the `Proc` ends it and its connections.
///
/// # Errors
/// When the fixture is missing, or it does not get through its connections in 90 s.
pub fn crowd(
    lab: &Lab,
    nobody: bool,
    kind: &str,
    to: &str,
    n: usize,
) -> Result<(Proc, Vec<String>)> {
    let mut cmd = Command::new("nsenter");
    cmd.arg(format!("--net={}", lab.client.path()))
        .arg("--")
        .arg(fixture("lab-crowd")?);
    if nobody {
        cmd.arg("--nobody");
    }
    cmd.args([kind, to, &n.to_string()]);
    let mut p = Proc::spawn("lab-crowd", cmd)?;
    p.wait_stdout("the crowd's connections", Duration::from_secs(90), |l| {
        l == "ready"
    })
    .with_context(|| p.stderr_text())?;
    let said = p.stdout_lines().into_iter().map(|l| l.text).collect();
    eprintln!("lab-crowd {kind} {to} x{n} (nobody: {nobody}): {said:?}");
    Ok((p, said))
}

/// How many connections a crowd holds, from what it said.
#[must_use]
pub fn connected(said: &[String]) -> usize {
    said.iter()
        .find_map(|l| l.strip_prefix("connected ")?.parse().ok())
        .unwrap_or(0)
}

/// How many descriptors process `pid` has open (0 once it is gone).
#[must_use]
pub fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count)
}

/// The numbers of process `pid`'s open descriptors.
///
/// # Errors
/// When its /proc/PID/fd cannot be read.
pub fn fd_numbers(pid: u32) -> Result<std::collections::BTreeSet<libc::rlim_t>> {
    Ok(std::fs::read_dir(format!("/proc/{pid}/fd"))?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect())
}

/// Sets process `pid`'s soft descriptor limit, the hard one unchanged (putting it back needs
/// no `CAP_SYS_RESOURCE`); returns the soft one it had.
///
/// # Errors
/// When `prlimit` fails.
pub fn set_soft_nofile(pid: u32, soft: libc::rlim_t) -> Result<libc::rlim_t> {
    let pid = libc::pid_t::try_from(pid)?;
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: prlimit(2) with valid pointers to values of our own; the first call only reads.
    let r = unsafe { libc::prlimit(pid, libc::RLIMIT_NOFILE, std::ptr::null(), &raw mut lim) };
    ensure!(r == 0, "prlimit {pid}: {}", std::io::Error::last_os_error());
    let old = lim.rlim_cur;
    lim.rlim_cur = soft.min(lim.rlim_max);
    // SAFETY: as above.
    let r = unsafe {
        libc::prlimit(
            pid,
            libc::RLIMIT_NOFILE,
            &raw const lim,
            std::ptr::null_mut(),
        )
    };
    ensure!(r == 0, "prlimit {pid}: {}", std::io::Error::last_os_error());
    Ok(old)
}
