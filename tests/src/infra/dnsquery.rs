//! Plain DNS queries from inside a lab namespace, without `dig`: the lab checks what its
//! dnsmasq really answers (addresses and TTL) before a scenario relies on it.
//!
//! The query runs on a short-lived thread that joins the namespace with `setns(2)`: a network
//! namespace is per thread, so the test process itself stays where it is.

use std::fs::File;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use hickory_resolver::proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use hickory_resolver::proto::rr::{Name, RData, RecordType};

/// What one query returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub rcode: ResponseCode,
    /// A / AAAA addresses, sorted.
    pub addrs: Vec<IpAddr>,
    /// The TTL of each address record, in answer order.
    pub ttls: Vec<u32>,
}

/// Queries `server` for `name` (A and AAAA, merged), from inside network namespace `ns`.
///
/// # Errors
/// When the namespace cannot be joined, or a query gets no parseable answer (3 tries, 1 s each).
pub fn lookup(ns: &str, server: IpAddr, name: &str) -> Result<Answer> {
    let (ns, name) = (ns.to_owned(), name.to_owned());
    let thread = std::thread::spawn(move || -> Result<Answer> {
        let file = File::open(crate::infra::cmd::netns_path(&ns))
            .with_context(|| format!("netns {ns}"))?;
        // SAFETY: a valid namespace fd; CLONE_NEWNET affects only this (our own) thread.
        let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        ensure!(rc == 0, "setns {ns}: {}", std::io::Error::last_os_error());
        let a = query(server, &name, RecordType::A)?;
        let aaaa = query(server, &name, RecordType::AAAA)?;
        let mut addrs: Vec<IpAddr> = a.addrs.iter().chain(&aaaa.addrs).copied().collect();
        addrs.sort_unstable();
        let rcode = if a.rcode == ResponseCode::NoError {
            aaaa.rcode
        } else {
            a.rcode
        };
        Ok(Answer {
            rcode,
            addrs,
            ttls: a.ttls.into_iter().chain(aaaa.ttls).collect(),
        })
    });
    thread
        .join()
        .map_err(|_| anyhow::anyhow!("the DNS query thread panicked"))?
}

/// One query of one type, over UDP port 53, in the calling thread's namespace.
fn query(server: IpAddr, name: &str, rtype: RecordType) -> Result<Answer> {
    let mut msg = Message::new();
    let id = u16::try_from(std::process::id() & 0xffff).unwrap_or(1);
    msg.set_id(id)
        .set_message_type(MessageType::Query)
        .set_op_code(OpCode::Query)
        .set_recursion_desired(true)
        .add_query(Query::query(Name::from_ascii(name)?, rtype));
    let packet = msg.to_vec()?;
    let local: SocketAddr = if server.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let sock = UdpSocket::bind(local)?;
    sock.set_read_timeout(Some(Duration::from_secs(1)))?;
    sock.connect((server, 53))?;
    let mut buf = [0u8; 1500];
    let mut last_err = None;
    for _ in 0..3 {
        sock.send(&packet)?;
        match sock.recv(&mut buf) {
            Ok(n) => {
                let reply = Message::from_vec(&buf[..n])?;
                if reply.id() == id {
                    return Ok(answer(&reply));
                }
            }
            Err(e) => last_err = Some(e),
        }
    }
    bail!("no answer from {server} for {name} {rtype}: {last_err:?}")
}

fn answer(reply: &Message) -> Answer {
    let mut addrs = Vec::new();
    let mut ttls = Vec::new();
    for r in reply.answers() {
        let ip = match r.data() {
            RData::A(a) => IpAddr::V4(a.0),
            RData::AAAA(a) => IpAddr::V6(a.0),
            _ => continue,
        };
        addrs.push(ip);
        ttls.push(r.ttl());
    }
    addrs.sort_unstable();
    Answer {
        rcode: reply.response_code(),
        addrs,
        ttls,
    }
}
