//! `docdex bench`: placeholder replaced below.
use super::output::Out;
use crate::engine::Engine;

/// Arguments.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {}

/// Runs the benchmark.
pub fn run(_e: &Engine, _o: &Out, _a: BenchArgs) -> anyhow::Result<()> {
    anyhow::bail!("not yet")
}
