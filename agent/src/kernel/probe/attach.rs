//! Attaching the probe's programs by [`Hook`]: the cgroup v2 root's `sock_ops` and connect
//! hooks, the cgroup tracepoints, and the typed lookup every loader file shares.

use std::os::fd::BorrowedFd;

use anyhow::{Context as _, Result};
use aya::{
    Ebpf,
    programs::{CgroupSockAddr, SockOps, TracePoint, links::CgroupAttachMode},
};
use lifeline_common::hooks::{Attach, Hook};

use crate::kernel::errors::explain_program;

/// On Linux >= 5.7 aya attaches through a `bpf_link`, which the kernel always runs
/// alongside other programs on the cgroup (`cgroup_bpf_link_attach()` passes
/// `BPF_F_ALLOW_MULTI` itself) and which rejects any flag: hence "Single" here still
/// coexists with Cilium or systemd's own programs.
pub(super) const ATTACH_MODE: CgroupAttachMode = CgroupAttachMode::Single;

/// `sock_ops` and the connect hooks, on the cgroup v2 root.
pub(super) fn cgroup_root(ebpf: &mut Ebpf, cgroup: BorrowedFd<'_>) -> Result<()> {
    let hook = Hook::SockOps;
    let sock_ops: &mut SockOps = program(ebpf, hook)?;
    sock_ops.load().map_err(|e| explain_program(hook, &e))?;
    sock_ops
        .attach(cgroup, ATTACH_MODE)
        .map_err(|e| explain_program(hook, &e))?;
    for hook in [Hook::Connect4, Hook::Connect6] {
        let prog: &mut CgroupSockAddr = program(ebpf, hook)?;
        prog.load().map_err(|e| explain_program(hook, &e))?;
        prog.attach(cgroup, ATTACH_MODE)
            .map_err(|e| explain_program(hook, &e))?;
    }
    Ok(())
}

/// The cgroup tracepoints, after checking their record layout; one warning when they
/// cannot be used.
pub(super) fn tracepoints(ebpf: &mut Ebpf) -> Result<()> {
    let result = (|| -> Result<()> {
        for hook in [Hook::CgroupMkdir, Hook::CgroupRmdir] {
            let Attach::TracePoint { category, event } = hook.attach() else {
                anyhow::bail!("{} is not a tracepoint program", hook.program());
            };
            crate::kernel::tracefs::check_layout(event)?;
            let tp: &mut TracePoint = program(ebpf, hook)?;
            tp.load().map_err(|e| explain_program(hook, &e))?;
            tp.attach(category, event)
                .map_err(|e| explain_program(hook, &e))?;
        }
        Ok(())
    })();
    if let Err(e) = &result {
        tracing::warn!(error = %format!("{e:#}"), "cgroup tracepoints unavailable: target cgroups are re-checked every sweep instead, so a restarted unit's first connection may be adopted late rather than watched from its SYN");
    }
    result
}

/// The hook's program, as the type its attach kind loads with.
pub(super) fn program<'a, T>(ebpf: &'a mut Ebpf, hook: Hook) -> Result<&'a mut T>
where
    &'a mut T: TryFrom<&'a mut aya::programs::Program, Error = aya::programs::ProgramError>,
{
    let name = hook.program();
    let p = ebpf
        .program_mut(name)
        .with_context(|| format!("program {name} missing from the eBPF object"))?;
    p.try_into()
        .with_context(|| format!("program {name} has an unexpected type"))
}

#[cfg(test)]
mod tests {
    use object::{Object as _, ObjectSection as _, ObjectSymbol as _};

    use super::Hook;

    #[test]
    fn every_hook_is_a_program_of_the_built_object_in_its_attach_kinds_section() {
        // The unit tests embed what the binary embeds (a skip build fails `object.rs`'s test).
        let Ok(raw) = super::super::object() else {
            return;
        };
        let elf = object::File::parse(raw).unwrap();
        for hook in Hook::ALL {
            let sym = elf
                .symbols()
                .find(|s| s.name() == Ok(hook.program()))
                .unwrap_or_else(|| panic!("{} is not in the eBPF object", hook.program()));
            let section = sym
                .section_index()
                .and_then(|i| elf.section_by_index(i).ok())
                .and_then(|s| s.name().ok().map(str::to_owned));
            assert_eq!(
                section,
                Some(hook.attach().section().to_string()),
                "{hook:?}"
            );
        }
    }
}
