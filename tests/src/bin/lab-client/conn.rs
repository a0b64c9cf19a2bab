//! One client connection: a writer, a buffered reader on a clone of the same socket.

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::report::Report;

/// A connection and its local port (what the agent and ss show).
pub struct Conn {
    pub writer: TcpStream,
    pub reader: BufReader<TcpStream>,
    pub port: u16,
}

/// Connects (5 s timeout) with the long I/O timeouts set on the socket.
pub fn connect(peer: &SocketAddr, io_timeout: Duration) -> Result<Conn, Report> {
    let s = TcpStream::connect_timeout(peer, Duration::from_secs(5))
        .map_err(|e| Report::io("connect", &e, 0))?;
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

/// Reads one line; EOF is its own event (the peer closed), not an OS error.
pub fn read_line(conn: &mut Conn, buf: &mut String) -> Result<(), Report> {
    buf.clear();
    match conn.reader.read_line(buf) {
        Ok(0) => Err(Report::new("eof")
            .port(conn.port)
            .note("peer closed the connection")),
        Ok(_) => Ok(()),
        Err(e) => Err(Report::io("read", &e, conn.port)),
    }
}
