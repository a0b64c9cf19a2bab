//! One client connection: a writer, a buffered reader on a clone of the same socket.

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;

use socket2::{Domain, Protocol, SockRef, Socket, TcpKeepalive, Type};

use crate::report::Report;

/// A connection and its local port (what the agent and ss show).
pub(crate) struct Conn {
    pub writer: TcpStream,
    pub reader: BufReader<TcpStream>,
    pub port: u16,
}

/// Keepalive the application sets itself: idle, interval, count (0: left alone), and
/// whether after `connect()` returns, one `setsockopt` each in the order Go's `net.Dialer`
/// uses (`SO_KEEPALIVE`, `TCP_KEEPIDLE`, `TCP_KEEPINTVL`, `TCP_KEEPCNT`), or before connecting.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AppKeepalive {
    pub idle: u64,
    pub intvl: u64,
    pub cnt: u32,
    pub after_connect: bool,
}

/// Connects (5 s timeout) with the long I/O timeouts set on the socket, and the client's
/// own keepalive (set before connect, as an application would) when asked.
pub(crate) fn connect(
    peer: &SocketAddr,
    io_timeout: Duration,
    keepalive: Option<AppKeepalive>,
) -> Result<Conn, Report> {
    let sock = Socket::new(
        Domain::for_address(*peer),
        Type::STREAM,
        Some(Protocol::TCP),
    )
    .map_err(|e| Report::io("socket", &e, 0))?;
    if let Some(k) = keepalive.filter(|k| !k.after_connect) {
        let ka = TcpKeepalive::new()
            .with_time(Duration::from_secs(k.idle))
            .with_interval(Duration::from_secs(k.intvl))
            .with_retries(k.cnt);
        sock.set_tcp_keepalive(&ka)
            .map_err(|e| Report::io("keepalive", &e, 0))?;
    }
    sock.connect_timeout(&(*peer).into(), Duration::from_secs(5))
        .map_err(|e| Report::io("connect", &e, 0))?;
    if let Some(k) = keepalive.filter(|k| k.after_connect) {
        go_dialer(&sock, k).map_err(|e| Report::io("keepalive", &e, 0))?;
    }
    let s: TcpStream = sock.into();
    let port = s.local_addr().map_or(0, |a| a.port());
    let setup = |s: &TcpStream| {
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(io_timeout))?;
        s.set_write_timeout(Some(io_timeout))?;
        s.try_clone()
    };
    let reader = setup(&s).map_err(|e| Report::io("setup", &e, port))?;
    Ok(Conn {
        writer: s,
        reader: BufReader::new(reader),
        port,
    })
}

/// Go's `setKeepAlive`, `setKeepAliveIdle`, `setKeepAliveInterval`, `setKeepAliveCount`
/// (`net/tcpsockopt_unix.go`), in that order, right after the connection is up.
fn go_dialer(sock: &Socket, k: AppKeepalive) -> std::io::Result<()> {
    let set = |level: i32, name: i32, v: u64| -> std::io::Result<()> {
        let v = i32::try_from(v).unwrap_or(i32::MAX);
        let len = libc::socklen_t::try_from(size_of::<i32>()).unwrap_or(4);
        // SAFETY: a valid fd and a live i32 of `len` bytes.
        let rc =
            unsafe { libc::setsockopt(sock.as_raw_fd(), level, name, (&raw const v).cast(), len) };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    };
    set(libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1)?;
    set(libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, k.idle)?;
    set(libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, k.intvl)?;
    if k.cnt != 0 {
        set(libc::IPPROTO_TCP, libc::TCP_KEEPCNT, u64::from(k.cnt))?;
    }
    Ok(())
}

/// Reads one line; EOF is its own event (the peer closed), not an OS error.
pub(crate) fn read_line(conn: &mut Conn, buf: &mut String) -> Result<(), Report> {
    buf.clear();
    match conn.reader.read_line(buf) {
        Ok(0) => Err(Report::new("eof")
            .port(conn.port)
            .note("peer closed the connection")),
        Ok(_) => Ok(()),
        Err(e) => Err(Report::io("read", &e, conn.port)),
    }
}

/// The socket's keepalive options as the kernel has them now (`getsockopt`).
pub(crate) fn sockopts(s: &TcpStream, port: u16) -> Report {
    let r = SockRef::from(s);
    let secs = |d: std::io::Result<Duration>| d.map_or(0, |d| d.as_secs());
    Report::new("sockopts")
        .port(port)
        .num("keepalive", u64::from(r.keepalive().unwrap_or(false)))
        .num("idle_s", secs(r.tcp_keepalive_time()))
        .num("intvl_s", secs(r.tcp_keepalive_interval()))
        .num("cnt", u64::from(r.tcp_keepalive_retries().unwrap_or(0)))
        .num(
            "user_timeout_ms",
            r.tcp_user_timeout()
                .ok()
                .flatten()
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(0)),
        )
}
