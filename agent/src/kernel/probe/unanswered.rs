//! The keepalive news programs (`agent-ebpf/src/unanswered.rs`): keepalive probes of a
//! watched idle socket unanswered past the threshold are news. fentry on `tcp_write_wakeup`
//! where the kernel allows it, else the `timer_expire_entry` tracepoint, which needs
//! `tcp_keepalive_timer`'s address: from /proc/kallsyms, or where that hides it (no
//! `CAP_SYSLOG`: the pod), from a socket of the agent's through the TCP iterator
//! (`keepalive_fn`). Optional: without
//! either (no BTF, a struct that changed shape) idle sockets are looked at through
//! `sock_diag` on a schedule, as before; one warning says so and `check` shows it.

use anyhow::{Context as _, Result, ensure};
use aya::{
    Ebpf, EbpfLoader,
    programs::{BtfTracePoint, FEntry},
};
use lifeline_common::{
    globals::{
        COOKIE_OFFSET, FAST_INTERVAL_NS, KEEPALIVE_TIMER, POKE_LIMIT, PROBES_OUT_OFFSET,
        SK_TIMER_OFFSET, TIMER_FUNCTION_OFFSET, UNANSWERED_MIN,
    },
    hooks::{Attach, Hook},
};

use super::{attach::program, btf::Btf, keepalive_fn};
use crate::kernel::errors::explain_program;

const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

/// The program's load-time globals (`lifeline_common::globals`).
pub(super) struct Globals {
    probes_out: u32,
    cookie: u32,
    min: u32,
    timer_function: u32,
    sk_timer: u32,
    /// 0 when unknown: no fallback.
    keepalive_timer: u64,
    /// `--fast-probes` in ns; 0: off.
    fast_interval_ns: u64,
    /// Unanswered probes from which a fast phase stops poking: `--silent-probes` + 2, so the
    /// verdict's confirming look still finds its evidence.
    poke_limit: u32,
}

/// Unanswered probes from which the next one is news again: the judge's
/// `reported_from(--silent-probes)`, which it relies on to skip the first one's look.
#[must_use]
fn unanswered_min(silent_probes: u8) -> u32 {
    crate::judge::reported_from(silent_probes)
}

impl Globals {
    /// The offsets from the running kernel's BTF.
    pub(super) fn from_kernel(
        silent_probes: u8,
        fast: Option<std::time::Duration>,
    ) -> Result<Self> {
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
        let (timer_function, _) = btf.member("timer_list", "function")?;
        let (sk_timer, _) = btf.member("sock", "sk_timer")?;
        Ok(Self {
            probes_out,
            cookie,
            min: unanswered_min(silent_probes),
            timer_function,
            sk_timer,
            keepalive_timer: kallsyms("tcp_keepalive_timer").unwrap_or(0),
            fast_interval_ns: fast.map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
            poke_limit: lifeline_common::poke::limit(silent_probes),
        })
    }

    pub(super) fn set<'a>(&'a self, loader: &mut EbpfLoader<'a>) {
        loader
            .override_global(PROBES_OUT_OFFSET, &self.probes_out, true)
            .override_global(COOKIE_OFFSET, &self.cookie, true)
            .override_global(UNANSWERED_MIN, &self.min, true)
            .override_global(TIMER_FUNCTION_OFFSET, &self.timer_function, true)
            .override_global(SK_TIMER_OFFSET, &self.sk_timer, true)
            .override_global(KEEPALIVE_TIMER, &self.keepalive_timer, true)
            .override_global(FAST_INTERVAL_NS, &self.fast_interval_ns, true)
            .override_global(POKE_LIMIT, &self.poke_limit, true);
    }
}

/// The address of a kernel function (its exact name, not a `.cold` part).
fn kallsyms(name: &str) -> Option<u64> {
    let all = std::fs::read_to_string("/proc/kallsyms").ok()?;
    all.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        let (addr, kind, sym) = (f.next()?, f.next()?, f.next()?);
        let addr = u64::from_str_radix(addr, 16).ok()?;
        // 0: addresses hidden (`kptr_restrict`).
        (sym == name && matches!(kind, "t" | "T") && addr != 0).then_some(addr)
    })
}

/// Load and attach a reporting program when `globals` were found: `Ok(hook)`, or why not
/// (after one warning). `iterator`: the TCP iterator is loaded (it can learn the address).
pub(super) fn attach(
    ebpf: &mut Ebpf,
    globals: &Result<Globals>,
    iterator: bool,
) -> Result<Hook, String> {
    let result = (|| -> Result<Hook> {
        let g = globals.as_ref().map_err(|e| anyhow::anyhow!("{e:#}"))?;
        let btf = aya::Btf::from_sys_fs().with_context(|| format!("reading {VMLINUX}"))?;
        let Err(first) = fentry(ebpf, &btf) else {
            return Ok(Hook::Unanswered);
        };
        let source = if g.keepalive_timer != 0 {
            "/proc/kallsyms"
        } else {
            ensure!(
                iterator,
                "{first:#}; fallback: /proc/kallsyms hides tcp_keepalive_timer (needs CAP_SYSLOG) and the TCP iterator that could read it did not load"
            );
            keepalive_fn::learn(ebpf).with_context(|| {
                format!("{first:#}; fallback: /proc/kallsyms hides tcp_keepalive_timer (needs CAP_SYSLOG)")
            })?;
            "a socket of the agent's, through the TCP iterator"
        };
        let hook = Hook::UnansweredTimer;
        let Attach::BtfTracePoint(event) = hook.attach() else {
            anyhow::bail!("{} is not a tp_btf program", hook.program());
        };
        let prog: &mut BtfTracePoint = program(ebpf, hook)?;
        prog.load(event, &btf)
            .and_then(|()| prog.attach().map(drop))
            .map_err(|e| explain_program(hook, &e))
            .with_context(|| format!("{first:#}; fallback"))?;
        tracing::debug!(error = %format!("{first:#}"), address_from = source, "keepalive news through {}: fentry unavailable", hook.attach());
        Ok(hook)
    })();
    result.map_err(|e| {
        let why = format!("{e:#}");
        tracing::warn!(error = %why, "keepalive news unavailable (needs Linux {}.{} with BTF): idle sockets are looked at through sock_diag on a schedule",
            Hook::Unanswered.since().0, Hook::Unanswered.since().1);
        why
    })
}

fn fentry(ebpf: &mut Ebpf, btf: &aya::Btf) -> Result<()> {
    let hook = Hook::Unanswered;
    let Attach::FEntry(function) = hook.attach() else {
        anyhow::bail!("{} is not an fentry program", hook.program());
    };
    let prog: &mut FEntry = program(ebpf, hook)?;
    prog.load(function, btf)
        .and_then(|()| prog.attach().map(drop))
        .map_err(|e| explain_program(hook, &e))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_threshold_is_two_probes_before_the_silent_rule() {
        assert_eq!(super::unanswered_min(12), 10);
        assert_eq!(super::unanswered_min(11), 9);
        assert_eq!(super::unanswered_min(3), 1);
        assert_eq!(super::unanswered_min(1), 1);
    }
}
