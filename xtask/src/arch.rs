//! The architectures lifeline ships for: one static musl binary each, built on this `x86_64`
//! host. The eBPF object is the same little-endian `bpfel` object for both (it is built for
//! `bpfel-unknown-none`, not for the agent's target) and everything it reads of kernel
//! structures is relocated from the running kernel's BTF, so only the user-space build differs.
//!
//! aarch64 links with the toolchain's own `rust-lld` and the musl target's self-contained C
//! runtime (`.cargo/config.toml`), so no cross C toolchain is needed; the agent has no C code.

/// A target of the image, the .deb, the RPM and the kernel matrix.
pub(crate) struct Arch {
    /// The Rust target triple of the static build.
    pub triple: &'static str,
    /// The name in OCI platforms and Debian architectures (the two agree for these).
    pub name: &'static str,
    /// The name in RPM's architectures (`uname -m`'s).
    pub rpm: &'static str,
    /// The binutils `strip` that reads this architecture's ELF (the host's reads x86 only),
    /// and the Debian package that has it.
    pub strip: (&'static str, &'static str),
    /// The name of its build step in the phase summary.
    pub phase: &'static str,
    /// How this `x86_64` host runs its binary: natively, or under qemu's user-mode emulator
    /// (`qemu-user`, without binfmt registration: the host's exec behaviour is unchanged).
    pub emulator: Option<(&'static str, &'static str)>,
}

pub(crate) const AMD64: Arch = Arch {
    triple: "x86_64-unknown-linux-musl",
    name: "amd64",
    rpm: "x86_64",
    strip: ("strip", "binutils"),
    phase: "musl build amd64",
    emulator: None,
};

pub(crate) const ARM64: Arch = Arch {
    triple: "aarch64-unknown-linux-musl",
    name: "arm64",
    rpm: "aarch64",
    strip: ("aarch64-linux-gnu-strip", "binutils-aarch64-linux-gnu"),
    phase: "musl build arm64",
    emulator: Some(("qemu-aarch64", "qemu-user")),
};

/// In the order of the image index (the host's own first).
pub(crate) const ALL: [&Arch; 2] = [&AMD64, &ARM64];
