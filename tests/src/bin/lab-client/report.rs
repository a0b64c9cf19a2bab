//! The client's event lines: one JSON object per line, stamped with both clocks.

use std::sync::OnceLock;
use std::time::Instant;

use serde_json::{Map, Value};

/// One event to print.
pub(crate) struct Report(Map<String, Value>);

fn start() -> Instant {
    static START: OnceLock<Instant> = OnceLock::new();
    *START.get_or_init(Instant::now)
}

impl Report {
    pub(crate) fn new(event: &str) -> Self {
        let mut m = Map::new();
        m.insert("event".into(), event.into());
        Self(m)
    }

    /// An I/O failure: the errno with its symbolic name, so logs read like strace.
    pub(crate) fn io(op: &str, e: &std::io::Error, port: u16) -> Self {
        let mut r = Self::new("error").port(port);
        r.0.insert("op".into(), op.into());
        if let Some(n) = e.raw_os_error() {
            r.0.insert("errno".into(), n.into());
        }
        let name = e.raw_os_error().map_or("", errno_name);
        r.0.insert(
            "error".into(),
            format!("{name}{}{e}", if name.is_empty() { "" } else { ": " }).into(),
        );
        r
    }

    pub(crate) fn port(mut self, port: u16) -> Self {
        if port != 0 {
            self.0.insert("local_port".into(), port.into());
        }
        self
    }

    pub(crate) fn num(mut self, key: &str, n: u64) -> Self {
        self.0.insert(key.into(), n.into());
        self
    }

    pub(crate) fn text(mut self, key: &str, text: &str) -> Self {
        self.0.insert(key.into(), text.into());
        self
    }

    pub(crate) fn note(mut self, text: &str) -> Self {
        self.0.insert("note".into(), text.into());
        self
    }
}

/// Prints the event (stdout is line buffered, so each line leaves at once).
pub(crate) fn emit(r: &Report) {
    let mut m = Map::new();
    m.insert(
        "t_ms".into(),
        u64::try_from(start().elapsed().as_millis())
            .unwrap_or(0)
            .into(),
    );
    m.insert("mono_ms".into(), lifeline_tests::mono_ms().into());
    m.extend(r.0.clone());
    println!("{}", Value::Object(m));
}

fn errno_name(n: i32) -> &'static str {
    match n {
        libc::ECONNABORTED => "ECONNABORTED",
        libc::ECONNRESET => "ECONNRESET",
        libc::ECONNREFUSED => "ECONNREFUSED",
        libc::EPIPE => "EPIPE",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::EHOSTUNREACH => "EHOSTUNREACH",
        libc::ENETUNREACH => "ENETUNREACH",
        libc::EAGAIN => "EAGAIN (I/O timeout)",
        libc::EINPROGRESS => "EINPROGRESS",
        _ => "",
    }
}
