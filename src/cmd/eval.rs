//! `mocc eval`.

use anyhow::Context;
use clap::Args;
use mocc_eval::actor::{is_export, LoadedPolicy};
use mocc_eval::results::{summarize, EVAL_OUTPUTS};
use mocc_eval::suite::Suite;
use mocc_eval::suite_run::{run_suite, RuleOverlay};
use mocc_policy::provenance::overlay_rule;
use mocc_policy::{Policy, SenderRule, StagedDir};
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
    /// Evaluate every export under this rule overlay (YAML: a partial rule, e.g.
    /// `{action: {startup: {}, max_rate_pps: 100000}, capacity_trains: null}`); the parts it
    /// changes are declared untrained, and rules.json records it.
    #[arg(long, value_name = "FILE")]
    rule: Option<PathBuf>,
}

/// Runs `mocc eval`; the last stdout line is the JSON of each policy's metric means. The
/// outputs are written beside `--out` and replace a previous evaluation there only once all
/// of them are complete.
pub fn run(args: EvalArgs) -> anyhow::Result<()> {
    let suite = Suite::load(&args.suite).context("--suite")?;
    let overlay = args.rule.as_deref().map(read_overlay).transpose()?;
    let mut policies = Vec::new();
    for p in &args.policy {
        let policy = match &overlay {
            Some(o) => load_under(p, o),
            None => load_policy(p).map_err(anyhow::Error::from),
        }
        .with_context(|| format!("cannot load policy {}", p.display()))?;
        if let Some(text) = policy.rule().and_then(|r| r.untrained_text()) {
            eprintln!(
                "note: {} runs under parts of its rule its weights were not trained with: {text}",
                policy.name()
            );
        }
        policies.push(policy);
    }
    let staged = StagedDir::replacing(&args.out, EVAL_OUTPUTS)
        .with_context(|| format!("cannot write the evaluation to {}", args.out.display()))?;
    let run = run_suite(
        staged.path(),
        &suite,
        &args.suite,
        &policies,
        overlay.as_ref(),
    )?;
    staged
        .commit()
        .with_context(|| format!("cannot put the evaluation in {}", args.out.display()))?;
    for file in &run.written {
        let kind = match file.extension() {
            Some(e) if e == "png" => "figure",
            _ => "results",
        };
        eprintln!("{kind}: {}", args.out.join(file).display());
    }
    for (policy, count) in run.counts(&policies) {
        eprintln!("{policy}: {}", count.sentence());
    }
    super::print_line(serde_json::to_string(&EvalSummaries {
        policies: summarize(&run.rows),
    })?)?;
    Ok(())
}

/// Reads `--rule FILE`: a YAML mapping, a partial rule.
fn read_overlay(path: &Path) -> anyhow::Result<RuleOverlay> {
    let text = mocc_policy::error::read_text(path).context("--rule")?;
    let patch: serde_json::Value = serde_saphyr::from_str(&text)
        .with_context(|| format!("--rule: {}: not YAML", path.display()))?;
    if !patch.is_object() {
        anyhow::bail!(
            "--rule: {}: expected a mapping of rule parts (action:, capacity_trains:)",
            path.display()
        );
    }
    Ok(RuleOverlay {
        file: path.display().to_string(),
        patch,
    })
}

/// An export loaded under `overlay`, or a baseline as it is (it has no learned rule); a
/// checkpoint is refused (it runs under its training scenario's rule: export it first).
fn load_under(path: &Path, overlay: &RuleOverlay) -> anyhow::Result<LoadedPolicy> {
    if !is_export(path) {
        if let Some(baseline) = LoadedPolicy::load_baseline_or_export(path)? {
            return Ok(baseline);
        }
        anyhow::bail!(
            "--rule applies to exports ({} is not one; `mocc export` writes one)",
            path.display()
        );
    }
    let policy = Policy::load(path)?;
    let rule = overlay_rule(&SenderRule::of(policy.spec()), &overlay.patch)
        .map_err(|e| anyhow::anyhow!("--rule: {}: {e}", overlay.file))?;
    let by = format!("mocc eval --rule {}", overlay.file);
    let policy = policy
        .with_rule(rule, &by, "evaluated under an explicit rule overlay")
        .with_context(|| format!("--rule: {}", overlay.file))?;
    Ok(LoadedPolicy::export(path.display().to_string(), policy))
}

/// The last stdout line of `mocc eval`: one summary per policy that was measured.
#[derive(serde::Serialize)]
struct EvalSummaries {
    policies: Vec<mocc_eval::results::EvalSummary>,
}
