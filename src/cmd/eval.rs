//! `mocc eval`.

use anyhow::Context;
use clap::Args;
use mocc_eval::actor::{is_export, LoadedPolicy};
use mocc_eval::results::{summarize, EVAL_OUTPUTS};
use mocc_eval::suite::Suite;
use mocc_eval::suite_run::{run_suite, suite_name, RuleOverlay};
use mocc_eval::targets::{TargetCount, TargetOutcome};
use mocc_outputs::StagedDir;
use mocc_policy::provenance::overlay_rule;
use mocc_policy::Policy;
use mocc_training::checkpoint_policy::load_policy;
use std::path::{Path, PathBuf};

/// Arguments of `mocc eval`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// A checkpoint folder, a run folder (its newest checkpoint), an export folder, or a
    /// baseline: cubic, cubic_unpaced, bbr, bbr3, copa, vegas, allegro, vivace, proteus,
    /// proteus_s, leocc, satcp, const:RATE (packets/s). Repeat to compare.
    #[arg(long, required = true)]
    policy: Vec<PathBuf>,
    /// Suite file (networks, objectives, seeds, steps; sections that ask for figures;
    /// targets). Repeat to run several: each writes into OUT/<suite name>/, and the targets of
    /// all are counted together.
    #[arg(long, required = true)]
    suite: Vec<PathBuf>,
    /// Output folder for results.csv, targets.csv, reward-cdf.png and the figures the suite
    /// asks for (default: runs/eval): new, empty, or an earlier evaluation's, which is
    /// replaced as a whole.
    #[arg(long, default_value = "runs/eval")]
    out: PathBuf,
    /// Evaluate every export under this rule overlay (YAML: a partial rule, e.g.
    /// `{action: {startup: {}, max_rate_pps: 100000}, observation: {capacity_trains: null}}`,
    /// keyed as policy.json is); the parts it
    /// changes are declared untrained, and rules.json records it.
    #[arg(long, value_name = "FILE")]
    rule: Option<PathBuf>,
}

/// Runs `mocc eval`; the last stdout line is the JSON of each policy's metric means. The
/// outputs are written beside `--out` and replace a previous evaluation there only once all
/// of them are complete.
pub fn run(args: EvalArgs) -> anyhow::Result<()> {
    evaluate(&args.policy, &args.suite, &args.out, args.rule.as_deref())
}

/// `mocc eval`'s work: every policy on every suite, into `out` (one suite) or `out/<suite>/`.
pub fn evaluate(
    policy_paths: &[PathBuf],
    suite_paths: &[PathBuf],
    out: &Path,
    rule: Option<&Path>,
) -> anyhow::Result<()> {
    let suites = load_suites(suite_paths)?;
    let overlay = rule.map(read_overlay).transpose()?;
    let mut policies = Vec::new();
    for p in policy_paths {
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
    let mut rows = Vec::new();
    let mut targets = Vec::new();
    for (path, name, suite) in &suites {
        let out = if suites.len() == 1 {
            out.to_path_buf()
        } else {
            out.join(name)
        };
        let staged = StagedDir::replacing(&out, EVAL_OUTPUTS)
            .with_context(|| format!("cannot write the evaluation to {}", out.display()))?;
        let run = run_suite(staged.path(), suite, path, &policies, overlay.as_ref())?;
        staged
            .commit()
            .with_context(|| format!("cannot put the evaluation in {}", out.display()))?;
        for file in &run.written {
            let kind = match file.extension() {
                Some(e) if e == "png" => "figure",
                _ => "results",
            };
            eprintln!("{kind}: {}", out.join(file).display());
        }
        rows.extend(run.rows);
        targets.extend(run.targets);
    }
    if !targets.is_empty() {
        for p in &policies {
            let own: Vec<TargetOutcome> = targets
                .iter()
                .filter(|t| t.policy == p.name())
                .cloned()
                .collect();
            eprintln!("{}: {}", p.name(), TargetCount::of(&own).sentence());
        }
    }
    super::print_line(serde_json::to_string(&EvalSummaries {
        policies: summarize(&rows),
    })?)?;
    Ok(())
}

/// Every `--suite`, loaded, with the name its folder takes when there are several.
fn load_suites(paths: &[PathBuf]) -> anyhow::Result<Vec<(PathBuf, String, Suite)>> {
    let mut out: Vec<(PathBuf, String, Suite)> = Vec::new();
    for path in paths {
        let suite = Suite::load(path).context("--suite")?;
        let name = suite_name(path);
        if paths.len() > 1 && out.iter().any(|(_, n, _)| *n == name) {
            anyhow::bail!(
                "--suite {}: another suite is named {name} too; their outputs would share \
                 OUT/{name}/",
                path.display()
            );
        }
        out.push((path.clone(), name, suite));
    }
    Ok(out)
}

/// Reads `--rule FILE`: a YAML mapping, a partial rule.
fn read_overlay(path: &Path) -> anyhow::Result<RuleOverlay> {
    let text = mocc_policy::error::read_text(path).context("--rule")?;
    let patch: serde_json::Value = serde_saphyr::from_str(&text)
        .with_context(|| format!("--rule: {}: not YAML", path.display()))?;
    if !patch.is_object() {
        anyhow::bail!(
            "--rule: {}: expected a mapping of rule parts (action:, observation:)",
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
    let rule = overlay_rule(&policy.spec().sender_rule(), &overlay.patch)
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
