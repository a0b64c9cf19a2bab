//! The environment an outer cargo leaves behind, which a nested cargo must not see.
//!
//! `agent/build.rs` runs the eBPF build inside the agent's build, and `cargo xtask` runs under
//! `cargo run`; both inherit variables that a nested cargo (and its build scripts) would obey.
//! aya-build removes only `RUSTC` and `RUSTC_WORKSPACE_WRAPPER`; we remove everything cargo
//! sets for a build script, plus the build config users commonly set through the environment.

use std::{env, process::Command};

/// Set exactly as named: the outer compiler and wrappers (under `cargo clippy`, clippy-driver
/// would "build" the eBPF crate), its flags, its jobserver (a build script is not promised the
/// fds) and the per-package build-script variables (nested build scripts such as aya-ebpf's
/// read `HOST`/`TARGET`, and must get them from the nested cargo).
const EXACT: &str = "CARGO CARGO_CRATE_NAME CARGO_ENCODED_RUSTDOCFLAGS CARGO_ENCODED_RUSTFLAGS \
    CARGO_MAKEFLAGS CARGO_PRIMARY_PACKAGE DEBUG HOST MAKEFLAGS MFLAGS NUM_JOBS OPT_LEVEL OUT_DIR \
    PROFILE RUSTC RUSTC_LINKER RUSTC_WORKSPACE_WRAPPER RUSTC_WRAPPER RUSTDOC RUSTDOCFLAGS \
    RUSTFLAGS RUSTUP_TOOLCHAIN TARGET";

/// Families: `CARGO_BUILD_*`/`CARGO_TARGET_*` are config as environment (target, target-dir,
/// build-dir, rustc, rustflags; a shared target dir would have the nested cargo wait forever
/// for the lock the outer one holds); the rest are per-package build-script inputs.
const PREFIXES: &str = "CARGO_BUILD_ CARGO_CFG_ CARGO_FEATURE_ CARGO_MANIFEST_ CARGO_PKG_ \
    CARGO_TARGET_ DEP_ __CARGO";

/// Removes the outer cargo's leftovers from `cmd`'s environment. User-level settings such as
/// `CARGO_HOME`, `CARGO_INSTALL_ROOT`, `CARGO_NET_*` and `CARGO_HTTP_*` are kept.
pub fn scrub(cmd: &mut Command) {
    for (key, _) in env::vars_os() {
        if key.to_str().is_some_and(leaks) {
            cmd.env_remove(key);
        }
    }
}

fn leaks(key: &str) -> bool {
    EXACT.split_whitespace().any(|k| k == key)
        || PREFIXES.split_whitespace().any(|p| key.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::leaks;

    #[test]
    fn keeps_user_config_and_drops_outer_build_state() {
        let kept = "CARGO_HOME CARGO_INSTALL_ROOT CARGO_NET_OFFLINE CARGO_TERM_COLOR PATH HOME";
        for key in kept.split_whitespace() {
            assert!(!leaks(key), "{key}");
        }
        let dropped = "RUSTC RUSTC_WORKSPACE_WRAPPER CARGO_TARGET_DIR CARGO_BUILD_TARGET OUT_DIR \
            CARGO_CFG_TARGET_ARCH CARGO_MAKEFLAGS CARGO_ENCODED_RUSTFLAGS TARGET RUSTFLAGS";
        for key in dropped.split_whitespace() {
            assert!(leaks(key), "{key}");
        }
    }
}
