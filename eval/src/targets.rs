//! Targets: what a suite asks of a policy, defined once in the suite file (`targets:`) and
//! judged by one piece of code for `mocc eval` (targets.csv, "meets K of N targets"), a
//! recipe's report and a sweep over seeds.
//!
//! A target has a name, an optional group (`sharing`, `alone`, ...) and one or more checks; it
//! is met when every check is. A check reads one metric of one section of the evaluation's
//! results (`results.utilization`, `fairness.median_jain_index`, `friendliness.ratio`), keeps
//! the cases its filters select (a network by label, fairness runs by flow count), reduces them
//! to one value (`of: min | max | mean | median`, or for results `spearman_w_thr`: the rank
//! correlation of the objective's throughput weight with the metric's mean per weight) and
//! compares it with `at_least` and/or `at_most`. Its margin (how far inside the bound the
//! value lies; negative outside) is what a report over seeds compares policies by.
//!
//! ```yaml
//! targets:
//!   - name: fair-1200
//!     group: sharing
//!     about: 2-4 staggered flows share 1,200 pkt/s evenly and keep it full
//!     checks:
//!       - {metric: fairness.median_jain_index, network: bw1200_d0.015_q60, of: min, at_least: 0.95}
//!       - {metric: fairness.utilization, network: bw1200_d0.015_q60, of: min, at_least: 0.9}
//! ```

use crate::fairness_outputs::FairnessSummary;
use crate::flow_figures::FriendlinessRow;
use crate::results::EvalRow;
use crate::suite::Suite;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// One target of a suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    /// Its name, unique in the suite (targets.csv, reports).
    pub name: String,
    /// The group it counts in (e.g. `sharing`, `alone`); reports count targets met per group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// What it asks, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub about: Option<String>,
    /// Its checks; the target is met when every one is.
    pub checks: Vec<Check>,
}

/// One check of a target: a metric over the selected cases, reduced and bounded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// `section.column`: `results.<utilization|thr_pps|mean_rtt_s|rtt_ratio|loss|mocc_reward|
    /// aurora_reward>`, `fairness.<median_jain_index|utilization|rtt_ratio|min_max_rate_ratio>`
    /// or `friendliness.ratio`.
    pub metric: Metric,
    /// Only the cases on this network (its label as the outputs write it, e.g.
    /// `bw800_d0.02_q100` or a scenario file's name such as `leo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    /// Only fairness runs of these flow counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows: Option<Vec<usize>>,
    /// How the selected cases become one value (default `min`).
    #[serde(default)]
    pub of: Reduce,
    /// The value must be at least this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_least: Option<f64>,
    /// The value must be at most this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_most: Option<f64>,
}

/// The section of an evaluation's results a metric is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// results.csv: one row per network (or scenario) x objective x seed.
    Results,
    /// fairness-summary.csv: one row per fairness run.
    Fairness,
    /// friendliness.csv: one row per buffer.
    Friendliness,
}

impl Section {
    /// Its name in metric paths.
    pub fn name(self) -> &'static str {
        match self {
            Section::Results => "results",
            Section::Fairness => "fairness",
            Section::Friendliness => "friendliness",
        }
    }
}

/// A metric: a section and one of its columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    /// The section.
    pub section: Section,
    /// The column.
    pub column: &'static str,
}

const RESULTS_COLUMNS: [&str; 7] = [
    "utilization",
    "thr_pps",
    "mean_rtt_s",
    "rtt_ratio",
    "loss",
    "mocc_reward",
    "aurora_reward",
];
const FAIRNESS_COLUMNS: [&str; 4] = [
    "median_jain_index",
    "utilization",
    "rtt_ratio",
    "min_max_rate_ratio",
];
const FRIENDLINESS_COLUMNS: [&str; 1] = ["ratio"];

impl FromStr for Metric {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (section, column) = s.split_once('.').ok_or_else(|| {
            format!("expected section.column, e.g. results.utilization (got {s:?})")
        })?;
        let (section, columns): (Section, &[&'static str]) = match section {
            "results" => (Section::Results, &RESULTS_COLUMNS),
            "fairness" => (Section::Fairness, &FAIRNESS_COLUMNS),
            "friendliness" => (Section::Friendliness, &FRIENDLINESS_COLUMNS),
            other => {
                return Err(format!(
                    "unknown section {other:?} (expected results, fairness or friendliness)"
                ))
            }
        };
        let column = columns.iter().find(|c| **c == column).ok_or_else(|| {
            format!(
                "{} has no metric {column:?} (it has {})",
                section.name(),
                columns.join(", ")
            )
        })?;
        Ok(Metric { section, column })
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.section.name(), self.column)
    }
}

impl Serialize for Metric {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Metric {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// How a check's cases become one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reduce {
    /// The lowest (with `at_least`: every case must meet the bound).
    #[default]
    Min,
    /// The highest.
    Max,
    /// The mean.
    Mean,
    /// The median.
    Median,
    /// Spearman's rank correlation of the objective's throughput weight with the metric's
    /// mean at each weight (results only): whether the policy follows its objective.
    SpearmanWThr,
}

impl Reduce {
    /// Its name in suites and outputs.
    pub fn name(self) -> &'static str {
        match self {
            Reduce::Min => "min",
            Reduce::Max => "max",
            Reduce::Mean => "mean",
            Reduce::Median => "median",
            Reduce::SpearmanWThr => "spearman_w_thr",
        }
    }
}

/// The largest number of targets a suite may hold.
pub const MAX_TARGETS: usize = 256;

impl Target {
    /// Checks the target against its suite: a name, at least one check, each with a bound,
    /// reading a section the suite runs, with filters that select cases it produces. `field`
    /// names it in messages (`targets[2]`).
    pub fn validate(&self, field: &str, suite: &Suite) -> Result<(), String> {
        if self.name.trim().is_empty() {
            return Err(format!("{field}.name: must not be empty"));
        }
        if self.checks.is_empty() {
            return Err(format!("{field}.checks: at least one check is required"));
        }
        for (i, c) in self.checks.iter().enumerate() {
            c.validate(&format!("{field}.checks[{i}]"), suite)?;
        }
        Ok(())
    }
}

impl Check {
    fn validate(&self, field: &str, suite: &Suite) -> Result<(), String> {
        if self.at_least.is_none() && self.at_most.is_none() {
            return Err(format!("{field}: give at_least, at_most or both"));
        }
        for (name, bound) in [("at_least", self.at_least), ("at_most", self.at_most)] {
            if bound.is_some_and(|b| !b.is_finite()) {
                return Err(format!("{field}.{name}: must be finite"));
            }
        }
        if let (Some(lo), Some(hi)) = (self.at_least, self.at_most) {
            if lo > hi {
                return Err(format!(
                    "{field}: at_least {lo} is above at_most {hi}; no value meets both"
                ));
            }
        }
        let section = self.metric.section;
        let labels = network_labels(suite, section).ok_or_else(|| {
            format!(
                "{field}.metric: {} needs the suite's {} section",
                self.metric,
                match section {
                    Section::Results => "networks, sweeps or scenarios",
                    Section::Fairness => "fairness",
                    Section::Friendliness => "friendliness",
                }
            )
        })?;
        if let Some(n) = &self.network {
            if !labels.contains(n) {
                return Err(format!(
                    "{field}.network: the suite's {} cases have no network {n:?} (they have {})",
                    section.name(),
                    labels.join(", ")
                ));
            }
        }
        if let Some(flows) = &self.flows {
            let Some(spec) = suite
                .fairness
                .as_ref()
                .filter(|_| section == Section::Fairness)
            else {
                return Err(format!("{field}.flows: selects fairness runs only"));
            };
            if let Some(f) = flows.iter().find(|f| !spec.flows.contains(f)) {
                return Err(format!(
                    "{field}.flows: the fairness section runs no case of {f} flows (it runs {:?})",
                    spec.flows
                ));
            }
        }
        if self.of == Reduce::SpearmanWThr && section != Section::Results {
            return Err(format!("{field}.of: spearman_w_thr reads results only"));
        }
        Ok(())
    }

    /// How far `value` lies inside the bounds (the smaller of its distances to each bound
    /// given); negative outside.
    pub fn margin(&self, value: f64) -> f64 {
        let above = self.at_least.map(|lo| value - lo);
        let below = self.at_most.map(|hi| hi - value);
        match (above, below) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => 0.0,
        }
    }

    /// Whether `value` meets the bounds.
    pub fn meets(&self, value: f64) -> bool {
        value.is_finite() && self.margin(value) >= 0.0
    }

    /// The bounds in words: `>= 0.95`, `<= 1.5`, `in [0.5, 2]`.
    pub fn bound_text(&self) -> String {
        match (self.at_least, self.at_most) {
            (Some(lo), Some(hi)) => format!("in [{lo}, {hi}]"),
            (Some(lo), None) => format!(">= {lo}"),
            (None, Some(hi)) => format!("<= {hi}"),
            (None, None) => String::new(),
        }
    }

    /// The selected cases' values of one policy, reduced (None without cases, or where the
    /// reduction is undefined).
    fn value(&self, policy: &str, results: &SuiteResults) -> (Option<f64>, usize) {
        let on = |net: &str| self.network.as_deref().is_none_or(|n| n == net);
        match self.metric.section {
            Section::Results => {
                let rows: Vec<&EvalRow> = results
                    .rows
                    .iter()
                    .filter(|r| r.policy == policy && on(&r.network))
                    .collect();
                let column = |r: &EvalRow| results_column(r, self.metric.column);
                if self.of == Reduce::SpearmanWThr {
                    return (spearman_w_thr(&rows, column), rows.len());
                }
                let values: Vec<f64> = rows.iter().filter_map(|r| column(r)).collect();
                (reduce(self.of, &values), rows.len())
            }
            Section::Fairness => {
                let values: Vec<Option<f64>> = results
                    .fairness
                    .iter()
                    .filter(|r| r.policy == policy && on(&r.network))
                    .filter(|r| self.flows.as_ref().is_none_or(|f| f.contains(&r.flows)))
                    .map(|r| fairness_column(r, self.metric.column))
                    .collect();
                let n = values.len();
                // A run without the value (no RTT sample) fails the check rather than vanish.
                let values: Option<Vec<f64>> = values.into_iter().collect();
                (values.and_then(|v| reduce(self.of, &v)), n)
            }
            Section::Friendliness => {
                let values: Vec<f64> = results
                    .friendliness
                    .iter()
                    .filter(|r| r.policy == policy && on(&r.network))
                    .map(|r| r.ratio)
                    .collect();
                (reduce(self.of, &values), values.len())
            }
        }
    }
}

/// The network labels of a section's cases in `suite` (None when the suite runs no such
/// cases).
fn network_labels(suite: &Suite, section: Section) -> Option<Vec<String>> {
    match section {
        Section::Results => {
            let mut labels: Vec<String> = suite.all_networks().iter().map(|n| n.label()).collect();
            labels.extend(suite.scenarios.iter().map(|s| s.label()));
            (!labels.is_empty()).then_some(labels)
        }
        Section::Fairness => suite
            .fairness
            .as_ref()
            .map(|f| f.all_networks().iter().map(|n| n.label()).collect()),
        Section::Friendliness => suite
            .friendliness
            .as_ref()
            .map(|f| f.networks().iter().map(|(_, n)| n.label()).collect()),
    }
}

fn results_column(r: &EvalRow, column: &str) -> Option<f64> {
    let m = &r.metrics;
    let v = match column {
        "utilization" => m.utilization,
        "thr_pps" => m.thr_pps,
        "mean_rtt_s" => m.mean_rtt_s,
        "rtt_ratio" => m.rtt_ratio,
        "loss" => m.loss,
        "mocc_reward" => m.mocc_reward,
        "aurora_reward" => m.aurora_reward,
        _ => return None,
    };
    Some(v)
}

fn fairness_column(r: &FairnessSummary, column: &str) -> Option<f64> {
    match column {
        "median_jain_index" => Some(r.median_jain_index),
        "utilization" => Some(r.utilization),
        "rtt_ratio" => r.rtt_ratio,
        "min_max_rate_ratio" => Some(if r.max_min_rate_ratio > 0.0 {
            1.0 / r.max_min_rate_ratio
        } else {
            0.0
        }),
        _ => None,
    }
}

fn reduce(of: Reduce, values: &[f64]) -> Option<f64> {
    if values.iter().any(|v| v.is_nan()) {
        return None;
    }
    match of {
        Reduce::Min => values.iter().copied().reduce(f64::min),
        Reduce::Max => values.iter().copied().reduce(f64::max),
        Reduce::Mean => crate::stats::mean(values),
        Reduce::Median => crate::stats::median(values),
        Reduce::SpearmanWThr => None,
    }
}

/// Spearman's correlation of `w_thr` with the column's mean over the rows at each `w_thr`.
fn spearman_w_thr(rows: &[&EvalRow], column: impl Fn(&EvalRow) -> Option<f64>) -> Option<f64> {
    let mut weights: Vec<f64> = Vec::new();
    let mut sums: Vec<(f64, usize)> = Vec::new();
    for r in rows {
        let v = column(r)?;
        match weights.iter().position(|w| *w == r.w_thr) {
            Some(i) => {
                sums[i].0 += v;
                sums[i].1 += 1;
            }
            None => {
                weights.push(r.w_thr);
                sums.push((v, 1));
            }
        }
    }
    let means: Vec<f64> = sums.iter().map(|(s, n)| s / *n as f64).collect();
    crate::stats::spearman(&weights, &means)
}

/// What one evaluation of a suite gave, as targets read it (every policy's rows together).
#[derive(Debug, Clone, Copy, Default)]
pub struct SuiteResults<'a> {
    /// results.csv's rows.
    pub rows: &'a [EvalRow],
    /// fairness-summary.csv's rows.
    pub fairness: &'a [FairnessSummary],
    /// friendliness.csv's rows.
    pub friendliness: &'a [FriendlinessRow],
}

/// One check's outcome for one policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckOutcome {
    /// The check.
    pub check: Check,
    /// The reduced value (None without cases or where undefined).
    pub value: Option<f64>,
    /// How many cases it read.
    pub cases: usize,
    /// Whether the value meets the bounds.
    pub met: bool,
    /// How far inside the bounds (negative outside; None without a value).
    pub margin: Option<f64>,
}

/// One target's outcome for one policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetOutcome {
    /// The policy.
    pub policy: String,
    /// The suite (its file name without extension).
    pub suite: String,
    /// The target's name.
    pub target: String,
    /// Its group.
    pub group: Option<String>,
    /// Every check met.
    pub met: bool,
    /// Each check.
    pub checks: Vec<CheckOutcome>,
}

/// Judges `targets` for `policy` on `results` of the suite named `suite`.
pub fn assess(
    targets: &[Target],
    suite: &str,
    policy: &str,
    results: &SuiteResults,
) -> Vec<TargetOutcome> {
    targets
        .iter()
        .map(|t| {
            let checks: Vec<CheckOutcome> = t
                .checks
                .iter()
                .map(|c| {
                    let (value, cases) = c.value(policy, results);
                    CheckOutcome {
                        check: c.clone(),
                        value,
                        cases,
                        met: value.is_some_and(|v| c.meets(v)),
                        margin: value.map(|v| c.margin(v)),
                    }
                })
                .collect();
            TargetOutcome {
                policy: policy.to_string(),
                suite: suite.to_string(),
                target: t.name.clone(),
                group: t.group.clone(),
                met: checks.iter().all(|c| c.met),
                checks,
            }
        })
        .collect()
}

/// Targets met and judged, overall and per group (in order of first appearance), for one
/// policy's outcomes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetCount {
    /// Targets met.
    pub met: usize,
    /// Targets judged.
    pub of: usize,
    /// Per group (targets without a group are counted under "").
    pub groups: Vec<(String, usize, usize)>,
}

impl TargetCount {
    /// Counts `outcomes` (one policy's).
    pub fn of(outcomes: &[TargetOutcome]) -> Self {
        let mut groups: Vec<(String, usize, usize)> = Vec::new();
        for o in outcomes {
            let g = o.group.clone().unwrap_or_default();
            let i = match groups.iter().position(|(name, _, _)| *name == g) {
                Some(i) => i,
                None => {
                    groups.push((g, 0, 0));
                    groups.len() - 1
                }
            };
            groups[i].2 += 1;
            if o.met {
                groups[i].1 += 1;
            }
        }
        Self {
            met: outcomes.iter().filter(|o| o.met).count(),
            of: outcomes.len(),
            groups,
        }
    }

    /// `meets K of N targets (sharing K1 of N1, alone K2 of N2)`.
    pub fn sentence(&self) -> String {
        let named: Vec<String> = self
            .groups
            .iter()
            .filter(|(g, _, _)| !g.is_empty())
            .map(|(g, m, n)| format!("{g} {m} of {n}"))
            .collect();
        let detail = if named.is_empty() || (named.len() == 1 && self.groups.len() == 1) {
            String::new()
        } else {
            format!(" ({})", named.join(", "))
        };
        format!("meets {} of {} targets{detail}", self.met, self.of)
    }
}

/// The name of the file of target outcomes in an evaluation's folder.
pub const TARGETS_CSV: &str = "targets.csv";

/// targets.csv: one row per check of every target and policy.
pub fn targets_csv(outcomes: &[TargetOutcome]) -> String {
    let mut text = String::from(
        "policy,suite,target,group,target_met,check,metric,network,flows,of,at_least,at_most,\
         value,cases,met,margin\n",
    );
    for o in outcomes {
        for (i, c) in o.checks.iter().enumerate() {
            let k = &c.check;
            let flows = k.flows.as_ref().map_or_else(String::new, |f| {
                f.iter().map(usize::to_string).collect::<Vec<_>>().join(" ")
            });
            let cells = [
                csv_cell(&o.policy),
                csv_cell(&o.suite),
                csv_cell(&o.target),
                csv_cell(o.group.as_deref().unwrap_or("")),
                o.met.to_string(),
                i.to_string(),
                k.metric.to_string(),
                csv_cell(k.network.as_deref().unwrap_or("")),
                flows,
                k.of.name().to_string(),
                optional(k.at_least),
                optional(k.at_most),
                optional(c.value),
                c.cases.to_string(),
                c.met.to_string(),
                optional(c.margin),
            ];
            text.push_str(&cells.join(","));
            text.push('\n');
        }
    }
    text
}

fn optional(v: Option<f64>) -> String {
    v.map_or_else(String::new, |v| v.to_string())
}

/// A CSV cell: quoted (with quotes doubled) when it holds a comma, quote or line break.
pub fn csv_cell(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests;
