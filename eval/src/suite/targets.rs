//! The schema of a suite's `targets:` section (what `mocc eval` judges each policy by; the
//! judging is [`crate::targets`]), and its checks against the cases the suite runs.
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

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The cases a suite runs, as its targets' checks may select them: each section's network
/// labels (None when the suite does not run the section) and the fairness section's flow
/// counts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cases {
    /// results.csv's networks (fixed links, sweeps and scenario files).
    pub results: Option<Vec<String>>,
    /// The fairness section's networks.
    pub fairness: Option<Vec<String>>,
    /// The fairness section's flow counts.
    pub fairness_flows: Vec<usize>,
    /// The friendliness section's networks (one per buffer).
    pub friendliness: Option<Vec<String>>,
}

impl Cases {
    /// The network labels of a section (None when the suite does not run it).
    pub fn labels(&self, section: Section) -> Option<&Vec<String>> {
        match section {
            Section::Results => self.results.as_ref(),
            Section::Fairness => self.fairness.as_ref(),
            Section::Friendliness => self.friendliness.as_ref(),
        }
    }
}

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
    /// Checks the target against the cases its suite runs: a name, at least one check, each
    /// with a bound, reading a section the suite runs, with filters that select cases it
    /// produces. `field` names it in messages (`targets[2]`).
    pub fn validate(&self, field: &str, cases: &Cases) -> Result<(), String> {
        if self.name.trim().is_empty() {
            return Err(format!("{field}.name: must not be empty"));
        }
        if self.checks.is_empty() {
            return Err(format!("{field}.checks: at least one check is required"));
        }
        for (i, c) in self.checks.iter().enumerate() {
            c.validate(&format!("{field}.checks[{i}]"), cases)?;
        }
        Ok(())
    }
}

impl Check {
    fn validate(&self, field: &str, cases: &Cases) -> Result<(), String> {
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
        let labels = cases.labels(section).ok_or_else(|| {
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
            if section != Section::Fairness {
                return Err(format!("{field}.flows: selects fairness runs only"));
            }
            if let Some(f) = flows.iter().find(|f| !cases.fairness_flows.contains(f)) {
                return Err(format!(
                    "{field}.flows: the fairness section runs no case of {f} flows (it runs {:?})",
                    cases.fairness_flows
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
}
