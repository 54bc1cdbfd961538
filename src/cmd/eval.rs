//! `mocc eval`.

use anyhow::Context;
use clap::Args;
use mocc_eval::evaluate;
use mocc_eval::figures::{reward_cdf_figure, sweep_figure};
use mocc_eval::flow_figures::{fairness_outputs, friendliness_outputs, timeseries_outputs};
use mocc_eval::results::{summarize, write_csv};
use mocc_eval::suite::Suite;
use mocc_training::checkpoint_policy::load_policy;
use std::path::PathBuf;

/// Arguments of `mocc eval`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// A checkpoint folder, a run folder (its newest checkpoint), an export folder, or a
    /// baseline: cubic, bbr, copa, vegas, vivace, const:RATE (packets/s). Repeat to compare.
    #[arg(long, required = true)]
    policy: Vec<PathBuf>,
    /// Suite file (networks, objectives, seeds, steps).
    #[arg(long)]
    suite: PathBuf,
    /// Output folder for results.csv, reward-cdf.png and (for suites with `sweeps`)
    /// sweeps.png (default: runs/eval).
    #[arg(long, default_value = "runs/eval")]
    out: PathBuf,
}

/// Runs `mocc eval`; the last stdout line is the JSON of the metric means.
pub fn run(args: EvalArgs) -> anyhow::Result<()> {
    let suite = Suite::load(&args.suite)?;
    let mut rows = Vec::new();
    let mut objective_policies = Vec::new();
    let mut policies = Vec::new();
    for p in &args.policy {
        let policy =
            load_policy(p).with_context(|| format!("cannot load policy {}", p.display()))?;
        if policy.takes_objective() {
            objective_policies.push(policy.name().to_string());
        }
        rows.extend(evaluate(&policy, &suite)?);
        policies.push(policy);
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let csv = args.out.join("results.csv");
    let file =
        std::fs::File::create(&csv).with_context(|| format!("cannot create {}", csv.display()))?;
    let mut out = std::io::BufWriter::new(file);
    write_csv(&mut out, &rows)
        .and_then(|()| std::io::Write::flush(&mut out))
        .with_context(|| format!("cannot write {}", csv.display()))?;
    eprintln!("results: {}", csv.display());
    if !rows.is_empty() {
        let cdf = args.out.join("reward-cdf.png");
        reward_cdf_figure(&cdf, &rows)?;
        eprintln!("figure: {}", cdf.display());
    }
    if let Some(spec) = &suite.sweeps {
        let png = args.out.join("sweeps.png");
        sweep_figure(&png, spec, &rows, &objective_policies)?;
        eprintln!("figure: {}", png.display());
    }
    if let Some(spec) = &suite.fairness {
        fairness_outputs(&args.out, spec, &policies)?;
        eprintln!("figure: {}", args.out.join("fairness.png").display());
    }
    if let Some(spec) = &suite.friendliness {
        for png in friendliness_outputs(&args.out, spec, &policies)? {
            eprintln!("figure: {}", png.display());
        }
    }
    let suite_dir = args.suite.parent().unwrap_or(std::path::Path::new("."));
    for spec in &suite.timeseries {
        let png = timeseries_outputs(&args.out, suite_dir, spec, &policies)?;
        eprintln!("figure: {}", png.display());
    }
    super::print_line(serde_json::to_string(&summarize(&rows))?)?;
    Ok(())
}
