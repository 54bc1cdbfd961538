//! `mocc experiment`.

use anyhow::Context;
use clap::{Args, Subcommand};
use mocc_eval::suite::Suite;
use mocc_training::adaptation::{read_pool, seen_objectives};
use mocc_training::adaptation_metrics::sample_new_objectives;
use mocc_training::checkpoint::Checkpoint;
use mocc_training::experiment::{run_adaptation_experiment, AdaptationExperiment};
use std::path::PathBuf;

/// Arguments of `mocc experiment`.
#[derive(Debug, Args)]
pub struct ExperimentArgs {
    #[command(subcommand)]
    what: Experiment,
}

#[derive(Debug, Subcommand)]
enum Experiment {
    /// MOCC's adaptation experiments: initial reward and convergence speed on new objectives
    /// against from-scratch single-objective policies, and forgetting with and without replay.
    Adaptation(AdaptationArgs),
}

/// Arguments of `mocc experiment adaptation`.
#[derive(Debug, Args)]
struct AdaptationArgs {
    /// The MOCC-pretrained checkpoint, or a run folder (its newest checkpoint).
    #[arg(long)]
    from: PathBuf,
    /// New objectives (YAML/JSON list of [thr, lat, loss]); default: --k drawn from the
    /// simplex, seeded, away from the checkpoint's landmarks.
    #[arg(long)]
    objectives: Option<PathBuf>,
    /// Number of new objectives to draw.
    #[arg(long, default_value_t = 5)]
    k: usize,
    /// Seed of the drawn objectives.
    #[arg(long, default_value_t = 2022)]
    seed: u64,
    /// Adaptation iterations of the MOCC model per objective.
    #[arg(long, default_value_t = 60)]
    iterations: u64,
    /// Iterations of each from-scratch policy.
    #[arg(long, default_value_t = 600)]
    scratch_iterations: u64,
    /// Iterations of each forgetting run.
    #[arg(long, default_value_t = 64)]
    forgetting_iterations: u64,
    /// Evaluate the old objective every this many iterations.
    #[arg(long, default_value_t = 8)]
    snapshot_every: u64,
    /// Suite of the old-objective evaluation.
    #[arg(long, default_value = "configs/eval/adaptation.yaml")]
    suite: PathBuf,
    /// Moving-average window of the reward curves.
    #[arg(long, default_value_t = 5)]
    smoothing: usize,
    /// Old objective of the forgetting runs, e.g. 0.8,0.1,0.1 (default: the landmark whose
    /// throughput/latency trade-off is farthest from the first new objective's).
    #[arg(long, value_parser = mocc_policy::objective::parse)]
    old_objective: Option<[f64; 3]>,
    /// Output folder.
    #[arg(long, default_value = "runs/adaptation")]
    out: PathBuf,
    /// Continue an interrupted experiment in --out (give the same arguments): finished runs
    /// are kept, an unfinished one is trained again from its start.
    #[arg(long)]
    resume: bool,
}

/// The most PPO iterations of one of the experiment's runs.
const MAX_ITERATIONS: u64 = 1_000_000;
/// The most new objectives the experiment draws.
const MAX_OBJECTIVES: u64 = 1_000;

/// Runs `mocc experiment ...`; the last stdout line is a JSON summary.
pub fn run(args: ExperimentArgs) -> anyhow::Result<()> {
    super::ranks::Ranks::join()?.alone("mocc experiment")?;
    let Experiment::Adaptation(a) = args.what;
    super::check_count("iterations", a.iterations, MAX_ITERATIONS)?;
    super::check_count("scratch-iterations", a.scratch_iterations, MAX_ITERATIONS)?;
    super::check_count(
        "forgetting-iterations",
        a.forgetting_iterations,
        MAX_ITERATIONS,
    )?;
    super::check_count("snapshot-every", a.snapshot_every, MAX_ITERATIONS)?;
    super::check_count("k", a.k as u64, MAX_OBJECTIVES)?;
    let ckpt =
        Checkpoint::open(&a.from).with_context(|| format!("cannot use {}", a.from.display()))?;
    let state = &ckpt.state;
    let objectives = match &a.objectives {
        Some(p) => read_pool(p)
            .map_err(anyhow::Error::msg)
            .context("--objectives")?,
        None => {
            let pool = seen_objectives(&state.config).map_err(anyhow::Error::msg)?;
            sample_new_objectives(a.k, a.seed, &pool)
        }
    };
    let exp = AdaptationExperiment {
        from: ckpt.path.clone(),
        objectives,
        iterations: a.iterations,
        scratch_iterations: a.scratch_iterations,
        forgetting_iterations: a.forgetting_iterations,
        snapshot_every: a.snapshot_every,
        suite: Suite::load(&a.suite)?,
        smoothing: a.smoothing,
        old_objective: a.old_objective,
        out: a.out.clone(),
        resume: a.resume,
    };
    let report = run_adaptation_experiment(&exp, |line| eprintln!("{line}"))?;
    let summary = a.out.join("summary.json");
    mocc_policy::write_file_atomic(
        &summary,
        (serde_json::to_string_pretty(&report)? + "\n").as_bytes(),
    )
    .with_context(|| format!("cannot write {}", summary.display()))?;
    eprintln!(
        "outputs: {}/adaptation.csv, adaptation.png, forgetting.csv, forgetting.png, summary.json",
        a.out.display()
    );
    super::print_line(serde_json::to_string(&report)?)?;
    Ok(())
}
