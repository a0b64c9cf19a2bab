//! lab-squatter: a hostile neighbour for the lock test. Started as root in a network
//! namespace, it becomes uid/gid 65534 with no groups (as `nobody` would run), binds the
//! abstract name the agent's lock used to be (`@lifeline/agent`), then tries to make each
//! PATH given (a directory when it ends in `/`, else a file), and holds all it got until it
//! is killed (or 10 minutes pass).
//!
//! Prints one line per step: `uid U pid P`, `bound @NAME` or `bind @NAME: ERROR`, `made PATH`
//! or `denied PATH: ERROR`, then `ready`.

use std::io::Write as _;
use std::os::linux::net::SocketAddrExt as _;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::time::Duration;

const OLD_LOCK: &[u8] = b"lifeline/agent";

fn main() {
    if let Err(e) = lifeline_tests::infra::nobody::become_nobody() {
        eprintln!("lab-squatter: {e}");
        std::process::exit(2);
    }
    let shown = String::from_utf8_lossy(OLD_LOCK);
    let _held =
        match SocketAddr::from_abstract_name(OLD_LOCK).and_then(|a| UnixListener::bind_addr(&a)) {
            Ok(l) => {
                println!("bound @{shown}");
                Some(l)
            }
            Err(e) => {
                println!("bind @{shown}: {e}");
                None
            }
        };
    let mut made = Vec::new();
    for path in std::env::args().skip(1) {
        let r = if path.ends_with('/') {
            std::fs::create_dir(&path).map(|()| None)
        } else {
            std::fs::File::create_new(&path).map(Some)
        };
        match r {
            Ok(f) => {
                println!("made {path}");
                made.push(f);
            }
            Err(e) => println!("denied {path}: {e}"),
        }
    }
    println!("ready");
    let _ = std::io::stdout().flush();
    // Holds until killed (the test's drop); bounded, so a forgotten squatter ends by itself.
    std::thread::sleep(Duration::from_mins(10));
}
