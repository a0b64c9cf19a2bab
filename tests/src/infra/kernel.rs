//! What the running kernel should do, from `lifeline_common::features` (the table `lifeline
//! check` and the docs use too), and the lab's report of what it did.
//!
//! A test that exercises a kernel-dependent path asks `has(feature)`: where the kernel has
//! it the full behaviour must hold, where it lacks it the test asserts exactly the
//! degradation `Feature::without` documents (nothing is skipped). Then it calls `report`,
//! which prints one `kernel-matrix:` line: `cargo xtask test --kernel` collects those lines
//! from every guest into docs/KERNELS.md, and a feature no test reported fails the matrix.

pub use lifeline_common::features::{self, Feature};
use serde_json::json;

/// The running kernel's release, e.g. `5.10.0-46-cloud-amd64`.
#[must_use]
pub fn release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// Whether the running kernel has `f` (by release; the matrix runs stock kernels).
#[must_use]
pub fn has(f: &Feature) -> bool {
    features::parse_release(&release()).is_some_and(|v| f.in_kernel(v))
}

/// `(major, minor)` of the release where `f` appeared, as "6.1".
#[must_use]
pub fn since(f: &Feature) -> String {
    format!("{}.{}", f.since.0, f.since.1)
}

/// Called once the test has asserted what this kernel must do about `f`: the feature
/// worked ("pass") or degraded exactly as documented ("degraded"); `shows` is what the user
/// saw (a status cell, a check row), quoted in docs/KERNELS.md.
pub fn report(f: &Feature, shows: &str) {
    let result = if has(f) { "pass" } else { "degraded" };
    let line = json!({ "feature": f.id, "result": result, "shows": shows });
    eprintln!("kernel-matrix: {line}");
}
