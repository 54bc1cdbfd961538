//! `mocc bench`.

use anyhow::Context;
use clap::{Args, Subcommand};
use mocc_training::bench::{
    bench_env, bench_numerics, bench_policy, bench_train, fixed_flows_override, EnvBenchSpec,
    TrainBenchRow,
};
use mocc_training::checkpoint_policy::load_policy;
use mocc_training::config::LoadedConfig;
use std::path::PathBuf;
use std::sync::Arc;

/// Arguments of `mocc bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    what: BenchTarget,
}

#[derive(Debug, Subcommand)]
enum BenchTarget {
    /// Simulator throughput: env steps, events and packets per second.
    Env(EnvArgs),
    /// Learning throughput (env steps and PPO updates per second, whole training loop) at each
    /// number of learned flows per bottleneck.
    Train(TrainBenchArgs),
    /// Decision latency of the libtorch-free runtime (mocc-policy's Controller) on one core.
    Policy(PolicyArgs),
    /// This machine's numerics fingerprints (native and portable) and what portable numerics
    /// cost: machines with the same fingerprint train the same bits.
    Numerics(NumericsArgs),
    /// An export inside s2n-quic on the emulated path (root): at each link rate, how closely
    /// the stack paces at the policy's rate (each MI's sent rate over the policy's) and what
    /// the sender's thread costs (CPU per 1500 bytes, share of a core).
    Quic(QuicArgs),
}

/// Arguments of `mocc bench quic`.
#[derive(Debug, Args)]
struct QuicArgs {
    /// The export.
    #[arg(long, default_value = "checkpoints/mocc-pair")]
    policy: PathBuf,
    /// Link rates (Mbit/s), each a download starting at the link's rate.
    #[arg(long, value_delimiter = ',', default_values_t = [2.0, 10.0, 50.0])]
    mbit: Vec<f64>,
    /// Seconds of each download at its link's rate.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Downloads per rate (alternating the rates; the medians are reported).
    #[arg(long, default_value_t = 3)]
    repeats: u32,
}

/// Arguments of `mocc bench train`.
#[derive(Debug, Args)]
struct TrainBenchArgs {
    /// Training config; its scenario's `learned_flows.count` is held at each --flows.
    #[arg(long, default_value = "configs/bench-train.yaml")]
    config: PathBuf,
    /// Learned flows per bottleneck, one measurement each.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 8, 32])]
    flows: Vec<u32>,
    /// PPO updates per measurement.
    #[arg(long, default_value_t = 5)]
    updates: u64,
    /// Timed repeats (the flow counts alternate within each; medians are reported).
    #[arg(long, default_value_t = 3)]
    repeats: u32,
    /// Override a config value (repeatable), as `mocc train --set`.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    set: Vec<String>,
}

/// Arguments of `mocc bench numerics`.
#[derive(Debug, Args)]
struct NumericsArgs {
    /// Timed repeats of each side (alternated; medians are reported).
    #[arg(long, default_value_t = 15)]
    repeats: u32,
}

/// The most env steps or decisions one benchmark runs (hours of work at today's speeds).
const MAX_BENCH_STEPS: u64 = 1_000_000_000;
/// The most timed repeats of a benchmark.
const MAX_REPEATS: u64 = 1_000;

/// Arguments of `mocc bench policy`.
#[derive(Debug, Args)]
struct PolicyArgs {
    /// Export folder (policy.json + policy.safetensors).
    #[arg(long)]
    policy: PathBuf,
    /// Decisions per timed repeat (at most 1,000,000,000).
    #[arg(long, default_value_t = 200_000)]
    decisions: u64,
    /// Timed repeats (the median is reported; at most 1,000).
    #[arg(long, default_value_t = 7)]
    repeats: u32,
    /// Seed of the episode whose MIs are replayed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Also time this checkpoint (or run folder) with libtorch, batch 1, on the same inputs.
    #[arg(long)]
    compare_checkpoint: Option<PathBuf>,
}

/// Arguments of `mocc bench env`.
#[derive(Debug, Args)]
struct EnvArgs {
    /// Scenario YAML file.
    #[arg(long, default_value = "configs/aurora-env.yaml")]
    scenario: PathBuf,
    /// Envs in the batch.
    #[arg(long, default_value_t = 50)]
    envs: usize,
    /// Worker threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Total env steps (rounded up to a multiple of --envs; at most 1,000,000,000).
    #[arg(long, default_value_t = 20_000)]
    steps: u64,
    /// Constant action.
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    action: f32,
    /// Seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

/// Runs `mocc bench ...` and prints one JSON line.
pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    match args.what {
        BenchTarget::Env(a) => {
            super::check_count("steps", a.steps, MAX_BENCH_STEPS)?;
            if !a.action.is_finite() {
                anyhow::bail!("--action: must be finite (got {})", a.action);
            }
            let spec = EnvBenchSpec {
                scenario: super::load_scenario(&a.scenario)?,
                envs: a.envs,
                threads: a.threads,
                steps: a.steps,
                action: a.action,
                seed: a.seed,
            };
            let report = bench_env(&spec)?;
            super::print_line(serde_json::to_string(&report)?)?;
        }
        BenchTarget::Train(a) => {
            super::check_count("updates", a.updates, MAX_BENCH_STEPS)?;
            super::check_count("repeats", u64::from(a.repeats), MAX_REPEATS)?;
            let rows = bench_train_rows(&a)?;
            super::print_line(serde_json::to_string(&rows)?)?;
        }
        BenchTarget::Policy(a) => {
            super::check_count("decisions", a.decisions, MAX_BENCH_STEPS)?;
            super::check_count("repeats", u64::from(a.repeats), MAX_REPEATS)?;
            let policy = mocc_policy::Policy::load(&a.policy)
                .with_context(|| format!("cannot load policy {}", a.policy.display()))?;
            let checkpoint = match &a.compare_checkpoint {
                Some(p) => Some(
                    load_policy(p)
                        .with_context(|| format!("cannot load checkpoint {}", p.display()))?,
                ),
                None => None,
            };
            let report = bench_policy(
                Arc::new(policy),
                checkpoint.as_ref(),
                a.decisions,
                a.repeats,
                a.seed,
            )?;
            super::print_line(serde_json::to_string(&report)?)?;
        }
        BenchTarget::Quic(a) => {
            super::check_count("repeats", u64::from(a.repeats), MAX_REPEATS)?;
            if !(1.0..=600.0).contains(&a.seconds) {
                anyhow::bail!("--seconds: from 1 to 600 (got {})", a.seconds);
            }
            let rows = mocc_net::remove_namespaces_on_interrupt(|| {
                bench_quic(&a.policy, &a.mbit, a.seconds, a.repeats)
            })??;
            super::print_line(serde_json::to_string(&rows)?)?;
        }
        BenchTarget::Numerics(a) => {
            // Both fingerprints under the kernels portable numerics need (and the tests pin).
            mocc_agents::pin_portable_kernels();
            let report = bench_numerics(a.repeats)?;
            super::print_line(serde_json::to_string(&report)?)?;
        }
    }
    Ok(())
}

/// Each flow count's medians over `repeats` measurements, the counts alternated within each
/// repeat; each trains in a temporary folder removed afterwards.
fn bench_train_rows(a: &TrainBenchArgs) -> anyhow::Result<Vec<TrainBenchRow>> {
    let mut runs: Vec<Vec<TrainBenchRow>> = vec![Vec::new(); a.flows.len()];
    for k in 1..=a.repeats.max(1) {
        for (i, &flows) in a.flows.iter().enumerate() {
            let mut sets = a.set.clone();
            sets.push(fixed_flows_override(flows));
            let loaded = LoadedConfig::load(&a.config, &sets)?;
            let dir = std::env::temp_dir().join(format!(
                "mocc-bench-train-{}-{flows}-{k}",
                std::process::id()
            ));
            let row = bench_train(&loaded, flows, a.updates, &dir);
            let _ = std::fs::remove_dir_all(&dir);
            let row = row?;
            eprintln!(
                "{flows} flows, run {k}/{}: {}",
                a.repeats,
                serde_json::to_string(&row)?
            );
            runs[i].push(row);
        }
    }
    Ok(runs.iter().map(|r| median_train_row(r)).collect())
}

/// The median of each rate over `rows` (at least one, of one flow count).
fn median_train_row(rows: &[TrainBenchRow]) -> TrainBenchRow {
    use mocc_eval::results::median;
    let m = |f: fn(&TrainBenchRow) -> f64| median(rows.iter().map(f).collect());
    TrainBenchRow {
        flows: rows[0].flows,
        env_steps_per_sec: m(|r| r.env_steps_per_sec),
        updates_per_sec: m(|r| r.updates_per_sec),
        env_steps: rows[0].env_steps,
        updates: rows[0].updates,
        wall_seconds: m(|r| r.wall_seconds),
        sim_seconds: m(|r| r.sim_seconds),
        inference_seconds: m(|r| r.inference_seconds),
        update_seconds: m(|r| r.update_seconds),
    }
}

/// Each rate's medians over `repeats` downloads, the rates alternated within each repeat.
fn bench_quic(
    policy: &std::path::Path,
    rates: &[f64],
    seconds: f64,
    repeats: u32,
) -> anyhow::Result<Vec<mocc_real::pacing::PacingRow>> {
    use mocc_real::pacing::{bench_pacing, PacingRow};
    let mut runs: Vec<Vec<PacingRow>> = vec![Vec::new(); rates.len()];
    for k in 1..=repeats {
        for (i, &mbit) in rates.iter().enumerate() {
            let row = bench_pacing(policy, mbit, seconds)?;
            eprintln!(
                "{mbit} Mbit/s, run {k}/{repeats}: {}",
                serde_json::to_string(&row)?
            );
            runs[i].push(row);
        }
    }
    Ok(runs.iter().map(|r| median_row(r)).collect())
}

/// The median of each field over `rows` (at least one).
fn median_row(rows: &[mocc_real::pacing::PacingRow]) -> mocc_real::pacing::PacingRow {
    use mocc_eval::results::median;
    let m = |f: fn(&mocc_real::pacing::PacingRow) -> f64| median(rows.iter().map(f).collect());
    mocc_real::pacing::PacingRow {
        link_mbit: rows[0].link_mbit,
        mis: median(rows.iter().map(|r| r.mis as f64).collect()) as usize,
        ratio_p10: m(|r| r.ratio_p10),
        ratio_median: m(|r| r.ratio_median),
        ratio_p90: m(|r| r.ratio_p90),
        policy_mbit: m(|r| r.policy_mbit),
        goodput_mbit: m(|r| r.goodput_mbit),
        utilization: m(|r| r.utilization),
        rtt_ratio: m(|r| r.rtt_ratio),
        cpu_us_per_packet: m(|r| r.cpu_us_per_packet),
        core_share: m(|r| r.core_share),
    }
}
