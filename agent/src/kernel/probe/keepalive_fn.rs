//! `tcp_keepalive_timer`'s address for the keepalive news fallback when /proc/kallsyms hides
//! it (no `CAP_SYSLOG`, as in the pod): the TCP iterator reads `sk_timer.function` of a
//! TCP socket of the agent's own (`agent-ebpf/src/unanswered.rs` says why that is the
//! function). The socket listens on 127.0.0.1, port 0, only while the iterator runs: the
//! iterator walks the listening and established tables, never a socket that is only bound
//! (`bpf_iter_tcp_batch()` in <https://github.com/torvalds/linux/blob/v6.18/net/ipv4/tcp_ipv4.c>).

use std::{io::Read as _, net::TcpListener};

use anyhow::{Context as _, Result, ensure};
use aya::{
    Ebpf,
    maps::{Array, MapData},
    programs::Iter,
};
use lifeline_common::{hooks::Hook, keepalive_fn, maps};

use super::attach::program;
use crate::kernel::sockopts::socket_cookie;

/// The address, learned through the TCP iterator (loaded: `maps_setup::load_iter`).
///
/// # Errors
/// When the socket cannot be made, the iterator cannot run, or it found no address.
pub(super) fn learn(ebpf: &mut Ebpf) -> Result<u64> {
    let sock =
        TcpListener::bind("127.0.0.1:0").context("listening on 127.0.0.1 (a socket to read)")?;
    let cookie = socket_cookie(&sock)?;
    slots(ebpf)?.set(keepalive_fn::COOKIE, cookie, 0)?;
    run_iterator(ebpf)?;
    let address = slots(ebpf)?.get(&keepalive_fn::ADDRESS, 0)?;
    drop(sock);
    // Kernel text is in the upper half of the address space (x86_64 and arm64).
    ensure!(
        address >> 63 == 1,
        "the TCP iterator read no kernel function from the agent's socket (got {address:#x})"
    );
    Ok(address)
}

fn slots(ebpf: &mut Ebpf) -> Result<Array<&mut MapData, u64>> {
    let map = ebpf
        .map_mut(maps::KEEPALIVE_FN)
        .with_context(|| format!("map {} missing from the eBPF object", maps::KEEPALIVE_FN))?;
    Ok(Array::try_from(map)?)
}

/// One pass of the TCP iterator over every TCP socket of the agent's network namespace.
///
/// # Errors
/// When it cannot attach or its read fails.
pub(super) fn run_iterator(ebpf: &mut Ebpf) -> Result<()> {
    let iter: &mut Iter = program(ebpf, Hook::AdoptIter)?;
    let link_id = iter.attach()?;
    let mut file = iter.take_link(link_id)?.into_file()?;
    // Reading the iterator runs the program over every TCP socket once.
    file.read_to_end(&mut Vec::new())
        .context("running the TCP iterator")?;
    Ok(())
}
