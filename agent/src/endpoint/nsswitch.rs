//! The order of the sources a name is looked up in: the `hosts:` line of
//! /etc/nsswitch.conf, reduced to the two sources lifeline implements, `files` (the hosts
//! file) and `dns`. Without the file or the line, `files dns`: Go's resolver (kubelet's)
//! assumes exactly that (net/nss.go), and it is what every distribution ships.

use std::path::Path;

pub(super) const NSSWITCH: &str = "/etc/nsswitch.conf";

/// One source lifeline implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum NssSource {
    Files,
    Dns,
}

/// The sources in order, and the ones named that lifeline does not implement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Order {
    pub sources: Vec<NssSource>,
    /// E.g. `myhostname`, `mdns4_minimal`, `resolve`: not ours, skipped (logged).
    pub ignored: Vec<String>,
    /// Where the order came from, for the log line.
    pub from: String,
}

impl Order {
    /// `files dns`, because of `why`.
    fn default_because(why: String) -> Self {
        Self {
            sources: vec![NssSource::Files, NssSource::Dns],
            ignored: Vec::new(),
            from: why,
        }
    }
}

impl Order {
    /// `files (HOSTS) then dns (FROM); not lifeline's, skipped: ...`, for the log and
    /// `lifeline check`.
    #[must_use]
    pub(super) fn describe(&self, hosts_file: &Path) -> String {
        let names: Vec<String> = self
            .sources
            .iter()
            .map(|s| match s {
                NssSource::Files => format!("files ({})", hosts_file.display()),
                NssSource::Dns => "dns".to_owned(),
            })
            .collect();
        let skipped = if self.ignored.is_empty() {
            String::new()
        } else {
            format!("; not lifeline's, skipped: {}", self.ignored.join(" "))
        };
        format!("{} ({}){skipped}", names.join(" then "), self.from)
    }
}

/// How a name is looked up here (`lifeline check`).
///
/// # Errors
/// When the hosts file exists but cannot be read.
pub(crate) fn lookup_order(hosts_file: &Path) -> Result<String, String> {
    super::hosts::read(hosts_file).map_err(|e| e.to_string())?;
    Ok(read(Path::new(NSSWITCH)).describe(hosts_file))
}

/// The order in `path` (normally `NSSWITCH`).
#[must_use]
pub(super) fn read(path: &Path) -> Order {
    match std::fs::read_to_string(path) {
        Ok(text) => parse(&text, path),
        Err(e) => Order::default_because(format!(
            "{}: {e}; as Go and glibc, files dns",
            path.display()
        )),
    }
}

/// The last `hosts:` line wins, as in Go's net/nss.go. `[...]` actions are skipped: every failure of
/// one source goes on to the next here (glibc's default action), and a source that knows
/// the name ends the lookup.
#[must_use]
pub(super) fn parse(text: &str, path: &Path) -> Order {
    let line = text
        .lines()
        .map(|l| l.split_once('#').map_or(l, |(l, _)| l).trim())
        .filter_map(|l| l.strip_prefix("hosts:"))
        .next_back();
    let Some(line) = line else {
        return Order::default_because(format!("no hosts: line in {}; files dns", path.display()));
    };
    let mut order = Order {
        sources: Vec::new(),
        ignored: Vec::new(),
        from: format!("hosts: line of {}", path.display()),
    };
    let mut in_action = false;
    for word in line.split_whitespace() {
        if in_action || word.starts_with('[') {
            in_action = !word.ends_with(']');
            continue;
        }
        let source = match word {
            "files" => NssSource::Files,
            "dns" => NssSource::Dns,
            other => {
                order.ignored.push(other.to_owned());
                continue;
            }
        };
        if !order.sources.contains(&source) {
            order.sources.push(source);
        }
    }
    if order.sources.is_empty() {
        let ignored = std::mem::take(&mut order.ignored);
        order = Order::default_because(format!(
            "the hosts: line of {} names neither files nor dns; files dns",
            path.display()
        ));
        order.ignored = ignored;
    }
    order
}

#[cfg(test)]
mod tests {
    use super::{NssSource::*, *};

    fn order(text: &str) -> (Vec<NssSource>, Vec<String>) {
        let o = parse(text, Path::new("/etc/nsswitch.conf"));
        (o.sources, o.ignored)
    }

    #[test]
    fn the_hosts_line_gives_the_order() {
        let debian =
            "passwd: files\nhosts:          files mdns4_minimal [NOTFOUND=return] dns myhostname\n";
        assert_eq!(
            order(debian),
            (
                vec![Files, Dns],
                vec!["mdns4_minimal".into(), "myhostname".into()]
            )
        );
        assert_eq!(order("hosts: dns files\n"), (vec![Dns, Files], vec![]));
        assert_eq!(
            order("hosts: files [ NOTFOUND=return ] dns\n"),
            (vec![Files, Dns], vec![]),
            "an action with spaces is skipped whole"
        );
        assert_eq!(order("hosts: dns\nhosts: files\n"), (vec![Files], vec![]));
    }

    #[test]
    fn no_line_or_no_known_source_is_files_dns() {
        assert_eq!(
            order("passwd: files\n# hosts: dns\n"),
            (vec![Files, Dns], vec![])
        );
        assert_eq!(
            order("hosts: resolve myhostname\n"),
            (
                vec![Files, Dns],
                vec!["resolve".into(), "myhostname".into()]
            )
        );
        let o = parse(
            "hosts: files myhostname dns\n",
            Path::new("/etc/nsswitch.conf"),
        );
        assert_eq!(
            o.describe(Path::new("/etc/hosts")),
            "files (/etc/hosts) then dns (hosts: line of /etc/nsswitch.conf); not lifeline's, skipped: myhostname"
        );
        let missing = read(Path::new("/nonexistent/nsswitch.conf"));
        assert_eq!(missing.sources, [Files, Dns]);
        assert!(
            missing.from.contains("/nonexistent/nsswitch.conf"),
            "{}",
            missing.from
        );
    }
}
