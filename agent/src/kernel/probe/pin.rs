//! Crash recovery: the agent pins its `ORIGINALS` map under bpffs
//! (`/sys/fs/bpf/lifeline/originals-net-INODE`, one per network namespace as the agent lock
//! is), so what the application had on each armed socket outlives an agent that stops
//! without its restore pass (SIGKILL, OOM, a watchdog abort). The next start finds the pin
//! before it attaches anything, puts those sockets' options back through the TCP iterator,
//! removes the pin and pins its own map; a clean stop removes it after its own pass. A pin
//! whose layout is not this version's is removed unread. Without bpffs (a pod without the
//! host's /sys/fs/bpf mounted in) nothing outlives the agent, and the start log says so.
//! No dot in the name: bpffs refuses one with EPERM (`bpf_lookup()`, dots are reserved,
//! <https://github.com/torvalds/linux/blob/v6.18/kernel/bpf/inode.c>).

use std::{
    os::unix::fs::MetadataExt as _,
    path::{Path, PathBuf},
};

use anyhow::{Context as _, Result};
use aya::{
    Ebpf,
    maps::{HashMap, Map, MapData},
};
use lifeline_common::{maps, restore::Original, watch::RESTORE};

use super::{keepalive_fn, restore::RestoreSummary};

const DIR: &str = "/sys/fs/bpf/lifeline";

/// This network namespace's pin.
///
/// # Errors
/// When the namespace cannot be read.
pub(crate) fn path() -> Result<PathBuf> {
    let netns = std::fs::metadata("/proc/self/ns/net")
        .context("cannot read the network namespace (/proc/self/ns/net)")?
        .ino();
    Ok(Path::new(DIR).join(format!("originals-net-{netns}")))
}

/// What a start found of a previous agent.
#[derive(Debug)]
pub(crate) enum Recovered {
    /// No pin: the previous agent stopped cleanly, or there was none.
    Nothing,
    /// Its sockets' options were put back.
    Restored(RestoreSummary),
    /// A pin was found, but could not be used (another layout, no iterator): the reason.
    Unusable(String),
}

/// Before anything is attached: a previous agent's pinned originals, put back through the
/// iterator into this agent's fresh map, then removed from it and from bpffs.
pub(super) fn recover(ebpf: &mut Ebpf, can_iterate: bool) -> Recovered {
    let Ok(pin) = path() else {
        return Recovered::Nothing;
    };
    if !pin.exists() {
        return Recovered::Nothing;
    }
    let found = read(&pin);
    // Read or not, it goes: the sockets are re-armed by this agent anyway.
    let _ = std::fs::remove_file(&pin);
    let entries = match found {
        Ok(e) => e,
        Err(e) => return Recovered::Unusable(format!("{e:#}")),
    };
    if !can_iterate {
        return Recovered::Unusable(format!(
            "{} sockets, and no TCP iterator on this kernel to put them back",
            entries.len()
        ));
    }
    match put_back(ebpf, &entries) {
        Ok(r) => Recovered::Restored(r),
        Err(e) => Recovered::Unusable(format!("{e:#}")),
    }
}

fn read(pin: &Path) -> Result<Vec<(u64, Original)>> {
    let data = MapData::from_pin(pin).with_context(|| format!("opening {}", pin.display()))?;
    let map = Map::from_map_data(data)?;
    let old: HashMap<MapData, u64, Original> = HashMap::try_from(map)
        .context("its layout is not this version's (key or value size differs)")?;
    Ok(old.iter().filter_map(Result::ok).collect())
}

fn put_back(ebpf: &mut Ebpf, entries: &[(u64, Original)]) -> Result<RestoreSummary> {
    let mut map: HashMap<&mut MapData, u64, Original> =
        HashMap::try_from(ebpf.map_mut(maps::ORIGINALS).context("ORIGINALS")?)?;
    for (cookie, o) in entries {
        map.insert(cookie, o, 0)?;
    }
    set_restore(ebpf, true)?;
    let ran = keepalive_fn::run_iterator(ebpf);
    set_restore(ebpf, false)?;
    ran?;
    let mut map: HashMap<&mut MapData, u64, Original> =
        HashMap::try_from(ebpf.map_mut(maps::ORIGINALS).context("ORIGINALS")?)?;
    let done: Vec<(u64, Original)> = map.iter().filter_map(Result::ok).collect();
    for (cookie, _) in &done {
        let _ = map.remove(cookie);
    }
    Ok(RestoreSummary::of(done.into_iter().map(|(_, o)| o)))
}

fn set_restore(ebpf: &mut Ebpf, on: bool) -> Result<()> {
    let mut config: aya::maps::Array<&mut MapData, lifeline_common::watch::WatchConfig> =
        aya::maps::Array::try_from(ebpf.map_mut(maps::CONFIG).context("CONFIG")?)?;
    let mut c = config.get(&0, 0)?;
    if on {
        c.flags |= RESTORE;
    } else {
        c.flags &= !RESTORE;
    }
    config.set(0, c, 0)?;
    Ok(())
}

/// Pin this agent's map; `Err` says why nothing will outlive a crash.
///
/// # Errors
/// When bpffs is not mounted at /sys/fs/bpf or refuses the pin.
pub(super) fn pin(ebpf: &Ebpf) -> Result<PathBuf> {
    let pin = path()?;
    if !crate::node::mounts::is_mounted(Path::new("/sys/fs/bpf"), "bpf") {
        anyhow::bail!("bpffs is not mounted at /sys/fs/bpf");
    }
    std::fs::create_dir_all(DIR).with_context(|| format!("creating {DIR}"))?;
    let map = ebpf.map(maps::ORIGINALS).context("ORIGINALS")?;
    map.pin(&pin)
        .with_context(|| format!("pinning {}", pin.display()))?;
    Ok(pin)
}

/// Remove the pin after a clean stop's pass (and the directory when it is empty).
pub(crate) fn unpin() {
    if let Ok(pin) = path() {
        let _ = std::fs::remove_file(pin);
        let _ = std::fs::remove_dir(DIR);
    }
}

/// The start's one line about a previous agent's leftovers.
pub(super) fn log(r: Recovered) {
    match r {
        Recovered::Nothing => {}
        Recovered::Restored(r) => tracing::info!(
            event = "recovered",
            restored = r.restored,
            not_restored = r.not_restored,
            gone = r.gone,
            "a previous lifeline stopped without putting back what it changed: the application's socket options are back on {} socket(s), {} could not be, {} closed meanwhile",
            r.restored,
            r.not_restored,
            r.gone
        ),
        Recovered::Unusable(why) => tracing::warn!(
            error = %why,
            "a previous lifeline stopped without putting back what it changed, and its record cannot be used: those sockets keep its values"
        ),
    }
}
