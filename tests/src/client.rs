//! Driving the fixtures: `lab-server` in the server namespace, `lab-client` in the client
//! namespace (optionally inside the watched cgroup), with the client's JSON events parsed.

use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::Value;

use crate::cgroup::Cgroup;
use crate::lab::Lab;
use crate::paths::fixture;
use crate::proc::Proc;

/// One line the client printed (see `lab-client --help`).
#[derive(Clone, Debug)]
pub struct ClientEvent {
    /// `CLOCK_MONOTONIC` ms when the client printed it (comparable with `mono_ms()`).
    pub mono_ms: u64,
    pub event: String,
    pub errno: Option<i32>,
    pub error: Option<String>,
    pub local_port: Option<u16>,
    pub raw: Value,
}

impl ClientEvent {
    pub(crate) fn parse(line: &str) -> Option<Self> {
        let raw: Value = serde_json::from_str(line).ok()?;
        let num = |k: &str| raw.get(k).and_then(Value::as_u64);
        Some(Self {
            mono_ms: num("mono_ms")?,
            event: raw.get("event")?.as_str()?.to_owned(),
            errno: num("errno").and_then(|n| i32::try_from(n).ok()),
            error: raw.get("error").and_then(Value::as_str).map(str::to_owned),
            local_port: num("local_port").and_then(|n| u16::try_from(n).ok()),
            raw,
        })
    }
}

/// Starts `lab-server` in the server namespace and waits until it listens.
///
/// # Errors
/// When it cannot start or does not report listening within 10 s.
pub fn start_server(lab: &Lab, args: &[&str]) -> Result<Proc> {
    let bin = fixture("lab-server")?;
    let cmd = lab.server.command(bin.to_str().context("path")?, args);
    let mut p = Proc::spawn("lab-server", cmd)?;
    p.wait_stdout("the server to listen", Duration::from_secs(10), |l| {
        l.contains("\"listening\"")
    })?;
    Ok(p)
}

/// A running `lab-client`.
pub struct Client {
    pub proc: Proc,
}

impl Client {
    /// Starts `lab-client args...` in the client namespace, inside `cgroup` when given, and
    /// waits for its first connection.
    ///
    /// # Errors
    /// When it cannot start or does not connect within 15 s.
    pub fn start(lab: &Lab, cgroup: Option<&Cgroup>, args: &[&str]) -> Result<Self> {
        Self::start_bin("lab-client", lab, cgroup, args)
    }

    /// `start` for another client fixture printing the same events (`kube-client`).
    ///
    /// # Errors
    /// When it cannot start or does not connect within 15 s.
    pub fn start_bin(
        name: &str,
        lab: &Lab,
        cgroup: Option<&Cgroup>,
        args: &[&str],
    ) -> Result<Self> {
        let bin = fixture(name)?;
        let bin = bin.to_str().context("path")?;
        let cmd = match cgroup {
            Some(cg) => cg.command_in_netns(lab.client.name(), bin, args),
            None => lab.client.command(bin, args),
        };
        let mut c = Self {
            proc: Proc::spawn(name, cmd)?,
        };
        c.proc
            .wait_stdout("the client to connect", Duration::from_secs(15), |l| {
                l.contains("\"connected\"")
            })?;
        Ok(c)
    }

    /// All events so far.
    #[must_use]
    pub fn events(&self) -> Vec<ClientEvent> {
        self.proc
            .stdout_lines()
            .iter()
            .filter_map(|l| ClientEvent::parse(&l.text))
            .collect()
    }

    /// The local port of the first connection.
    #[must_use]
    pub fn local_port(&self) -> Option<u16> {
        self.events()
            .iter()
            .find(|e| e.event == "connected")
            .and_then(|e| e.local_port)
    }

    /// The peer of the first connection.
    #[must_use]
    pub fn peer(&self) -> Option<std::net::SocketAddr> {
        let events = self.events();
        let connected = events.iter().find(|e| e.event == "connected")?;
        connected.raw.get("peer")?.as_str()?.parse().ok()
    }

    /// Waits for an event matching `pred`; fails on timeout with the events seen.
    ///
    /// # Errors
    /// On timeout.
    pub fn wait_event(
        &self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&ClientEvent) -> bool,
    ) -> Result<ClientEvent> {
        crate::util::wait_until(what, timeout, Duration::from_millis(20), || {
            Ok(self.events().into_iter().find(&pred))
        })
        .with_context(|| {
            format!(
                "client events: {}\nclient stderr: {}",
                self.dump(),
                self.proc.stderr_text()
            )
        })
    }

    /// Events that report a failure (error or end of stream).
    #[must_use]
    pub fn errors(&self) -> Vec<ClientEvent> {
        self.events()
            .into_iter()
            .filter(|e| e.event == "error" || e.event == "eof")
            .collect()
    }

    /// The raw event lines, for failure messages.
    #[must_use]
    pub fn dump(&self) -> String {
        let lines = self.proc.stdout_lines();
        lines
            .iter()
            .map(|l| l.text.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }
}
