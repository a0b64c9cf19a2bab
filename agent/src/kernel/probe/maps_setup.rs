//! Filling the probe's configuration maps, loading the iterator, and the memlock limit.

use anyhow::{Context as _, Result};
use aya::{
    Btf, Ebpf,
    maps::{Array, HashMap, MapData},
    programs::Iter,
};
use lifeline_common::{
    COMM_LEN, Keepalive,
    hooks::{Attach, Hook},
    maps,
    watch::{ARM_LINEAR_TIMEOUTS, CGROUP_PATH_LEN, WatchConfig, cgroup_level},
};

use super::{ProbeConfig, attach::program};

/// Fill the configuration maps; `keepalive`: what to arm watched sockets with.
pub(super) fn configure(
    ebpf: &mut Ebpf,
    cfg: &ProbeConfig<'_>,
    keepalive: Keepalive,
) -> Result<()> {
    let mut ports: HashMap<&mut MapData, u16, u8> =
        HashMap::try_from(ebpf.map_mut(maps::PORTS).context("PORTS")?)?;
    for p in cfg.ports {
        ports.insert(p, 1, 0)?;
    }
    let mut comms: HashMap<&mut MapData, [u8; COMM_LEN], u8> =
        HashMap::try_from(ebpf.map_mut(maps::COMMS).context("COMMS")?)?;
    for c in &cfg.targets.comms {
        let mut key = [0u8; COMM_LEN];
        // The kernel keeps 15 bytes of a task name plus NUL.
        let n = c.len().min(COMM_LEN - 1);
        key[..n].copy_from_slice(&c.as_bytes()[..n]);
        comms.insert(key, 1, 0)?;
    }
    let mut config: Array<&mut MapData, WatchConfig> =
        Array::try_from(ebpf.map_mut(maps::CONFIG).context("CONFIG")?)?;
    let watch = WatchConfig {
        flags: cfg.targets.flags()
            | if cfg.linear_timeouts {
                ARM_LINEAR_TIMEOUTS
            } else {
                0
            },
        cgroup_levels: cfg
            .targets
            .cgroups
            .iter()
            .filter_map(|t| cgroup_level(&t.key))
            .fold(0, |m, l| m | 1 << l),
        ..WatchConfig::default()
    };
    config.set(0, watch, 0)?;
    let mut paths: HashMap<&mut MapData, [u8; CGROUP_PATH_LEN], u32> =
        HashMap::try_from(ebpf.map_mut(maps::TARGET_PATHS).context("TARGET_PATHS")?)?;
    for (i, t) in cfg.targets.cgroups.iter().enumerate() {
        let mut key = [0u8; CGROUP_PATH_LEN];
        // `Targets` refused longer paths; the last byte stays NUL like the kernel's copy.
        let n = t.key.len().min(CGROUP_PATH_LEN - 1);
        key[..n].copy_from_slice(&t.key.as_bytes()[..n]);
        paths.insert(key, u32::try_from(i)?, 0)?;
    }
    let mut keepalive_map: Array<&mut MapData, Keepalive> =
        Array::try_from(ebpf.map_mut(maps::KEEPALIVE).context("KEEPALIVE")?)?;
    keepalive_map.set(0, keepalive, 0)?;
    Ok(())
}

/// The values the probe arms: the flag's, less in a dry run what it observes nothing with
/// (`TCP_USER_TIMEOUT`), and nothing at all in a dry run that could not take it back.
pub(super) fn armed_keepalive(cfg: &ProbeConfig<'_>, iterator: bool) -> Keepalive {
    if !cfg.dry_run {
        return cfg.keepalive;
    }
    if !iterator {
        if cfg.keepalive != Keepalive::default() {
            tracing::warn!(
                "--dry-run without the TCP iterator (needs Linux {}.{}): no keepalive is armed, since nothing could take it back before the kernel aborts a silent socket with it; idle dead peers are not judged in this dry run",
                lifeline_common::features::DEFER.since.0,
                lifeline_common::features::DEFER.since.1
            );
        }
        return Keepalive::default();
    }
    Keepalive {
        user_timeout_ms: 0,
        ..cfg.keepalive
    }
}

pub(super) fn load_iter(ebpf: &mut Ebpf) -> Result<()> {
    let btf = Btf::from_sys_fs().context("reading /sys/kernel/btf/vmlinux")?;
    let hook = Hook::AdoptIter;
    let Attach::Iter(target) = hook.attach() else {
        anyhow::bail!("{} is not an iterator program", hook.program());
    };
    let iter: &mut Iter = program(ebpf, hook)?;
    iter.load(target, &btf)
        .with_context(|| format!("loading the iter/{target} program"))?;
    Ok(())
}

/// Kernels before 5.11 charge BPF maps to `RLIMIT_MEMLOCK`; lift it so they load too.
pub(super) fn raise_memlock() {
    let lim = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: plain syscall with a valid struct; failure only matters on old kernels,
    // where the load error that follows says so.
    unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &raw const lim) };
}
