//! A tc program's own cost per packet, without `bpf_stats`: the kernel runs it on one packet
//! a million times in a loop and divides its clock by the runs (`BPF_PROG_TEST_RUN` with
//! `repeat`, `bpf_test_run()` in
//! <https://github.com/torvalds/linux/blob/v6.18/net/bpf/test_run.c>), through `bpftool prog
//! run`. The kernel gives the packet a socket of its own (`bpf_prog_test_run_skb()` sets
//! `skb->sk` to a dummy socket), so the program takes the path of the node's unwatched
//! small packets: its count, the length, the socket's cookie, a `POKE` lookup that misses.

use anyhow::{Context, Result};

/// Runs per measurement, and measurements (the median is kept).
const REPEAT: &str = "1000000";
const ROUNDS: usize = 5;

/// A bare TCP ACK over IPv4 on Ethernet, 54 octets: what a node sends most of.
fn bare_ack() -> Vec<u8> {
    let mut p = Vec::with_capacity(54);
    p.extend([0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x08, 0x00]);
    // IPv4: version 4, IHL 5, total 40, TTL 64, TCP, 192.0.2.1 -> 192.0.2.2 (checksum
    // unchecked here).
    p.extend([
        0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0, 192, 0, 2, 1, 192, 0, 2, 2,
    ]);
    // TCP: 40000 -> 443, seq 1, ack 1, data offset 5, ACK, window 512.
    p.extend([
        0x9c, 0x40, 0x01, 0xbb, 0, 0, 0, 1, 0, 0, 0, 1, 0x50, 0x10, 0x02, 0, 0, 0, 0, 0,
    ]);
    p
}

/// The median over `ROUNDS` of program `id`'s average ns per run on `bare_ack()`.
pub(crate) fn ns_per_packet(id: u32) -> Result<f64> {
    let file = std::env::temp_dir().join(format!("lifeline-bench-ack-{}", std::process::id()));
    std::fs::write(&file, bare_ack()).context("a file for the test packet")?;
    let all = rounds(id, &file.to_string_lossy());
    let _ = std::fs::remove_file(&file);
    let mut all = all?;
    all.sort_by(f64::total_cmp);
    Ok(all[ROUNDS / 2])
}

fn rounds(id: u32, path: &str) -> Result<Vec<f64>> {
    let mut all = Vec::new();
    for _ in 0..ROUNDS {
        let out =
            lifeline_tests::infra::cmd::output(std::process::Command::new("bpftool").args([
                "prog",
                "run",
                "id",
                &id.to_string(),
                "data_in",
                path,
                "repeat",
                REPEAT,
            ]))?;
        let text = String::from_utf8_lossy(&out.stdout);
        all.push(parse(&text).with_context(|| format!("bpftool prog run said: {text}"))?);
    }
    Ok(all)
}

/// `Return value: 4294967295, duration (average): 31ns`.
fn parse(text: &str) -> Option<f64> {
    let rest = text.split("duration (average):").nth(1)?;
    rest.trim().trim_end_matches("ns").trim().parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_average_duration_is_read_from_bpftool() {
        let out = "Return value: 4294967295, duration (average): 31ns\n";
        assert_eq!(super::parse(out), Some(31.0));
        assert_eq!(super::parse("Return value: 0\n"), None);
    }

    #[test]
    fn the_test_packet_is_a_54_octet_bare_ack() {
        let p = super::bare_ack();
        assert_eq!(p.len(), 54);
        assert_eq!(p[14 + 9], 6);
        assert_eq!(p[14 + 20 + 13], 0x10);
    }
}
