//! Builds the eBPF object with the same routine as `cargo xtask build-ebpf` and copies it
//! into `OUT_DIR` for `include_bytes_aligned!`: the binary never embeds a stale object.
fn main() {
    xtask::ebpf::build_script();
}
