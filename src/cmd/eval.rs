//! `mocc eval`.

use anyhow::Context;
use clap::Args;
use mocc_eval::evaluate;
use mocc_eval::fairness_outputs::fairness_outputs;
use mocc_eval::figures::{reward_cdf_figure, sweep_figure};
use mocc_eval::flow_figures::{friendliness_outputs, timeseries_outputs};
use mocc_eval::results::{summarize, write_csv, EVAL_OUTPUTS, RESULTS_CSV};
use mocc_eval::suite::Suite;
use mocc_policy::{write_file_atomic, StagedDir};
use mocc_training::checkpoint_policy::load_policy;
use std::path::{Path, PathBuf};

/// Arguments of `mocc eval`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// A checkpoint folder, a run folder (its newest checkpoint), an export folder, or a
    /// baseline: cubic, cubic_unpaced, bbr, copa, vegas, vivace, const:RATE (packets/s). Repeat
    /// to compare.
    #[arg(long, required = true)]
    policy: Vec<PathBuf>,
    /// Suite file (networks, objectives, seeds, steps).
    #[arg(long)]
    suite: PathBuf,
    /// Output folder for results.csv, reward-cdf.png and (for suites with `sweeps`)
    /// sweeps.png (default: runs/eval): new, empty, or an earlier evaluation's, which is
    /// replaced as a whole.
    #[arg(long, default_value = "runs/eval")]
    out: PathBuf,
}

/// Runs `mocc eval`; the last stdout line is the JSON of each policy's metric means. The
/// outputs are written beside `--out` and replace a previous evaluation there only once all
/// of them are complete.
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
    let staged = StagedDir::replacing(&args.out, EVAL_OUTPUTS)
        .with_context(|| format!("cannot write the evaluation to {}", args.out.display()))?;
    let dir = staged.path();
    let mut written = vec![PathBuf::from(RESULTS_CSV)];
    let csv = dir.join(RESULTS_CSV);
    let mut text = Vec::new();
    write_csv(&mut text, &rows)?;
    write_file_atomic(&csv, &text)
        .with_context(|| format!("cannot write {}", args.out.join(RESULTS_CSV).display()))?;
    if !rows.is_empty() {
        reward_cdf_figure(&dir.join(REWARD_CDF), &rows)?;
        written.push(REWARD_CDF.into());
    }
    if let Some(spec) = &suite.sweeps {
        sweep_figure(&dir.join(SWEEPS), spec, &rows, &objective_policies)?;
        written.push(SWEEPS.into());
    }
    if let Some(spec) = &suite.fairness {
        fairness_outputs(dir, spec, &policies)?;
        written.push("fairness.png".into());
    }
    if let Some(spec) = &suite.friendliness {
        written.extend(friendliness_outputs(dir, spec, &policies)?);
    }
    let suite_dir = args.suite.parent().unwrap_or(Path::new("."));
    for spec in &suite.timeseries {
        written.push(timeseries_outputs(dir, suite_dir, spec, &policies)?);
    }
    let staged_dir = dir.to_path_buf();
    staged
        .commit()
        .with_context(|| format!("cannot put the evaluation in {}", args.out.display()))?;
    for (k, file) in written.iter().enumerate() {
        let name = file.strip_prefix(&staged_dir).unwrap_or(file);
        let kind = if k == 0 { "results" } else { "figure" };
        eprintln!("{kind}: {}", args.out.join(name).display());
    }
    super::print_line(serde_json::to_string(&EvalSummaries {
        policies: summarize(&rows),
    })?)?;
    Ok(())
}

const REWARD_CDF: &str = "reward-cdf.png";
const SWEEPS: &str = "sweeps.png";

/// The last stdout line of `mocc eval`: one summary per policy that was measured.
#[derive(serde::Serialize)]
struct EvalSummaries {
    policies: Vec<mocc_eval::results::EvalSummary>,
}
