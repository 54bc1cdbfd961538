//! A suite's whole evaluation of several policies into one folder: results.csv and the reward
//! CDF, the sweeps, fairness, friendliness and time-series figures the suite asks for, and
//! targets.csv with each policy's targets. `mocc eval`, a recipe's validation and a sweep over
//! seeds all write an evaluation through [`run_suite`], so their folders hold the same files.

use crate::actor::LoadedPolicy;
use crate::fairness_outputs::{fairness_outputs, FairnessSummary};
use crate::figures::{reward_cdf_figure, sweep_figure};
use crate::flow_figures::{friendliness_outputs, timeseries_outputs, FriendlinessRow};
use crate::results::{write_csv, EvalError, EvalRow, RESULTS_CSV, RULES_JSON};
use crate::suite::Suite;
use crate::targets::{assess, targets_csv, SuiteResults, TargetCount, TargetOutcome, TARGETS_CSV};
use mocc_plot::chart::PlotError;
use std::path::{Path, PathBuf};

/// The reward CDF's file.
pub const REWARD_CDF: &str = "reward-cdf.png";
/// The sweeps figure's file.
pub const SWEEPS: &str = "sweeps.png";

/// What a suite's evaluation gave.
#[derive(Debug, Clone, Default)]
pub struct SuiteRun {
    /// results.csv's rows, every policy's.
    pub rows: Vec<EvalRow>,
    /// fairness-summary.csv's rows.
    pub fairness: Vec<FairnessSummary>,
    /// friendliness.csv's rows.
    pub friendliness: Vec<FriendlinessRow>,
    /// Every policy's targets, policy by policy in the order given.
    pub targets: Vec<TargetOutcome>,
    /// The files written, relative to the folder: results.csv first, then figures and CSVs.
    pub written: Vec<PathBuf>,
}

impl SuiteRun {
    /// The results as targets read them.
    pub fn results(&self) -> SuiteResults<'_> {
        SuiteResults {
            rows: &self.rows,
            fairness: &self.fairness,
            friendliness: &self.friendliness,
        }
    }

    /// One policy's target outcomes.
    pub fn targets_of(&self, policy: &str) -> Vec<TargetOutcome> {
        self.targets
            .iter()
            .filter(|t| t.policy == policy)
            .cloned()
            .collect()
    }

    /// How many targets each policy meets, in the order the policies were given (none when the
    /// suite has no targets).
    pub fn counts(&self, policies: &[LoadedPolicy]) -> Vec<(String, TargetCount)> {
        if self.targets.is_empty() {
            return Vec::new();
        }
        policies
            .iter()
            .map(|p| {
                (
                    p.name().to_string(),
                    TargetCount::of(&self.targets_of(p.name())),
                )
            })
            .collect()
    }
}

/// The suite's name in outputs: its file name without extension.
pub fn suite_name(suite_path: &Path) -> String {
    suite_path
        .file_stem()
        .map_or_else(|| "suite".into(), |s| s.to_string_lossy().into_owned())
}

/// A rule overlay an evaluation applied to its exports (`mocc eval --rule FILE`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RuleOverlay {
    /// The overlay's file, as given.
    pub file: String,
    /// Its contents: a partial rule merged into each export's.
    pub patch: serde_json::Value,
}

/// rules.json's contents.
#[derive(serde::Serialize)]
struct Rules<'a> {
    overlay: Option<&'a RuleOverlay>,
    policies: Vec<PolicyRule<'a>>,
}

#[derive(serde::Serialize)]
struct PolicyRule<'a> {
    policy: &'a str,
    #[serde(flatten)]
    record: &'a crate::actor::RuleRecord,
}

/// Evaluates every policy on `suite` (read from `suite_path`, whose folder anchors the suite's
/// scenario files) and writes every output into `dir`, an existing folder the caller puts in
/// place when the run is complete. `overlay` is recorded in rules.json when the policies' rules
/// were changed by one.
pub fn run_suite(
    dir: &Path,
    suite: &Suite,
    suite_path: &Path,
    policies: &[LoadedPolicy],
    overlay: Option<&RuleOverlay>,
) -> Result<SuiteRun, EvalError> {
    let mut run = SuiteRun::default();
    let mut objective_policies = Vec::new();
    for p in policies {
        if p.takes_objective() {
            objective_policies.push(p.name().to_string());
        }
        run.rows.extend(crate::evaluate(p, suite)?);
    }
    let mut text = Vec::new();
    write_csv(&mut text, &run.rows).map_err(|source| PlotError::Write {
        path: dir.join(RESULTS_CSV),
        source,
    })?;
    write_file(&dir.join(RESULTS_CSV), &text)?;
    run.written.push(RESULTS_CSV.into());
    if !run.rows.is_empty() {
        reward_cdf_figure(&dir.join(REWARD_CDF), &run.rows)?;
        run.written.push(REWARD_CDF.into());
    }
    if let Some(spec) = &suite.sweeps {
        sweep_figure(&dir.join(SWEEPS), spec, &run.rows, &objective_policies)?;
        run.written.push(SWEEPS.into());
    }
    if let Some(spec) = &suite.fairness {
        run.fairness = fairness_outputs(dir, spec, policies)?;
        run.written.push("fairness.png".into());
    }
    if let Some(spec) = &suite.friendliness {
        let (rows, figures) = friendliness_outputs(dir, spec, policies)?;
        run.friendliness = rows;
        run.written.extend(figures.iter().map(|f| relative(dir, f)));
    }
    let suite_dir = suite_path.parent().unwrap_or(Path::new("."));
    let names = crate::flow_figures::timeseries_names(&suite.timeseries);
    for (spec, stem) in suite.timeseries.iter().zip(&names) {
        let figure = timeseries_outputs(dir, suite_dir, spec, stem, policies)?;
        run.written.push(relative(dir, &figure));
    }
    let rules = Rules {
        overlay,
        policies: policies
            .iter()
            .filter_map(|p| {
                p.rule().map(|record| PolicyRule {
                    policy: p.name(),
                    record,
                })
            })
            .collect(),
    };
    if !rules.policies.is_empty() {
        let text = serde_json::to_string_pretty(&rules).map_err(|e| PlotError::Write {
            path: dir.join(RULES_JSON),
            source: std::io::Error::other(e),
        })?;
        write_file(&dir.join(RULES_JSON), text.as_bytes())?;
        run.written.push(RULES_JSON.into());
    }
    if !suite.targets.is_empty() {
        let name = suite_name(suite_path);
        let results = run.results();
        let outcomes: Vec<TargetOutcome> = policies
            .iter()
            .flat_map(|p| assess(&suite.targets, &name, p.name(), &results))
            .collect();
        write_file(&dir.join(TARGETS_CSV), targets_csv(&outcomes).as_bytes())?;
        run.written.push(TARGETS_CSV.into());
        run.targets = outcomes;
    }
    Ok(run)
}

fn relative(dir: &Path, file: &Path) -> PathBuf {
    file.strip_prefix(dir).unwrap_or(file).to_path_buf()
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), EvalError> {
    let text = String::from_utf8_lossy(bytes);
    Ok(crate::flow_figures::write_text(path, &text)?)
}
