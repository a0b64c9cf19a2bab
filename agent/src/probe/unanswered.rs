//! The `tcp_write_wakeup` fentry program (`agent-ebpf/src/unanswered.rs`): keepalive probes
//! of a watched idle socket unanswered past the threshold are news. Optional: without it
//! (no BTF, a struct that changed shape, no fentry) idle sockets are looked at through
//! `sock_diag` on a schedule, as before; one warning says so and `check` shows it.

use anyhow::{Context as _, Result, ensure};
use aya::{Ebpf, EbpfLoader, programs::FEntry};
use lifeline_common::{
    features::KEEPALIVE_NEWS,
    globals::{COOKIE_OFFSET, PROBES_OUT_OFFSET, UNANSWERED_MIN},
    programs,
};

use super::{btf::Btf, program};

const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

/// The program's load-time globals (`lifeline_common::globals`).
pub(super) struct Globals {
    probes_out: u32,
    cookie: u32,
    min: u32,
}

/// Unanswered probes from which the next one is news: two before `--silent-probes`, so the
/// agent looks at the socket while the silent rule is still ahead (at least 1: a probe with
/// none unanswered before it is a healthy socket's routine one).
#[must_use]
fn unanswered_min(silent_probes: u8) -> u32 {
    u32::from(silent_probes).saturating_sub(2).max(1)
}

impl Globals {
    /// The offsets from the running kernel's BTF.
    pub(super) fn from_kernel(silent_probes: u8) -> Result<Self> {
        let raw = std::fs::read(VMLINUX).with_context(|| format!("reading {VMLINUX}"))?;
        let btf = Btf::parse(&raw).with_context(|| format!("parsing {VMLINUX}"))?;
        let (probes_out, size) = btf.member("inet_connection_sock", "icsk_probes_out")?;
        ensure!(size == 1, "icsk_probes_out is {size} bytes, not 1");
        let (cookie, size) = btf.member("sock_common", "skc_cookie")?;
        ensure!(size == 8, "skc_cookie is {size} bytes, not 8");
        // The program reads the cookie from the start of `struct sock`.
        let (common, _) = btf.member("sock", "__sk_common")?;
        ensure!(
            common == 0,
            "struct sock does not start with its sock_common"
        );
        Ok(Self {
            probes_out,
            cookie,
            min: unanswered_min(silent_probes),
        })
    }

    pub(super) fn set<'a>(&'a self, loader: &mut EbpfLoader<'a>) {
        loader
            .override_global(PROBES_OUT_OFFSET, &self.probes_out, true)
            .override_global(COOKIE_OFFSET, &self.cookie, true)
            .override_global(UNANSWERED_MIN, &self.min, true);
    }
}

/// Load and attach the program when `globals` were found; `None` when attached, else why
/// not (after one warning).
pub(super) fn attach(ebpf: &mut Ebpf, globals: &Result<Globals>) -> Option<String> {
    let result = (|| -> Result<()> {
        if let Err(e) = globals {
            anyhow::bail!("{e:#}");
        }
        let btf = aya::Btf::from_sys_fs().with_context(|| format!("reading {VMLINUX}"))?;
        let name = programs::UNANSWERED;
        let prog: &mut FEntry = program(ebpf, name)?;
        prog.load("tcp_write_wakeup", &btf)
            .map_err(|e| crate::errors::explain_program(name, &e))?;
        prog.attach()
            .map_err(|e| crate::errors::explain_program(name, &e))?;
        Ok(())
    })();
    let why = format!("{:#}", result.err()?);
    tracing::warn!(error = %why, "keepalive news unavailable (needs Linux {}.{} with BTF and fentry): idle sockets are looked at through sock_diag on a schedule",
        KEEPALIVE_NEWS.since.0, KEEPALIVE_NEWS.since.1);
    Some(why)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_threshold_is_two_probes_before_the_silent_rule() {
        assert_eq!(super::unanswered_min(11), 9);
        assert_eq!(super::unanswered_min(3), 1);
        assert_eq!(super::unanswered_min(1), 1);
    }
}
