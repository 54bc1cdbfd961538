//! `mocc pair`.

use anyhow::Context;
use clap::Args;
use mocc_policy::{ModeSwitch, Policy, RateError, StagedDir};
use std::path::PathBuf;

/// Arguments of `mocc pair`.
#[derive(Debug, Args)]
pub struct PairArgs {
    /// Export folder of the cooperative policy (decides by default; `mocc export` writes one).
    cooperative: PathBuf,
    /// Export folder of the competitive policy (decides while a queue outlasts the probes).
    competitive: PathBuf,
    /// Paired export folder (new or empty; it appears complete or not at all): the cooperative
    /// export with `action.mode_switch`, and the competitive one in `competitive/`.
    #[arg(long)]
    out: PathBuf,
    /// An MI within this multiple of the lowest latency sees no queue (> 1).
    #[arg(long, default_value_t = ModeSwitch::default().queue_ratio)]
    queue_ratio: f64,
    /// Probe after this many seconds without an MI that sees the path, whether or not the
    /// probe timer would (default: only the timer's probes).
    #[arg(long)]
    probe_after_s: Option<f64>,
    /// The latency the switch compares with is the lowest of the last this many to twice as
    /// many seconds (default: the connection's lowest).
    #[arg(long)]
    lowest_window_s: Option<f64>,
    /// After a competitive MI that lost more than this fraction of its packets, the next rate
    /// is at most what that MI delivered (in (0, 1); default: no bound).
    #[arg(long)]
    competitive_max_loss: Option<f64>,
}

/// Runs `mocc pair`; the last stdout line is the JSON of the paired policy.json.
pub fn run(args: PairArgs) -> anyhow::Result<()> {
    let switch = ModeSwitch {
        queue_ratio: args.queue_ratio,
        probe_after_s: args.probe_after_s,
        lowest_window_s: args.lowest_window_s,
        competitive_max_loss: args.competitive_max_loss,
    };
    switch
        .validate()
        .map_err(|RateError::Invalid { field, message }| {
            let flag = field.trim_start_matches("mode_switch.").replace('_', "-");
            anyhow::anyhow!("--{flag}: {message}")
        })?;
    let load = |path: &PathBuf, role: &str| {
        Policy::load(path).with_context(|| format!("cannot load the {role} export"))
    };
    let cooperative = load(&args.cooperative, "cooperative")?;
    let competitive = load(&args.competitive, "competitive")?;
    let write = || -> anyhow::Result<Policy> {
        let staged = StagedDir::new(&args.out)?;
        Policy::write_pair(staged.path(), &cooperative, &competitive, switch)?;
        staged.commit()?;
        Ok(Policy::load(&args.out)?)
    };
    let paired =
        write().with_context(|| format!("cannot write the pair to {}", args.out.display()))?;
    eprintln!("pair: {}", args.out.display());
    super::print_line(serde_json::to_string(paired.spec())?)?;
    Ok(())
}
