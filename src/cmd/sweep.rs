//! `mocc sweep`.

use clap::Args;
use mocc_training::config::LoadedConfig;
use mocc_training::suite::Suite;
use mocc_training::sweep::{sweep, write_csv};
use std::path::PathBuf;

/// Arguments of `mocc sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// MOCC training config (its budget per landmark is kept for every omega).
    config: PathBuf,
    /// Landmark counts, comma-separated (each C(n-1, 2): 3, 6, 10, 15, 21, 28, 36, ...).
    #[arg(long, value_delimiter = ',', required = true)]
    omega: Vec<usize>,
    /// Evaluation suite.
    #[arg(long, default_value = "configs/eval/mocc-grid.yaml")]
    suite: PathBuf,
    /// Output folder (runs, sweep.csv, sweep.png).
    #[arg(long, default_value = "runs/sweep")]
    out: PathBuf,
    /// Override a config value (repeatable).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    set: Vec<String>,
}

/// Runs `mocc sweep`; the last stdout line is a JSON array of the sweep rows.
pub fn run(args: SweepArgs) -> anyhow::Result<()> {
    let base = LoadedConfig::load(&args.config, &args.set)?;
    let suite = Suite::load(&args.suite)?;
    let rows = sweep(&base, &args.omega, &suite, &args.out, |r| {
        eprintln!(
            "omega {}: {:.1} s, {} env steps, median reward {:.4}",
            r.omega, r.wall_seconds, r.env_steps, r.p50
        );
    })?;
    write_csv(&args.out.join("sweep.csv"), &rows)?;
    let fig: Vec<(usize, f64, f64, Vec<f64>)> = rows
        .iter()
        .map(|r| (r.omega, r.wall_seconds, r.p50, r.rewards.clone()))
        .collect();
    mocc_training::plot::sweep_figure(&args.out.join("sweep.png"), &fig)?;
    super::print_line(serde_json::to_string(&rows)?)?;
    Ok(())
}
