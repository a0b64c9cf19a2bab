//! A real Prometheus server (Debian's `prometheus`) started by a test inside a lab
//! namespace, never as a service: it scrapes the agent's metrics every second and evaluates
//! the shipped alert rules, with every duration divided by 60 (`scaled_rules`), and the test
//! reads its HTTP API. Killed and its data directory removed on drop.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use serde_json::Value;

use crate::assertions::decision::rfc3339_mono_ms;
use crate::infra::netns::NetNs;
use crate::infra::proc::Proc;
use crate::infra::util::{TempDir, wait_until};

/// Scrape and rule evaluation interval: the alert test's unit of time.
pub const INTERVAL: Duration = Duration::from_secs(1);
/// The shipped rules' minutes become seconds.
pub const DIVISOR: u64 = 60;
/// Where Prometheus listens, on the lab namespace's loopback.
const LISTEN: &str = "127.0.0.1:9090";

/// One alert as `/api/v1/alerts` lists it (only pending and firing ones are listed).
#[derive(Clone, Debug)]
pub struct Alert {
    pub name: String,
    pub state: String,
    /// When it became active, as `CLOCK_MONOTONIC` ms.
    pub active_ms: u64,
    pub raw: Value,
}

pub struct Prometheus {
    ns: String,
    proc: Proc,
    _dir: TempDir,
}

impl Prometheus {
    /// Starts Prometheus in `ns`, scraping `target` as job `lifeline` (the job the rules
    /// name) with `rules`, and waits until it is ready.
    ///
    /// # Errors
    /// When it cannot start or is not ready within 30 s.
    pub fn start(ns: &NetNs, target: SocketAddr, rules: &str) -> Result<Self> {
        let dir = TempDir::new()?;
        let every = format!("{}s", INTERVAL.as_secs());
        let config = format!(
            "global: {{scrape_interval: {every}, evaluation_interval: {every}, scrape_timeout: {every}}}\n\
             rule_files: [{rules}]\n\
             scrape_configs:\n  - job_name: lifeline\n    static_configs: [{{targets: [\"{target}\"]}}]\n",
            rules = dir.path().join("rules.yaml").display()
        );
        std::fs::write(dir.path().join("prometheus.yml"), config)?;
        std::fs::write(dir.path().join("rules.yaml"), rules)?;
        let mut cmd = std::process::Command::new("nsenter");
        cmd.arg(format!("--net={}", ns.path()))
            .args(["--", "prometheus"])
            .arg(format!(
                "--config.file={}",
                dir.path().join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={LISTEN}"))
            .arg("--log.level=warn");
        let proc = Proc::spawn("prometheus", cmd)?;
        let p = Self {
            ns: ns.path(),
            proc,
            _dir: dir,
        };
        wait_until(
            "Prometheus ready",
            Duration::from_secs(30),
            Duration::from_millis(200),
            || Ok(p.get("/-/ready").ok().filter(|(s, _)| s.contains(" 200 "))),
        )
        .with_context(|| p.proc.stderr_text())?;
        Ok(p)
    }

    /// `GET path` (HTTP/1.0: the body is whatever comes until the server closes, never
    /// chunked) from inside the namespace; (status line, body).
    ///
    /// # Errors
    /// When the namespace cannot be joined or the request fails.
    pub fn get(&self, path: &str) -> Result<(String, String)> {
        let ns = std::fs::File::open(&self.ns).with_context(|| format!("open {}", self.ns))?;
        let request = format!("GET {path} HTTP/1.0\r\nHost: lab\r\n\r\n");
        let worker = std::thread::spawn(move || -> Result<String> {
            // SAFETY: setns on a valid namespace fd; it only changes this thread's namespace.
            if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                bail!("setns: {}", std::io::Error::last_os_error());
            }
            let addr: SocketAddr = LISTEN.parse()?;
            let mut conn = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
            conn.set_read_timeout(Some(Duration::from_secs(5)))?;
            conn.write_all(request.as_bytes())?;
            let mut out = String::new();
            conn.read_to_string(&mut out)?;
            Ok(out)
        });
        let raw = worker
            .join()
            .map_err(|_| anyhow::anyhow!("request thread panicked"))??;
        let (head, body) = raw.split_once("\r\n\r\n").context("no end of HTTP head")?;
        Ok((
            head.lines().next().unwrap_or_default().to_owned(),
            body.to_owned(),
        ))
    }

    /// The `data` of an API answer whose status is `success`.
    ///
    /// # Errors
    /// When the request fails or the answer is not a success.
    pub fn api(&self, path: &str) -> Result<Value> {
        let (status, body) = self.get(path)?;
        let v: Value = serde_json::from_str(&body).with_context(|| format!("{status}: {body}"))?;
        ensure!(v["status"] == "success", "{path}: {body}");
        Ok(v["data"].clone())
    }

    /// The pending and firing alerts now.
    ///
    /// # Errors
    /// When the API does not answer, or an alert lacks its name or time.
    pub fn alerts(&self) -> Result<Vec<Alert>> {
        let data = self.api("/api/v1/alerts")?;
        let list = data["alerts"].as_array().context("no alerts list")?;
        list.iter()
            .map(|a| {
                let active = a["activeAt"].as_str().context("no activeAt")?;
                Ok(Alert {
                    name: a["labels"]["alertname"]
                        .as_str()
                        .context("no alertname")?
                        .to_owned(),
                    state: a["state"].as_str().unwrap_or_default().to_owned(),
                    active_ms: rfc3339_mono_ms(active)
                        .with_context(|| format!("activeAt {active}"))?,
                    raw: a.clone(),
                })
            })
            .collect()
    }

    /// Waits until the agent's target has been scraped successfully (`up == 1`).
    ///
    /// # Errors
    /// When it is not within 15 s.
    pub fn wait_scraped(&self) -> Result<()> {
        wait_until(
            "Prometheus to scrape the agent",
            Duration::from_secs(15),
            Duration::from_millis(200),
            || {
                let data = self.api("/api/v1/query?query=up%7Bjob%3D%22lifeline%22%7D")?;
                let up = data["result"][0]["value"][1].as_str() == Some("1");
                Ok(up.then_some(()))
            },
        )
        .with_context(|| self.proc.stderr_text())
    }
}

/// The shipped rules with every duration (`for:` and range selectors, whole minutes or
/// hours) divided by `DIVISOR`: minutes become seconds, hours minutes. Mechanical, so the
/// rules under test are the shipped ones; a duration that does not divide is an error.
///
/// # Errors
/// When a duration is not a whole number of minutes or hours, or none was found.
pub fn scaled_rules(shipped: &str) -> Result<String> {
    let mut out = String::with_capacity(shipped.len());
    let mut n = 0;
    for line in shipped.lines() {
        let t = line.trim_start();
        if !(t.starts_with("expr:") || t.starts_with("for:")) {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let mut rest = line;
        while let Some(at) = next_duration(rest) {
            let (before, after) = rest.split_at(at);
            let digits = after.chars().take_while(char::is_ascii_digit).count();
            let value: u64 = after[..digits].parse()?;
            let unit = after[digits..].chars().next().context("unit")?;
            let secs = match unit {
                'm' => value * 60,
                'h' => value * 3600,
                other => bail!("duration {value}{other} in {line:?}: use whole minutes or hours"),
            };
            ensure!(
                secs % DIVISOR == 0,
                "{value}{unit} does not divide by {DIVISOR}"
            );
            out.push_str(before);
            let _ = write!(out, "{}s", secs / DIVISOR);
            rest = &after[digits + 1..];
            n += 1;
        }
        out.push_str(rest);
        out.push('\n');
    }
    ensure!(n > 0, "no duration found in the rules");
    Ok(out)
}

/// Where the next duration starts: after `for: ` or `[`.
fn next_duration(s: &str) -> Option<usize> {
    let a = s.find("for: ").map(|i| i + 5);
    let b = s.find('[').map(|i| i + 1);
    let at = match (a, b) {
        (Some(a), Some(b)) => a.min(b),
        (a, b) => a.or(b)?,
    };
    s[at..]
        .starts_with(|c: char| c.is_ascii_digit())
        .then_some(at)
}

#[cfg(test)]
mod tests {
    use super::scaled_rules;

    #[test]
    fn durations_divide_by_sixty() {
        let got = scaled_rules(
            "      - alert: A\n        expr: increase(x[10m]) > 0 or y[1h]\n        for: 5m\n        annotations: {d: \"for: 5m [3m]\"}\n",
        )
        .unwrap();
        assert_eq!(
            got,
            "      - alert: A\n        expr: increase(x[10s]) > 0 or y[60s]\n        for: 5s\n        annotations: {d: \"for: 5m [3m]\"}\n"
        );
        assert!(scaled_rules("for: 30s\n").is_err(), "seconds do not divide");
        assert!(scaled_rules("expr: up\n").is_err(), "no duration");
    }

    #[test]
    fn the_shipped_rules_scale() {
        let shipped = std::fs::read_to_string(
            crate::infra::paths::workspace().join("packaging/prometheus/lifeline-rules.yaml"),
        )
        .unwrap();
        let scaled = scaled_rules(&shipped).unwrap();
        assert!(
            scaled.contains("for: 5s") && scaled.contains("[10s]"),
            "{scaled}"
        );
        assert!(
            !scaled.contains("m]") && !scaled.contains("for: 5m"),
            "{scaled}"
        );
    }
}
