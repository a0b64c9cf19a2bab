//! The rows of `lifeline check` that follow one new connection the way `run` follows
//! kubelet's: the loaded probe is told that a loopback listener of the check's own is a
//! target (as an endpoint address would be), the check connects to it, and the record the
//! connect hook and `sock_ops` wrote says whether the socket was watched from its connect
//! and what keepalive the kernel let the probe arm (`lifeline_common::features`:
//! `KEEPALIVE_SET` 5.9, `KEEPALIVE_READ` 6.1). Also what the iterator could do with an
//! older socket, named by what this kernel lacks.

use std::{
    net::{TcpListener, TcpStream},
    time::Duration,
};

use anyhow::{Context as _, Result};
use lifeline_common::{
    Keepalive,
    features::{APP_KEEPALIVE_NETNS, ITER_CALLBACKS, ITER_KEEPALIVE},
    sockopt::{count, shorter},
};

use crate::{
    check::row::Row,
    judge::{Arming, Cookie, Record, idle},
    kernel::{
        probe::{AppKeepaliveHook, Probe},
        sockopts::socket_cookie,
    },
};

/// `sock_ops watch` and `keepalive`: a loopback connection made after the probe attached.
pub(super) fn new_connection_rows(p: &mut Probe, want: &Keepalive) -> Vec<Row> {
    match watched_connection(p) {
        Ok(Some((client, rec))) => {
            let text = idle::describe(&rec, want, p.can_adopt);
            let keepalive = match rec.arming {
                Arming::Armed | Arming::Off => Row::pass("keepalive", text),
                _ => Row::warn(
                    "keepalive",
                    format!("{text}: idle connections are protected less (docs/KERNELS.md)"),
                ),
            };
            vec![
                Row::pass(
                    "sock_ops watch",
                    "a new connection of a target was recorded from its connect".to_owned(),
                ),
                keepalive,
                app_keepalive_row(p, &client, &rec, want),
                crate::check::stall::row(&rec),
            ]
        }
        Ok(None) => vec![Row::fail(
            "sock_ops watch",
            "a new connection of a target was not recorded: the connect hooks or sock_ops do not run on this kernel".to_owned(),
        )],
        Err(e) => vec![Row::fail("sock_ops watch", format!("{e:#}"))],
    }
}

/// The record of a loopback connection to a listener the probe was told to watch.
fn watched_connection(p: &mut Probe) -> Result<Option<(TcpStream, Record)>> {
    let listener =
        TcpListener::bind("127.0.0.1:0").context("cannot listen on 127.0.0.1 (is lo up?)")?;
    let addr = listener.local_addr()?;
    p.watch_peer_for_check(addr)?;
    let client = TcpStream::connect(addr).context("cannot connect on loopback")?;
    let (_server, _) = listener.accept()?;
    let cookie = Cookie(socket_cookie(&client)?);
    // ESTABLISHED runs before connect() returns; a few looks cover a slow machine.
    for _ in 0..20 {
        if let Some((_, rec)) = p.sockets()?.into_iter().find(|(c, _)| *c == cookie) {
            return Ok(Some((client, rec)));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(None)
}

/// `app keepalive`: the check's client then does what Go's dialer does after connect
/// (keepalive on, 30 s idle and interval, count 9), and the kernel's values are read back.
fn app_keepalive_row(p: &Probe, client: &TcpStream, rec: &Record, want: &Keepalive) -> Row {
    if !rec.arming.in_force() || want.idle_s == 0 {
        return Row::pass(
            "app keepalive",
            "keepalive not armed: nothing to merge".to_owned(),
        );
    }
    let go = (30, 30, 9);
    let merged = (
        shorter(go.0, want.idle_s),
        shorter(go.1, want.intvl_s),
        count(go.2, go.1, want),
    );
    let got = match crate::kernel::sockopts::go_dialer(client, go)
        .and_then(|()| crate::kernel::sockopts::read(client))
    {
        Ok(v) => v,
        Err(e) => {
            return Row::warn(
                "app keepalive",
                format!("cannot set or read keepalive on the check's socket: {e}"),
            );
        }
    };
    let text = format!(
        "after Go's {}s,{}s,{} the socket has {}s,{}s,{}",
        go.0, go.1, go.2, got.0, got.1, got.2
    );
    match (&p.app_keepalive, got == merged) {
        (AppKeepaliveHook::Merged, true) => Row::pass("app keepalive", text),
        (AppKeepaliveHook::MergedAnyNetns, true) => Row::warn(
            "app keepalive",
            format!(
                "{text}, matched by addresses only (the namespace check needs Linux {}.{})",
                APP_KEEPALIVE_NETNS.since.0, APP_KEEPALIVE_NETNS.since.1
            ),
        ),
        (AppKeepaliveHook::Unavailable(why), _) => Row::warn(
            "app keepalive",
            format!(
                "{text}: setsockopt hook unavailable ({why}); applications that set keepalive after connecting loosen lifeline's"
            ),
        ),
        (_, false) => Row::warn(
            "app keepalive",
            format!(
                "{text}, expected {}s,{}s,{}: the setsockopt hook did not merge",
                merged.0, merged.1, merged.2
            ),
        ),
    }
}

/// `bpf_setsockopt`: what the TCP iterator did with a socket older than the probe
/// (`Some(result)`), or `None` when it could not load.
pub(super) fn iterator_row(result: Option<Result<Option<i32>>>) -> Row {
    let (k, c) = (ITER_KEEPALIVE.since, ITER_CALLBACKS.since);
    match result {
        None => Row::warn(
            "bpf_setsockopt",
            format!(
                "TCP iterator unavailable (needs Linux {}.{} and BTF): sockets older than the agent get no keepalive and are polled through sock_diag (arming them needs {}.{})",
                k.0, k.1, c.0, c.1
            ),
        ),
        Some(Ok(Some(0))) => Row::pass(
            "bpf_setsockopt",
            "the TCP iterator armed a live socket".to_owned(),
        ),
        Some(Ok(Some(rc))) if rc < 0 => Row::warn(
            "bpf_setsockopt",
            format!(
                "the TCP iterator loads but the kernel refuses callback flags (errno {}; needs Linux {}.{}): sockets older than the agent are polled through sock_diag",
                -rc, c.0, c.1
            ),
        ),
        Some(Ok(other)) => Row::warn(
            "bpf_setsockopt",
            format!("the iterator could not arm a socket ({other:?}): older sockets are polled"),
        ),
        Some(Err(e)) => Row::warn("bpf_setsockopt", format!("{e:#}: older sockets are polled")),
    }
}
