//! The `cgroup_mkdir`/`cgroup_rmdir` record layout the kernel program reads at fixed
//! offsets (`lifeline_common::watch::tracepoint`), checked against tracefs' own `format`
//! file before the programs are attached: a kernel whose record differs gets the polling
//! fallback and a line that says so, never a program reading the wrong bytes.

use std::path::Path;

use anyhow::{Context as _, Result, bail};
use lifeline_common::watch::tracepoint as tp;

const TRACEFS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// # Errors
/// When tracefs or the event is missing, or a field is not where the probe reads it.
pub(crate) fn check_layout(event: &str) -> Result<()> {
    let dir = TRACEFS
        .iter()
        .map(Path::new)
        .find(|d| d.join("events").is_dir())
        .context("tracefs is not mounted")?;
    let path = dir.join("events/cgroup").join(event).join("format");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    check_format(&text).with_context(|| format!("{}", path.display()))
}

fn check_format(text: &str) -> Result<()> {
    for (name, offset, size) in [
        ("root", tp::ROOT_OFFSET, 4),
        ("id", tp::ID_OFFSET, 8),
        ("path", tp::PATH_LOC_OFFSET, 4),
    ] {
        match field(text, name) {
            Some((o, s)) if o == offset && s == size => {}
            Some((o, s)) => bail!(
                "field {name} is at offset {o} size {s}, the probe reads offset {offset} size {size}"
            ),
            None => bail!("no field {name}"),
        }
    }
    Ok(())
}

/// `(offset, size)` of a field in a tracefs `format` text.
fn field(text: &str, name: &str) -> Option<(usize, usize)> {
    text.lines().find_map(|l| {
        let mut parts = l.trim().split(';').map(str::trim);
        let decl = parts.next()?.strip_prefix("field:")?;
        if decl.rsplit(' ').next()? != name {
            return None;
        }
        let num = |p: Option<&str>, key: &str| p?.strip_prefix(key)?.parse().ok();
        Some((num(parts.next(), "offset:")?, num(parts.next(), "size:")?))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The format printed by Linux 6.18 (and, for these fields, 5.10 to 6.12).
    const FORMAT: &str = "name: cgroup_mkdir\nID: 544\nformat:\n\
        \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
        \tfield:int root;\toffset:8;\tsize:4;\tsigned:1;\n\
        \tfield:int level;\toffset:12;\tsize:4;\tsigned:1;\n\
        \tfield:u64 id;\toffset:16;\tsize:8;\tsigned:0;\n\
        \tfield:__data_loc char[] path;\toffset:24;\tsize:4;\tsigned:0;\n";

    #[test]
    fn the_known_layout_passes_and_a_moved_field_is_named() {
        check_format(FORMAT).unwrap();
        let old = FORMAT.replace(
            "field:u64 id;\toffset:16;\tsize:8",
            "field:int id;\toffset:16;\tsize:4",
        );
        let e = check_format(&old).unwrap_err().to_string();
        assert!(e.contains("field id is at offset 16 size 4"), "{e}");
    }
}
