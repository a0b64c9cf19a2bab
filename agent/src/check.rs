//! TEMP
pub fn run(_args: &crate::cli::RunArgs) -> anyhow::Result<()> { anyhow::bail!("TEMP") }
