//! Subcommands of the `mocc` binary: argument parsing and output only; the work is in the
//! library crates.

pub mod adapt;
pub mod bench;
pub mod eval;
pub mod experiment;
pub mod export;
pub mod net;
pub mod pair;
pub mod plot;
pub mod progress;
pub mod ranks;
pub mod recipe;
pub mod simulate;
pub mod sweep;
pub mod train;

use anyhow::Context;
use mocc_gym::Scenario;
use std::path::Path;
use std::sync::Arc;

/// A file shipped in this mocc's source tree (`configs/...`), found wherever the command runs:
/// the default of an option, which must not depend on the current folder. Run from the source
/// tree itself it is the short relative path (policies are named by their path in results).
pub fn shipped(relative: &str) -> std::path::PathBuf {
    let absolute = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    let here = Path::new(relative);
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same(here, &absolute) {
        here.to_path_buf()
    } else {
        absolute
    }
}

/// Loads and validates a scenario file.
pub fn load_scenario(path: &Path) -> anyhow::Result<Arc<Scenario>> {
    let scenario = Scenario::load(path).context("cannot use the scenario")?;
    Ok(Arc::new(scenario))
}

/// Refuses a count flag outside `[1, max]`: every count a command takes has a stated maximum,
/// so that no typo runs without bound.
pub fn check_count(flag: &str, value: u64, max: u64) -> anyhow::Result<()> {
    if value == 0 || value > max {
        anyhow::bail!("--{flag}: must lie in [1, {max}] (got {value})");
    }
    Ok(())
}

/// Writes `line` and a newline to stdout and flushes, as an error (not a panic) when stdout is
/// closed or full: a command's result line is checked like every file it writes.
pub fn print_line(line: impl std::fmt::Display) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .context("cannot write to stdout")
}
