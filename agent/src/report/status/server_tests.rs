//! The status server's bounds on a real socket: its mode, the cap, the whole-answer deadline.

use std::{io::Read as _, os::unix::fs::PermissionsExt as _, path::PathBuf, time::Instant};

use super::*;
use crate::report::gate::Turned;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "lifeline-status-server-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A daemon loop that answers `body` to at most `asks` requests, then ends.
fn fake_loop(body: Vec<u8>, asks: usize) -> UnboundedSender<Ask> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Ask>();
    std::thread::spawn(move || {
        for _ in 0..asks {
            let Some(reply) = rx.blocking_recv() else {
                return;
            };
            let _ = reply.send(body.clone());
        }
    });
    tx
}

fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let field = status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .unwrap();
    u32::from_str_radix(field.trim(), 8).unwrap()
}

#[test]
fn each_client_gets_the_loop_s_answer() {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Ask>();
    let loop_side = std::thread::spawn(move || {
        let reply = rx.blocking_recv().unwrap();
        reply.send(b"{}".to_vec()).unwrap();
        drop(rx);
    });
    assert_eq!(ask(&tx).as_deref(), Some(&b"{}"[..]));
    loop_side.join().unwrap();
    assert!(ask(&tx).is_none(), "the loop has ended: no answer");
}

#[test]
fn the_socket_is_its_owner_s_alone_whatever_the_umask() {
    let dir = scratch("mode");
    let (ours, plain) = (dir.join("status.sock"), dir.join("plain.sock"));
    let gate = Gate::new("status", MAX_CLIENTS, Turned::default());
    serve(&ours, fake_loop(b"{}".to_vec(), 1), gate).unwrap();
    let _plain = UnixListener::bind(&plain).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let mask = umask();
    // The control: what bind alone leaves under this umask (0755 under the usual 022).
    assert_eq!(mode(&plain), 0o777 & !mask);
    assert_eq!(mode(&ours), 0o600 & !mask, "umask {mask:o}");
    let mut answer = String::new();
    UnixStream::connect(&ours)
        .unwrap()
        .read_to_string(&mut answer)
        .unwrap();
    assert_eq!(answer, "{}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn clients_past_the_cap_are_closed_at_once_and_counted() {
    let dir = scratch("cap");
    let path = dir.join("status.sock");
    let turned = Turned::default();
    // An answer bigger than a socket's send buffer: a client that does not read holds its
    // place until the deadline.
    let big = vec![b' '; 8 << 20];
    serve(
        &path,
        fake_loop(big, MAX_CLIENTS + 1),
        Gate::new("status", MAX_CLIENTS, turned.clone()),
    )
    .unwrap();
    let idle: Vec<UnixStream> = (0..MAX_CLIENTS)
        .map(|_| UnixStream::connect(&path).unwrap())
        .collect();
    let t0 = Instant::now();
    let mut late = UnixStream::connect(&path).unwrap();
    let mut got = Vec::new();
    late.read_to_end(&mut got).unwrap();
    assert!(got.is_empty() && t0.elapsed() < Duration::from_secs(5));
    assert_eq!(turned.refused.get(), 1);
    // What `lifeline status` says then.
    let err = format!(
        "{:#}",
        crate::report::status::client::copy_json(&path, &mut Vec::new()).unwrap_err()
    );
    assert!(
        err.contains("closed the connection without an answer"),
        "{err}"
    );
    assert_eq!(turned.refused.get(), 2);
    drop(idle);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_client_that_reads_a_little_now_and_then_is_dropped_at_the_deadline() {
    let (mut ours, mut theirs) = UnixStream::pair().unwrap();
    // Each read makes room, so a per-write timeout would never fire.
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        for _ in 0..100 {
            std::thread::sleep(Duration::from_millis(20));
            if theirs.read(&mut buf).unwrap_or(0) == 0 {
                return;
            }
        }
    });
    let body = vec![b' '; 16 << 20];
    let t0 = Instant::now();
    let err = write_within(&mut ours, &body, t0 + Duration::from_millis(300)).unwrap_err();
    let took = t0.elapsed();
    assert_eq!(err.kind(), io::ErrorKind::TimedOut);
    assert!(
        (Duration::from_millis(300)..Duration::from_secs(2)).contains(&took),
        "{took:?}"
    );
    drop(ours);
    reader.join().unwrap();
}
