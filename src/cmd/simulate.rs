//! `mocc simulate`.

use anyhow::Context;
use clap::{ArgGroup, Args};
use mocc_gym::{Action, Scenario};
use mocc_training::simulate::{parse_network_spec, simulate, write_csv, SimulationSpec};
use std::path::PathBuf;
use std::sync::Arc;

/// Arguments of `mocc simulate`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("net").required(true).args(["scenario", "network"])))]
#[command(group(ArgGroup::new("drive").required(true).args(["rate", "action"])))]
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
    /// Number of MIs to record (after the reset's warm-up MIs).
    #[arg(long, default_value_t = 400)]
    steps: usize,
    /// Random seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Write one CSV row per MI here.
    #[arg(long)]
    out: Option<PathBuf>,
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
    let action = match (args.rate, args.action) {
        (Some(r), _) if r.is_finite() && r > 0.0 => Action::Rate(r),
        (Some(r), _) => anyhow::bail!("--rate: must be a positive number of packets/s (got {r})"),
        (None, Some(a)) if a.is_finite() => Action::Delta(a),
        (None, Some(a)) => anyhow::bail!("--action: must be finite (got {a})"),
        (None, None) => anyhow::bail!("one of --rate or --action is required"),
    };
    if args.steps == 0 {
        anyhow::bail!("--steps: must be >= 1");
    }
    let spec = SimulationSpec {
        scenario: scenario.clone(),
        action,
        steps: args.steps,
        seed: args.seed,
    };
    let (rows, report) = simulate(&spec)?;
    if let Some(out) = &args.out {
        if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let file = std::fs::File::create(out)
            .with_context(|| format!("cannot create {}", out.display()))?;
        let names = scenario.config().observation.features.names();
        write_csv(std::io::BufWriter::new(file), &rows, &names)
            .with_context(|| format!("cannot write {}", out.display()))?;
    }
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}
