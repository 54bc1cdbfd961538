//! `mocc adapt`.

use anyhow::Context;
use clap::{Args, ValueEnum};
use mocc_policy::objective::parse as parse_objective;
use mocc_training::adaptation::{read_pool, start_adaptation, AdaptSpec, POOL_FILE};
use serde::Serialize;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

/// Replay switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    /// Replay objectives from the pool.
    On,
    /// Train on the new objective only.
    Off,
}

/// Arguments of `mocc adapt`.
#[derive(Debug, Args)]
pub struct AdaptArgs {
    /// The pretrained checkpoint, or a run folder (its newest checkpoint).
    #[arg(long)]
    from: PathBuf,
    /// The new objective: weights of throughput, latency and loss, e.g. 0.25,0.45,0.30
    /// (positive, summing to 1).
    #[arg(long, value_parser = parse_objective, allow_hyphen_values = true)]
    objective: [f64; 3],
    /// PPO iterations (updates) to run (at most 1,000,000).
    #[arg(long, default_value_t = 60)]
    iterations: u64,
    /// Requirement replay: also train on one objective of the pool in every update.
    #[arg(long, value_enum, default_value_t = OnOff::On)]
    replay: OnOff,
    /// Fraction of the envs that run the replayed objective.
    #[arg(long, default_value_t = 0.5)]
    replay_fraction: f64,
    /// Pool of objectives seen before (YAML/JSON list, e.g. a previous adaptation's pool.json);
    /// default: the checkpoint's landmarks plus every objective it adapted to.
    #[arg(long)]
    pool: Option<PathBuf>,
    /// Seed (default: the checkpoint's).
    #[arg(long)]
    seed: Option<u64>,
    /// Run folder (default: runs/adapt-<unix time>).
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Serialize)]
struct AdaptReport<'a> {
    #[serde(flatten)]
    summary: &'a mocc_training::trainer::TrainSummary,
    objective: [f64; 3],
    replay: bool,
    /// Mean per-step reward of the first rollout on the new objective (before any update).
    initial_reward: Option<f64>,
    /// Mean over the last 5 updates' rollouts.
    final_reward: Option<f64>,
    pool_file: PathBuf,
}

/// The most PPO iterations one adaptation runs.
const MAX_ITERATIONS: u64 = 1_000_000;

/// Runs `mocc adapt`; the last stdout line is a JSON summary.
pub fn run(args: AdaptArgs) -> anyhow::Result<()> {
    super::ranks::Ranks::join()?.alone("mocc adapt")?;
    super::check_count("iterations", args.iterations, MAX_ITERATIONS)?;
    let pool = match &args.pool {
        Some(p) => Some(read_pool(p).map_err(anyhow::Error::msg).context("--pool")?),
        None => None,
    };
    let spec = AdaptSpec {
        from: args.from.clone(),
        objective: args.objective,
        iterations: args.iterations,
        replay: args.replay == OnOff::On,
        replay_fraction: args.replay_fraction,
        pool,
        seed: args.seed,
    };
    let run_dir = args.out.clone().unwrap_or_else(|| {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        PathBuf::from("runs").join(format!("adapt-{now}"))
    });
    let mut trainer = start_adaptation(&spec, &run_dir)
        .with_context(|| format!("cannot adapt {}", args.from.display()))?;
    super::progress::stop_cleanly_on_signals(&mut trainer);
    let (summary, rewards) = super::progress::run_with_progress(&mut trainer)?;
    let tail = &rewards[rewards.len().saturating_sub(5)..];
    let report = AdaptReport {
        summary: &summary,
        objective: spec.objective,
        replay: spec.replay,
        initial_reward: rewards.first().copied(),
        final_reward: (!tail.is_empty()).then(|| tail.iter().sum::<f64>() / tail.len() as f64),
        pool_file: run_dir.join(POOL_FILE),
    };
    super::print_line(serde_json::to_string(&report)?)?;
    super::progress::exit_if_interrupted(&summary, &trainer);
    Ok(())
}
