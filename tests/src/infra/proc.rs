//! A child process that is killed and reaped on drop, with its output lines collected.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::infra::util::{mono_ms, wait_until};

/// One output line and when the test process read it (`CLOCK_MONOTONIC` ms).
#[derive(Clone, Debug)]
pub struct Line {
    pub at_ms: u64,
    pub text: String,
}

/// Lines collected by a reader thread; shared with the thread, which stops at EOF.
pub type Lines = Arc<Mutex<Vec<Line>>>;

/// A running child. Dropping it sends SIGKILL and reaps it, so no fixture outlives its test.
pub struct Proc {
    child: Child,
    name: String,
    pub stdout: Lines,
    pub stderr: Lines,
    readers: Vec<JoinHandle<()>>,
    /// Set once reaped: from then on its pid may belong to another process.
    status: Option<ExitStatus>,
}

impl Proc {
    /// Starts `cmd` with stdin closed and stdout/stderr collected line by line.
    ///
    /// # Errors
    /// When the process cannot be started.
    pub fn spawn(name: &str, mut cmd: Command) -> Result<Self> {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .with_context(|| format!("cannot start {name}: {cmd:?}"))?;
        let (stdout, out_reader) = collect(child.stdout.take());
        let (stderr, err_reader) = collect(child.stderr.take());
        Ok(Self {
            child,
            name: name.to_owned(),
            stdout,
            stderr,
            readers: out_reader.into_iter().chain(err_reader).collect(),
            status: None,
        })
    }

    #[must_use]
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A copy of the stdout lines so far.
    #[must_use]
    pub fn stdout_lines(&self) -> Vec<Line> {
        self.stdout.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Everything the process wrote to stderr so far, for failure messages.
    #[must_use]
    pub fn stderr_text(&self) -> String {
        let lines = self.stderr.lock().map(|l| l.clone()).unwrap_or_default();
        lines
            .iter()
            .map(|l| l.text.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The exit status if it has exited (non-blocking).
    pub fn try_status(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status
    }

    /// Waits for a stdout line matching `pred`, failing early if the process exits.
    ///
    /// # Errors
    /// On timeout or early exit, with the captured stderr.
    pub fn wait_stdout(
        &mut self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> Result<Line> {
        let stdout = self.stdout.clone();
        let name = self.name.clone();
        let res = wait_until(what, timeout, Duration::from_millis(20), || {
            if let Some(l) = stdout
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .iter()
                .find(|l| pred(&l.text))
            {
                return Ok(Some(l.clone()));
            }
            if let Some(st) = self.try_status() {
                anyhow::bail!("{name} exited ({st}) before {what}");
            }
            Ok(None)
        });
        // Its last words on stdout too: the lab's clients report a failed connect there.
        let tail: Vec<String> = self
            .stdout_lines()
            .iter()
            .rev()
            .take(3)
            .map(|l| l.text.clone())
            .collect();
        res.map_err(|e| {
            anyhow::anyhow!(
                "{e:#}; {}'s stderr:\n{}\nlast stdout lines (newest first): {tail:?}",
                self.name,
                self.stderr_text()
            )
        })
    }

    /// Sends a signal (e.g. SIGTERM) without waiting; nothing once the child is reaped.
    pub fn signal(&self, sig: i32) {
        if self.status.is_some() {
            return;
        }
        if let Ok(pid) = i32::try_from(self.child.id()) {
            // SAFETY: kill(2) on our own, not yet reaped child: the pid cannot be reused.
            unsafe { libc::kill(pid, sig) };
        }
    }

    /// Waits up to `timeout` for the exit; None if it is still running. After an exit, every
    /// line the process wrote is in `stdout`/`stderr` (the readers are given up to 1 s to
    /// reach EOF, which a descendant holding the pipe open would delay).
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let status = wait_until("exit", timeout, Duration::from_millis(20), || {
            Ok(self.try_status())
        })
        .ok()?;
        let drained = wait_until(
            "EOF",
            Duration::from_secs(1),
            Duration::from_millis(5),
            || {
                Ok(self
                    .readers
                    .iter()
                    .all(JoinHandle::is_finished)
                    .then_some(()))
            },
        );
        if drained.is_err() {
            eprintln!("lab: {}'s output pipes stay open after its exit", self.name);
        }
        Some(status)
    }

    /// Kills (SIGKILL) and reaps; the returned status tells how it ended.
    pub fn kill(&mut self) -> Option<ExitStatus> {
        if let Some(st) = self.try_status() {
            return Some(st);
        }
        let _ = self.child.kill();
        self.status = self.child.wait().ok();
        self.status
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Reads a pipe line by line on a thread; the thread ends at EOF (when the process exits).
fn collect(pipe: Option<impl Read + Send + 'static>) -> (Lines, Option<JoinHandle<()>>) {
    let lines: Lines = Arc::default();
    let reader = pipe.map(|pipe| {
        let sink = lines.clone();
        std::thread::spawn(move || {
            for text in BufReader::new(pipe).lines().map_while(Result::ok) {
                sink.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(Line {
                        at_ms: mono_ms(),
                        text,
                    });
            }
        })
    });
    (lines, reader)
}
