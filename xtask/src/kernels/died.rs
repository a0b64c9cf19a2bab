//! A kernel-matrix guest that powered off before its runner finished (`vm.rs` boots it once
//! more): how far it got, read from what it left in its results directory.

use std::{fs, path::Path, time::Duration};

/// A guest that powered off before its runner wrote `runner-secs`: how far it got.
#[derive(Debug)]
pub(super) struct Died(String);

impl std::fmt::Display for Died {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Died {
    /// After `wall` of the guest's life: the init's last line, the tests started and not
    /// finished, and the console's first line of a kernel in trouble (the oops that began it).
    pub(super) fn read(out: &Path, wall: Duration) -> Self {
        let init = fs::read_to_string(out.join("init.log")).unwrap_or_default();
        let mut in_flight: Vec<String> = fs::read_dir(out.join("tests"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e
                    .file_name()
                    .to_string_lossy()
                    .strip_suffix(".log")?
                    .to_owned();
                (!out.join(format!("tests/{name}.rc")).exists()).then_some(name)
            })
            .collect();
        in_flight.sort();
        let console = fs::read_to_string(out.join("console.log")).unwrap_or_default();
        let why = console
            .lines()
            .find(|l| KERNEL_WORDS.iter().any(|w| l.contains(w)))
            .unwrap_or("no panic or oops line on the console")
            .trim();
        Self(format!(
            "after {:.0} s; last init line {:?}; tests in flight: [{}]; the console: {why:?}",
            wall.as_secs_f64(),
            init.lines().last().unwrap_or("none"),
            in_flight.join(", ")
        ))
    }
}

/// What a kernel in trouble prints on the console (a clean run prints none of them).
const KERNEL_WORDS: [&str; 6] = [
    "Kernel panic",
    "BUG:",
    "Oops",
    "general protection fault",
    "invalid opcode",
    "RIP:",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_tests_in_flight_and_the_kernel_s_last_words() {
        let out = std::env::temp_dir().join(format!("xtask-died-{}", std::process::id()));
        let _ = fs::remove_dir_all(&out);
        fs::create_dir_all(out.join("tests")).unwrap();
        fs::write(
            out.join("init.log"),
            "kernel 6.12\nuserland ready; up 3.64s\n",
        )
        .unwrap();
        for f in ["a::done.log", "a::done.rc", "b::running.log"] {
            fs::write(out.join("tests").join(f), "0 1\n").unwrap();
        }
        fs::write(
            out.join("console.log"),
            "[ 70.1] Oops: int3: 0000 [#1] PREEMPT SMP\n[ 70.2] RIP: 0010:text_poke+0x1\n[ 70.3] reboot\n",
        )
        .unwrap();
        let died = Died::read(&out, Duration::from_secs(73)).to_string();
        fs::remove_dir_all(&out).unwrap();
        assert!(died.contains("after 73 s"), "{died}");
        assert!(died.contains("\"userland ready; up 3.64s\""), "{died}");
        assert!(died.contains("in flight: [b::running]"), "{died}");
        assert!(died.contains("Oops: int3"), "{died}");
    }
}
