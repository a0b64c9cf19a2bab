//! Loading the kernel probe, configuring its maps and attaching it to the cgroup v2 root.

use std::{collections::HashMap as StdHashMap, fs::File, io::Read, os::fd::AsFd};

use anyhow::{Context as _, Result};
use aya::{
    Ebpf, EbpfLoader, VerifierLogLevel,
    maps::{HashMap, MapData, PerCpuArray, RingBuf},
    programs::{CgroupSockAddr, Iter, SockOps, TracePoint, links::CgroupAttachMode},
};
use lifeline_common::{
    Keepalive, SockState,
    config::stats,
    features::{ITER_CALLBACKS, ITER_KEEPALIVE},
    maps, programs,
    sock::ADOPT_PENDING,
};

/// `BPF_NOEXIST` (include/uapi/linux/bpf.h): insert only if the key is absent.
const BPF_NOEXIST: u64 = 1;

/// On Linux >= 5.7 aya attaches through a `bpf_link`, which the kernel always runs
/// alongside other programs on the cgroup (`cgroup_bpf_link_attach()` passes
/// `BPF_F_ALLOW_MULTI` itself) and which rejects any flag: hence "Single" here still
/// coexists with Cilium or systemd's own programs.
const ATTACH_MODE: CgroupAttachMode = CgroupAttachMode::Single;

mod batch;
mod btf;
mod counters;
mod maps_setup;
mod records;
mod sockopt;
mod unanswered;
mod watch_maps;
use maps_setup::{configure, load_iter, raise_memlock};
pub use sockopt::AppKeepalive;

/// The object built from `agent-ebpf` by `build.rs` (the same routine as
/// `cargo xtask build-ebpf`), embedded so the binary is self-contained. Empty when the build
/// skipped it (`LIFELINE_SKIP_EBPF=1`, for check/clippy): see [`embedded`].
static OBJECT: &[u8] = aya::include_bytes_aligned!(env!("LIFELINE_EBPF_OBJECT"));

const NO_OBJECT: &str =
    "this binary was built with LIFELINE_SKIP_EBPF=1 and has no eBPF object; rebuild without it";

/// The embedded object, or the one line that says this binary was never meant to run.
///
/// # Errors
/// When the build skipped the object.
pub fn object() -> Result<&'static [u8]> {
    embedded(OBJECT)
}

/// Empty means skipped (aya would report an empty object as a bare ELF parse error).
fn embedded(object: &'static [u8]) -> Result<&'static [u8]> {
    if object.is_empty() {
        anyhow::bail!(NO_OBJECT);
    }
    Ok(object)
}

pub struct ProbeConfig<'a> {
    /// The cgroup v2 root: attached there, the probe outlives every unit's cgroup.
    pub root: &'a File,
    pub ports: &'a [u16],
    pub targets: &'a crate::settings::Targets,
    pub max_sockets: u32,
    /// What to arm watched sockets with; `idle_s` 0: no keepalive.
    pub keepalive: Keepalive,
    /// `--silent-probes`: keepalive news starts two probes before it (`unanswered_min`).
    pub silent_probes: u8,
}

pub struct Probe {
    ebpf: Ebpf,
    /// `false` when the TCP iterator could not load (kernel < 5.15 or no BTF); where it
    /// loads, it may still be unable to arm the callbacks (kernel < 6.12): see `adopt`.
    pub can_adopt: bool,
    /// `true` when the `cgroup_mkdir`/`rmdir` tracepoints keep the target cgroups current;
    /// otherwise the agent's sweep does, and a restarted unit's first connection may be
    /// adopted rather than seen from its SYN.
    pub tracks_cgroups: bool,
    /// Why the tracepoints could not be used, when they could not.
    pub tracking_error: Option<String>,
    /// Whether the application's own keepalive calls are merged with lifeline's.
    pub app_keepalive: AppKeepalive,
    /// `true` when the kernel reports unanswered keepalive probes of watched sockets
    /// (`news::UNANSWERED`); otherwise idle sockets must be read through `sock_diag`.
    pub unanswered_news: bool,
    /// Which program reports them (`unanswered::FENTRY` or `TIMER`), or why none does.
    pub unanswered_hook: Result<&'static str, String>,
}

/// `OWNERS` has one LRU list per CPU, each with an equal share of the entries: 1,024 per
/// possible CPU, at least 16,384 in all.
fn owners_entries() -> u32 {
    let cpus = aya::util::nr_cpus().map_or(1, |n| u32::try_from(n).unwrap_or(u32::MAX));
    cpus.saturating_mul(1024).max(16_384)
}

impl Probe {
    /// Load the object, fill the configuration maps and attach every program.
    ///
    /// # Errors
    /// With a message naming the program or map that failed and why.
    pub fn load(cfg: &ProbeConfig<'_>) -> Result<Self> {
        let object = object()?;
        raise_memlock();
        let mut loader = EbpfLoader::new();
        // The whole verifier log, for whoever debugs a rejection on their kernel.
        if std::env::var_os("LIFELINE_VERIFIER_LOG").is_some() {
            loader.verifier_log_level(VerifierLogLevel::VERBOSE | VerifierLogLevel::STATS);
        }
        let news_globals = unanswered::Globals::from_kernel(cfg.silent_probes);
        if let Ok(g) = &news_globals {
            g.set(&mut loader);
        }
        let mut ebpf = loader
            .map_max_entries(maps::SOCKETS, cfg.max_sockets)
            .map_max_entries(maps::TUPLES, cfg.max_sockets)
            .map_max_entries(maps::OWNERS, owners_entries())
            .load(object)
            .map_err(|e| crate::kernel::errors::explain_load(&e))?;
        configure(&mut ebpf, cfg)?;
        // Before anything that selects sockets: target cgroups made from now on are seen.
        let tracking_error = if cfg.targets.cgroups.is_empty() {
            None
        } else {
            attach_tracepoints(&mut ebpf)
                .err()
                .map(|e| format!("{e:#}"))
        };
        let cgroup = cfg.root.as_fd();
        let sock_ops: &mut SockOps = program(&mut ebpf, programs::SOCK_OPS)?;
        sock_ops
            .load()
            .map_err(|e| crate::kernel::errors::explain_program(programs::SOCK_OPS, &e))?;
        sock_ops
            .attach(cgroup, ATTACH_MODE)
            .map_err(|e| crate::kernel::errors::explain_program(programs::SOCK_OPS, &e))?;
        for name in [programs::CONNECT4, programs::CONNECT6] {
            let prog: &mut CgroupSockAddr = program(&mut ebpf, name)?;
            prog.load()
                .map_err(|e| crate::kernel::errors::explain_program(name, &e))?;
            prog.attach(cgroup, ATTACH_MODE)
                .map_err(|e| crate::kernel::errors::explain_program(name, &e))?;
        }
        let app_keepalive = sockopt::load(&mut ebpf, cgroup);
        let unanswered_hook = unanswered::attach(&mut ebpf, &news_globals);
        let can_adopt = match load_iter(&mut ebpf) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "TCP iterator unavailable (keepalive on sockets that predate the agent needs Linux {}.{} and BTF, their callbacks {}.{}): they are polled through sock_diag, without keepalive",
                    ITER_KEEPALIVE.since.0, ITER_KEEPALIVE.since.1, ITER_CALLBACKS.since.0, ITER_CALLBACKS.since.1);
                false
            }
        };
        Ok(Self {
            ebpf,
            can_adopt,
            tracks_cgroups: tracking_error.is_none(),
            tracking_error,
            app_keepalive,
            unanswered_news: unanswered_hook.is_ok(),
            unanswered_hook,
        })
    }

    /// Hand the probe's log ring buffer to a task that forwards it into `tracing`.
    ///
    /// # Errors
    /// When the object has no log map.
    pub fn take_logger(&mut self) -> Result<aya_log::EbpfLogger<&'static dyn log::Log>> {
        aya_log::EbpfLogger::init(&mut self.ebpf).context("cannot start the probe's log reader")
    }

    /// The ring buffer of news about watched sockets (`lifeline_common::news`), for the
    /// agent to wait on.
    ///
    /// # Errors
    /// When the object has no such map.
    pub fn take_news(&mut self) -> Result<RingBuf<MapData>> {
        let map = self
            .ebpf
            .take_map(maps::NEWS)
            .context("map NEWS missing from the eBPF object")?;
        Ok(RingBuf::try_from(map)?)
    }

    /// Every record in `SOCKETS`.
    ///
    /// # Errors
    /// When the map cannot be read.
    pub fn sockets(&self) -> Result<Vec<(u64, SockState)>> {
        let found = self.map(maps::SOCKETS)?;
        if let aya::maps::Map::HashMap(data) = found {
            let max = data.info().map_or(0, |i| i.max_entries());
            if let Ok(all) = batch::lookup_all(data, max) {
                return Ok(all);
            }
        }
        let map: HashMap<&MapData, u64, SockState> = HashMap::try_from(found)?;
        // A record removed between key and value lookups is skipped, not an error.
        Ok(map.iter().filter_map(Result::ok).collect())
    }

    /// Counters summed over CPUs, indexed by `lifeline_common::config::stats`.
    ///
    /// # Errors
    /// When the map cannot be read.
    pub fn stats(&self) -> Result<[u64; stats::LEN as usize]> {
        let map: PerCpuArray<&MapData, u64> = PerCpuArray::try_from(self.map(maps::STATS)?)?;
        counters::sum(&map)
    }

    /// Record a socket found by `sock_diag` unless the kernel side already has it; `true`
    /// when recorded now.
    ///
    /// # Errors
    /// When the map is full or cannot be written.
    pub fn seed(&mut self, cookie: u64, state: &SockState) -> Result<bool> {
        let mut map: HashMap<&mut MapData, u64, SockState> =
            HashMap::try_from(self.map_mut(maps::SOCKETS)?)?;
        match map.insert(cookie, state, BPF_NOEXIST) {
            Err(aya::maps::MapError::SyscallError(e))
                if e.io_error.raw_os_error() == Some(libc::EEXIST) =>
            {
                Ok(false)
            }
            r => r
                .map(|()| true)
                .context("SOCKETS map full: a pre-existing socket is NOT watched"),
        }
    }

    /// Drop a record whose socket no longer exists.
    pub fn forget(&mut self, cookie: u64) {
        if let Ok(m) = self.map_mut(maps::SOCKETS)
            && let Ok(mut map) = HashMap::<&mut MapData, u64, SockState>::try_from(m)
        {
            let _ = map.remove(&cookie);
        }
    }

    /// Arm `sock_ops` callbacks on pre-existing sockets through the TCP iterator.
    /// Returns, per cookie, 0 when armed or the negative errno `bpf_setsockopt` gave.
    ///
    /// # Errors
    /// When the iterator cannot run.
    pub fn adopt(&mut self, cookies: &[u64]) -> Result<StdHashMap<u64, i32>> {
        {
            let mut adopt: HashMap<&mut MapData, u64, i32> =
                HashMap::try_from(self.map_mut(maps::ADOPT)?)?;
            for c in cookies {
                adopt.insert(c, ADOPT_PENDING, 0)?;
            }
        }
        let iter: &mut Iter = program(&mut self.ebpf, programs::ADOPT_ITER)?;
        let link_id = iter.attach()?;
        let mut file = iter.take_link(link_id)?.into_file()?;
        // Reading the iterator runs the program over every TCP socket once.
        file.read_to_end(&mut Vec::new())
            .context("running the TCP iterator")?;
        let adopt: HashMap<&MapData, u64, i32> = HashMap::try_from(self.map(maps::ADOPT)?)?;
        Ok(cookies
            .iter()
            .filter_map(|c| adopt.get(c, 0).ok().map(|v| (*c, v)))
            .collect())
    }

    fn map(&self, name: &str) -> Result<&aya::maps::Map> {
        self.ebpf
            .map(name)
            .with_context(|| format!("map {name} missing from the eBPF object"))
    }

    fn map_mut(&mut self, name: &str) -> Result<&mut aya::maps::Map> {
        self.ebpf
            .map_mut(name)
            .with_context(|| format!("map {name} missing from the eBPF object"))
    }
}

/// The cgroup tracepoints, after checking their record layout; one warning when they
/// cannot be used.
fn attach_tracepoints(ebpf: &mut Ebpf) -> Result<()> {
    let result = (|| -> Result<()> {
        for (name, event) in [
            (programs::CGROUP_MKDIR, "cgroup_mkdir"),
            (programs::CGROUP_RMDIR, "cgroup_rmdir"),
        ] {
            crate::kernel::tracefs::check_layout(event)?;
            let tp: &mut TracePoint = program(ebpf, name)?;
            tp.load()
                .map_err(|e| crate::kernel::errors::explain_program(name, &e))?;
            tp.attach("cgroup", event)
                .map_err(|e| crate::kernel::errors::explain_program(name, &e))?;
        }
        Ok(())
    })();
    if let Err(e) = &result {
        tracing::warn!(error = %format!("{e:#}"), "cgroup tracepoints unavailable: target cgroups are re-checked every sweep instead, so a restarted unit's first connection may be adopted late rather than watched from its SYN");
    }
    result
}

fn program<'a, T>(ebpf: &'a mut Ebpf, name: &str) -> Result<&'a mut T>
where
    &'a mut T: TryFrom<&'a mut aya::programs::Program, Error = aya::programs::ProgramError>,
{
    let p = ebpf
        .program_mut(name)
        .with_context(|| format!("program {name} missing from the eBPF object"))?;
    p.try_into()
        .with_context(|| format!("program {name} has an unexpected type"))
}

#[cfg(test)]
mod tests {
    use super::{NO_OBJECT, OBJECT, embedded};

    #[test]
    fn an_empty_object_is_refused_with_the_rebuild_line() {
        let err = embedded(&[]).unwrap_err();
        assert_eq!(format!("{err:#}"), NO_OBJECT);
        assert!(NO_OBJECT.contains("LIFELINE_SKIP_EBPF=1"));
    }

    #[test]
    fn the_embedded_object_of_a_normal_build_is_an_elf_file() {
        // The unit tests embed what the binary embeds: built with the skip switch, this fails.
        assert_eq!(embedded(OBJECT).unwrap().get(..4), Some(&b"\x7fELF"[..]));
    }
}
