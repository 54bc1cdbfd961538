//! Subcommands of the `mocc` binary: argument parsing and output only; the work is in the
//! library crates.

pub mod adapt;
pub mod bench;
pub mod eval;
pub mod experiment;
pub mod export;
pub mod plot;
pub mod simulate;
pub mod sweep;
pub mod train;

use anyhow::Context;
use mocc_gym::Scenario;
use std::path::Path;
use std::sync::Arc;

/// Loads and validates a scenario file.
pub fn load_scenario(path: &Path) -> anyhow::Result<Arc<Scenario>> {
    let scenario = Scenario::load(path).context("cannot use the scenario")?;
    Ok(Arc::new(scenario))
}
