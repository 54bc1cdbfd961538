//! Targets judged: each policy's outcome on every target of a suite (the schema is
//! [`crate::suite::targets`]), by one piece of code for `mocc eval` (targets.csv, "meets K of N
//! targets"), a recipe's report and a sweep over seeds.

use crate::fairness_outputs::FairnessSummary;
use crate::flow_figures::FriendlinessRow;
use crate::results::EvalRow;
pub use crate::suite::targets::{Cases, Check, Metric, Reduce, Section, Target, MAX_TARGETS};
use serde::{Deserialize, Serialize};

/// The selected cases' values of one policy under `check`, reduced (None without cases, or
/// where the reduction is undefined), with how many cases it read.
fn check_value(check: &Check, policy: &str, results: &SuiteResults) -> (Option<f64>, usize) {
    let on = |net: &str| check.network.as_deref().is_none_or(|n| n == net);
    match check.metric.section {
        Section::Results => {
            let rows: Vec<&EvalRow> = results
                .rows
                .iter()
                .filter(|r| r.policy == policy && on(&r.network))
                .collect();
            let column = |r: &EvalRow| results_column(r, check.metric.column);
            if check.of == Reduce::SpearmanWThr {
                return (spearman_w_thr(&rows, column), rows.len());
            }
            let values: Vec<f64> = rows.iter().filter_map(|r| column(r)).collect();
            (reduce(check.of, &values), rows.len())
        }
        Section::Fairness => {
            let values: Vec<Option<f64>> = results
                .fairness
                .iter()
                .filter(|r| r.policy == policy && on(&r.network))
                .filter(|r| check.flows.as_ref().is_none_or(|f| f.contains(&r.flows)))
                .map(|r| fairness_column(r, check.metric.column))
                .collect();
            let n = values.len();
            // A run without the value (no RTT sample) fails the check rather than vanish.
            let values: Option<Vec<f64>> = values.into_iter().collect();
            (values.and_then(|v| reduce(check.of, &v)), n)
        }
        Section::Friendliness => {
            let values: Vec<f64> = results
                .friendliness
                .iter()
                .filter(|r| r.policy == policy && on(&r.network))
                .map(|r| r.ratio)
                .collect();
            (reduce(check.of, &values), values.len())
        }
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
                    let (value, cases) = check_value(c, policy, results);
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
                mocc_outputs::csv::cell(&o.policy),
                mocc_outputs::csv::cell(&o.suite),
                mocc_outputs::csv::cell(&o.target),
                mocc_outputs::csv::cell(o.group.as_deref().unwrap_or("")),
                o.met.to_string(),
                i.to_string(),
                k.metric.to_string(),
                mocc_outputs::csv::cell(k.network.as_deref().unwrap_or("")),
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

#[cfg(test)]
mod tests;
