//! `mocc simulate`.

use anyhow::Context;
use clap::{ArgGroup, Args};
use mocc_eval::simulate::{
    parse_network_spec, simulate_into, simulate_policy_into, write_csv_header, write_csv_row,
    write_raw_csv_header, write_raw_csv_row, Horizon, MiRow, SimulationSpec,
};
use mocc_gym::{Action, Scenario};
use mocc_training::checkpoint_policy::load_policy;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The most MIs `mocc simulate` records.
const MAX_STEPS: u64 = 10_000_000;

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
    /// (cubic, bbr, bbr3, copa, vegas, allegro, vivace, proteus, proteus_s, leocc, satcp, ...) in place of the agent sender.
    #[arg(long)]
    policy: Option<PathBuf>,
    /// Objective (throughput, latency, loss weights) given to --policy, e.g. 0.6,0.3,0.1
    /// (default: the policy's training default).
    #[arg(long, requires = "policy", value_parser = mocc_policy::objective::parse)]
    objective: Option<[f64; 3]>,
    /// Number of MIs to record (after the reset's warm-up MIs), at most 10,000,000.
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

/// Runs `mocc simulate`: CSV rows streamed to `--out` and `--mi-out` as they are simulated,
/// means as one JSON line on stdout.
pub fn run(args: SimulateArgs) -> anyhow::Result<()> {
    let scenario = match (&args.scenario, &args.network) {
        (Some(path), _) => super::load_scenario(path)?,
        (None, Some(spec)) => {
            let config = parse_network_spec(spec)?;
            Arc::new(Scenario::new(config, None)?)
        }
        (None, None) => anyhow::bail!("one of --scenario or --network is required"),
    };
    super::check_count("steps", args.steps as u64, MAX_STEPS)?;
    let policy = match &args.policy {
        Some(path) => Some(
            load_policy(path).with_context(|| format!("cannot load policy {}", path.display()))?,
        ),
        None => None,
    };
    let features = match &policy {
        Some(p) => p.scenario().observation.features.clone(),
        None => scenario.config().observation.features.clone(),
    };
    let names = features.names();
    let mut out = args
        .out
        .as_deref()
        .map(|p| CsvOutput::create(p, |f| write_csv_header(f, &names)))
        .transpose()?;
    let mut mi_out = args
        .mi_out
        .as_deref()
        .map(|p| CsvOutput::create(p, |f| write_raw_csv_header(f)))
        .transpose()?;
    let mut sink = |row: &MiRow| -> std::io::Result<()> {
        if let Some(o) = &mut out {
            o.write(|f| write_csv_row(f, row))?;
        }
        if let Some(o) = &mut mi_out {
            o.write(|f| write_raw_csv_row(f, row))?;
        }
        Ok(())
    };
    let report = match &policy {
        Some(policy) => {
            let objective = args.objective.unwrap_or(policy.scenario().objective);
            let mut config = scenario.config().clone();
            if args.objective.is_some() {
                // The reward the objective asks for, not the scenario's default.
                config.reward = mocc_gym::reward::RewardKind::Mocc;
            }
            simulate_policy_into(
                &config,
                policy,
                objective,
                Horizon::Mis(args.steps),
                args.seed,
                &mut sink,
            )?
        }
        None => simulate_into(
            &SimulationSpec {
                scenario: scenario.clone(),
                action: fixed_action(args.rate, args.action)?,
                steps: args.steps,
                seed: args.seed,
            },
            &mut sink,
        )?,
    };
    for o in [out, mi_out].into_iter().flatten() {
        o.finish()?;
    }
    super::print_line(serde_json::to_string(&report)?)?;
    Ok(())
}

/// A CSV file written row by row beside its destination and put in place when the run is
/// complete (a killed run leaves the previous file as it was); every write names the file.
struct CsvOutput {
    file: mocc_outputs::StagedFile,
}

impl CsvOutput {
    /// Starts `path` (its folder is created) with its header, written by `header`.
    fn create(
        path: &Path,
        header: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> anyhow::Result<Self> {
        let file = mocc_outputs::StagedFile::create(path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        let mut out = Self { file };
        out.write(header)?;
        Ok(out)
    }

    /// Writes with `write`; an error names the file.
    fn write(
        &mut self,
        write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        write(self.file.writer()).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("cannot write {}: {e}", self.file.dest().display()),
            )
        })
    }

    /// Flushes and puts the file in place, so a full disk is an error and not a short file.
    fn finish(self) -> anyhow::Result<()> {
        self.file.commit()?;
        Ok(())
    }
}

fn fixed_action(rate: Option<f64>, action: Option<f64>) -> anyhow::Result<Action> {
    Ok(match (rate, action) {
        (Some(r), _) => {
            mocc_gym::limits::check_rate(r).map_err(|m| anyhow::anyhow!("--rate: {m}"))?;
            Action::Rate(r)
        }
        (None, Some(a)) if a.is_finite() => Action::Delta(a),
        (None, Some(a)) => anyhow::bail!("--action: must be finite (got {a})"),
        (None, None) => anyhow::bail!("one of --rate, --action or --policy is required"),
    })
}
