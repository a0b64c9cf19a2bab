//! The eBPF object the binary carries, and the one line a binary built without it gives.

use anyhow::Result;

/// The object built from `agent-ebpf` by `build.rs` (the same routine as
/// `cargo xtask build-ebpf`), embedded so the binary is self-contained. Empty when the build
/// skipped it (`LIFELINE_SKIP_EBPF=1`, for check/clippy): see [`embedded`].
pub(super) static OBJECT: &[u8] = aya::include_bytes_aligned!(env!("LIFELINE_EBPF_OBJECT"));

const NO_OBJECT: &str =
    "this binary was built with LIFELINE_SKIP_EBPF=1 and has no eBPF object; rebuild without it";

/// The embedded object, or the one line that says this binary was never meant to run.
///
/// # Errors
/// When the build skipped the object.
pub(crate) fn object() -> Result<&'static [u8]> {
    embedded(OBJECT)
}

/// Empty means skipped (aya would report an empty object as a bare ELF parse error).
fn embedded(object: &'static [u8]) -> Result<&'static [u8]> {
    if object.is_empty() {
        anyhow::bail!(NO_OBJECT);
    }
    Ok(object)
}

#[cfg(test)]
mod tests {
    use super::{NO_OBJECT, OBJECT, embedded};

    #[test]
    fn an_empty_object_is_refused_with_the_rebuild_line() {
        let err = embedded(&[]).unwrap_err();
        assert_eq!(format!("{err:#}"), NO_OBJECT);
        assert!(NO_OBJECT.contains("LIFELINE_SKIP_EBPF=1"));
    }

    #[test]
    fn the_embedded_object_of_a_normal_build_is_an_elf_file() {
        // The unit tests embed what the binary embeds: built with the skip switch, this fails.
        assert_eq!(embedded(OBJECT).unwrap().get(..4), Some(&b"\x7fELF"[..]));
    }
}
