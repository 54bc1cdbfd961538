//! `mocc sweep`.

use super::ranks::Ranks;
use clap::Args;
use mocc_eval::suite::Suite;
use mocc_training::config::LoadedConfig;
use mocc_training::sweep::{pooled_by_omega, sweep_on, write_csv, SweepPlan};
use std::io::Write;
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
    /// Training seeds, comma-separated: one run per omega and seed (default: the config's).
    #[arg(long, value_delimiter = ',')]
    seeds: Vec<u64>,
    /// Override a config value (repeatable).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    set: Vec<String>,
    /// Continue an interrupted sweep in --out (give the same arguments): finished runs are
    /// evaluated again, an interrupted one resumes from its newest checkpoint.
    #[arg(long)]
    resume: bool,
}

/// Runs `mocc sweep`; the last stdout line is a JSON array of the sweep rows. Under `mpirun`
/// (a binary built with the `mpi` feature) the runs are spread over the ranks and rank 0
/// writes the outputs.
pub fn run(args: SweepArgs) -> anyhow::Result<()> {
    let ranks = Ranks::join()?;
    sweep_ranks(&ranks, args).map_err(|e| ranks.fail(e))
}

fn sweep_ranks(ranks: &Ranks, args: SweepArgs) -> anyhow::Result<()> {
    let base = LoadedConfig::load(&args.config, &args.set)?;
    let suite = Suite::load(&args.suite)?;
    let rank = ranks.world.rank();
    let plan = SweepPlan {
        omegas: args.omega.clone(),
        seeds: args.seeds.clone(),
        resume: args.resume,
    };
    let rows = sweep_on(&base, &plan, &suite, &args.out, &ranks.world, |r| {
        // One write per line: mpirun forwards every rank's stderr, and lines written in
        // pieces would interleave.
        let line = format!(
            "omega {} seed {} (rank {rank}): {:.1} s, {} env steps, median reward {:.4}\n",
            r.omega, r.seed, r.wall_seconds, r.env_steps, r.p50
        );
        let _ = std::io::stderr().write_all(line.as_bytes());
    })?;
    let Some(rows) = rows else {
        return Ok(());
    };
    write_csv(&args.out.join("sweep.csv"), &rows)?;
    mocc_training::plot::sweep_figure(&args.out.join("sweep.png"), &pooled_by_omega(&rows))?;
    super::print_line(serde_json::to_string(&rows)?)?;
    Ok(())
}
