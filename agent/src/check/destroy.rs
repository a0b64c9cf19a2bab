//! The `SOCK_DESTROY` row: the check's own loopback connection, destroyed, and its owner
//! seen to get `ECONNABORTED` (what a killed kubelet connection's reader gets).

use std::{
    io::{ErrorKind, Read as _},
    net::{TcpListener, TcpStream},
};

use anyhow::{Context as _, Result, anyhow};

use super::row::Row;
use crate::kernel::diag::{Destroyed, SockDiag};

/// A connected pair on 127.0.0.1 and the client socket's cookie.
pub(super) fn loopback_pair() -> Result<(TcpStream, TcpStream, u64)> {
    let listener =
        TcpListener::bind("127.0.0.1:0").context("cannot listen on 127.0.0.1 (is lo up?)")?;
    let client =
        TcpStream::connect(listener.local_addr()?).context("cannot connect on loopback")?;
    let (server, _) = listener.accept()?;
    let cookie = crate::kernel::sockopts::socket_cookie(&client)?;
    Ok((client, server, cookie))
}

/// `_server` is held open so that only the kill can end the client's read.
pub(super) fn destroy_row(client: &TcpStream, _server: &TcpStream, cookie: u64) -> Row {
    let result = (|| -> Result<String> {
        let mut diag = SockDiag::open().context("opening sock_diag")?;
        let (local, peer) = (client.local_addr()?, client.peer_addr()?);
        match diag.destroy(local, peer, cookie)? {
            Destroyed::Killed => {}
            Destroyed::Gone => {
                return Err(anyhow!("the kernel did not find the check's own socket"));
            }
        }
        client.set_read_timeout(Some(std::time::Duration::from_secs(2)))?;
        let err = (&*client).read(&mut [0u8; 1]).err().map(|e| e.kind());
        match err {
            Some(ErrorKind::ConnectionAborted) => {
                Ok("destroyed a loopback socket; its owner got ECONNABORTED".to_owned())
            }
            other => Err(anyhow!(
                "the destroyed socket's owner saw {other:?}, not ECONNABORTED"
            )),
        }
    })();
    match result {
        Ok(d) => Row::pass("SOCK_DESTROY", d),
        Err(e) => {
            let e = format!("{e:#}");
            let why = if e.contains("not permitted") {
                "needs CAP_NET_ADMIN"
            } else {
                "needs CONFIG_INET_DIAG_DESTROY=y"
            };
            Row::fail(
                "SOCK_DESTROY",
                format!("{e} ({why}); kills are impossible, only --restart-unit can help"),
            )
        }
    }
}
