//! `mocc simulate`.

use anyhow::Context;
use clap::{ArgGroup, Args};
use mocc_gym::{Action, Scenario};
use mocc_training::actor::LoadedPolicy;
use mocc_training::simulate::{
    parse_network_spec, simulate, simulate_policy, write_csv, write_raw_csv, SimulationSpec,
};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

/// Arguments of `mocc simulate`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("net").required(true).args(["scenario", "network"])))]
#[command(group(ArgGroup::new("drive").required(true).args(["rate", "action", "policy"])))]
pub struct SimulateArgs {
    /// Scenario YAML file (its agent sender is driven).
    #[arg(long)]
    scenario: Option<PathBuf>,
    /// A fixed Aurora bottleneck: bw_pps=B,delay_s=D,queue_pkts=Q[,loss=L].
    #[arg(long)]
    network: Option<String>,
    /// Pace at this fixed rate (packets/s).
    #[arg(long)]
    rate: Option<f64>,
    /// Apply this constant Aurora action every MI.
    #[arg(long, allow_hyphen_values = true)]
    action: Option<f64>,
    /// Let a trained policy drive: an export folder, a checkpoint or a run folder (its own
    /// observation, metrics, action rule and MI sizing replace the scenario's), or a baseline
    /// (cubic, bbr, copa, vegas, vivace, const:RATE) in place of the agent sender.
    #[arg(long)]
    policy: Option<PathBuf>,
    /// Objective (throughput, latency, loss weights) given to --policy, e.g. 0.6,0.3,0.1
    /// (default: the policy's training default).
    #[arg(long, requires = "policy", value_parser = mocc_policy::objective::parse)]
    objective: Option<[f64; 3]>,
    /// Number of MIs to record (after the reset's warm-up MIs).
    #[arg(long, default_value_t = 400)]
    steps: usize,
    /// Random seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Write one CSV row per MI here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write the raw MI statistics a sender has (bytes, times, RTT summary), one CSV row per
    /// MI, here: the input a deployed controller is fed.
    #[arg(long)]
    mi_out: Option<PathBuf>,
}

/// Runs `mocc simulate`: CSV to `--out`, means as one JSON line on stdout.
pub fn run(args: SimulateArgs) -> anyhow::Result<()> {
    let scenario = match (&args.scenario, &args.network) {
        (Some(path), _) => super::load_scenario(path)?,
        (None, Some(spec)) => {
            let config = parse_network_spec(spec)?;
            Arc::new(Scenario::new(config, None)?)
        }
        (None, None) => anyhow::bail!("one of --scenario or --network is required"),
    };
    if args.steps == 0 {
        anyhow::bail!("--steps: must be >= 1");
    }
    let (rows, report, features) = match &args.policy {
        Some(path) => {
            let policy = LoadedPolicy::load(path)
                .with_context(|| format!("cannot load policy {}", path.display()))?;
            let objective = args.objective.unwrap_or(policy.scenario().objective);
            let (rows, report) =
                simulate_policy(scenario.config(), &policy, objective, args.steps, args.seed)?;
            (rows, report, policy.scenario().observation.features.clone())
        }
        None => {
            let (rows, report) = simulate(&SimulationSpec {
                scenario: scenario.clone(),
                action: fixed_action(args.rate, args.action)?,
                steps: args.steps,
                seed: args.seed,
            })?;
            (rows, report, scenario.config().observation.features.clone())
        }
    };
    if let Some(out) = &args.out {
        let names = features.names();
        write_file(out, |f| write_csv(f, &rows, &names))?;
    }
    if let Some(out) = &args.mi_out {
        write_file(out, |f| write_raw_csv(f, &rows))?;
    }
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}

/// Creates `path` (and its folder) and writes it with `write`.
fn write_file(
    path: &std::path::Path,
    write: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let file =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut out = std::io::BufWriter::new(file);
    write(&mut out)
        .and_then(|()| out.flush())
        .with_context(|| format!("cannot write {}", path.display()))
}

fn fixed_action(rate: Option<f64>, action: Option<f64>) -> anyhow::Result<Action> {
    Ok(match (rate, action) {
        (Some(r), _) if r.is_finite() && r > 0.0 => Action::Rate(r),
        (Some(r), _) => anyhow::bail!("--rate: must be a positive number of packets/s (got {r})"),
        (None, Some(a)) if a.is_finite() => Action::Delta(a),
        (None, Some(a)) => anyhow::bail!("--action: must be finite (got {a})"),
        (None, None) => anyhow::bail!("one of --rate, --action or --policy is required"),
    })
}
