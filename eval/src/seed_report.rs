//! A recipe's targets over training seeds, as the field reports learned-policy results
//! (rliable; Agarwal et al., NeurIPS 2021): for every check of every target, each seed's value,
//! the interquartile mean with a 95% stratified-bootstrap confidence interval, the value of
//! each policy it is compared against and the probability that a seed does better than that
//! policy (on the check's margin, so "better" follows the bound's direction); per target, how
//! many seeds meet it; and how many seeds meet how many targets. `mocc sweep RECIPE --seeds`
//! writes it as report.json, report.md and report.png.

use crate::stats::{iqm, probability_of_improvement, Bootstrap, Interval};
use crate::targets::{CheckOutcome, TargetOutcome};
use mocc_plot::axes::Axis;
use mocc_plot::chart::{draw_figure, Figure, Line, Panel, PlotError};
use mocc_plot::style::{policy_styles, scheme_colour, Dash, LineStyle, REFERENCE};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One seed's targets (a recipe run's report, reduced to what the statistics need).
#[derive(Debug, Clone, PartialEq)]
pub struct SeedTargets {
    /// The seed.
    pub seed: u64,
    /// Every target of every validation suite, in one order for every seed.
    pub targets: Vec<TargetOutcome>,
}

/// A policy the seeds are compared against, with its targets on the same suites.
#[derive(Debug, Clone, PartialEq)]
pub struct AgainstTargets {
    /// The policy (`copa`, an export folder, ...).
    pub policy: String,
    /// Its targets.
    pub targets: Vec<TargetOutcome>,
}

/// The report over seeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedReport {
    /// The recipe.
    pub recipe: String,
    /// The seeds, in order.
    pub seeds: Vec<u64>,
    /// The policies compared against.
    pub against: Vec<String>,
    /// Per target.
    pub targets: Vec<TargetSummary>,
    /// Per seed: targets met, overall and per group.
    pub per_seed: Vec<SeedCount>,
    /// How many seeds meet at least k targets, for k = 0..=N (overall).
    pub seeds_meeting_at_least: Vec<usize>,
    /// The same per group: (group, counts for k = 0..=targets of the group).
    pub groups: Vec<GroupCount>,
}

/// One target over seeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSummary {
    /// The suite.
    pub suite: String,
    /// The target.
    pub target: String,
    /// Its group.
    pub group: Option<String>,
    /// Whether each seed meets it.
    pub met: Vec<bool>,
    /// Per policy compared against: whether it meets the target, and the probability that a
    /// seed does better (the mean over the target's checks).
    pub against: Vec<AgainstTarget>,
    /// Each check.
    pub checks: Vec<CheckSummary>,
}

/// A compared policy on one target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgainstTarget {
    /// The policy.
    pub policy: String,
    /// Whether it meets the target.
    pub met: bool,
    /// The probability that a seed does better, averaged over the checks.
    pub probability_of_improvement: Option<f64>,
}

/// One check over seeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckSummary {
    /// `fairness.median_jain_index`.
    pub metric: String,
    /// The reduction (`min`, ...).
    pub of: String,
    /// `>= 0.95`.
    pub bound: String,
    /// The lower bound.
    pub at_least: Option<f64>,
    /// The upper bound.
    pub at_most: Option<f64>,
    /// The network it selects, if any.
    pub network: Option<String>,
    /// Each seed's value (None where it had none).
    pub values: Vec<Option<f64>>,
    /// The interquartile mean of the values.
    pub iqm: Option<f64>,
    /// Its 95% stratified-bootstrap confidence interval.
    pub ci95: Option<Interval>,
    /// Per policy compared against: its value and the probability that a seed's margin is
    /// larger.
    pub against: Vec<AgainstCheck>,
}

/// A compared policy on one check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgainstCheck {
    /// The policy.
    pub policy: String,
    /// Its value.
    pub value: Option<f64>,
    /// P(a seed's margin > the policy's), ties one half.
    pub probability_of_improvement: Option<f64>,
}

/// One seed's count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedCount {
    /// The seed.
    pub seed: u64,
    /// Targets met.
    pub met: usize,
    /// Targets judged.
    pub of: usize,
    /// Per group: (group, met, of).
    pub groups: Vec<(String, usize, usize)>,
}

/// How many seeds meet at least k of a group's targets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupCount {
    /// The group ("" for targets without one).
    pub group: String,
    /// Targets in the group.
    pub targets: usize,
    /// Entry k: seeds meeting at least k of them.
    pub seeds_meeting_at_least: Vec<usize>,
}

/// Why a report cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum SeedReportError {
    /// Seeds (or a compared policy) judged different targets.
    #[error("{0}")]
    Mismatch(String),
    /// A figure could not be drawn or a file written.
    #[error(transparent)]
    Output(#[from] PlotError),
}

/// A target's key: suite and name.
fn key(t: &TargetOutcome) -> (&str, &str) {
    (&t.suite, &t.target)
}

/// The margin of a check outcome, the worst possible where it has no value.
fn margin(c: &CheckOutcome) -> f64 {
    c.margin.unwrap_or(f64::NEG_INFINITY)
}

/// Builds the report. Every seed must have judged the same targets in the same order; a
/// compared policy's targets are matched by suite and name (a target it lacks is left out
/// of its comparison).
pub fn seed_report(
    recipe: &str,
    seeds: &[SeedTargets],
    against: &[AgainstTargets],
    bootstrap: Bootstrap,
) -> Result<SeedReport, SeedReportError> {
    let Some(first) = seeds.first() else {
        return Err(SeedReportError::Mismatch("no seeds to report".into()));
    };
    for s in seeds {
        let same = s.targets.len() == first.targets.len()
            && s.targets
                .iter()
                .zip(&first.targets)
                .all(|(a, b)| key(a) == key(b) && a.checks.len() == b.checks.len());
        if !same {
            return Err(SeedReportError::Mismatch(format!(
                "seed {} judged other targets than seed {}",
                s.seed, first.seed
            )));
        }
    }
    let targets = first
        .targets
        .iter()
        .enumerate()
        .map(|(t, head)| target_summary(t, head, seeds, against, bootstrap))
        .collect();
    let per_seed: Vec<SeedCount> = seeds
        .iter()
        .map(|s| {
            let c = crate::targets::TargetCount::of(&s.targets);
            SeedCount {
                seed: s.seed,
                met: c.met,
                of: c.of,
                groups: c.groups,
            }
        })
        .collect();
    let n = first.targets.len();
    let at_least = |counts: &[usize], of: usize| -> Vec<usize> {
        (0..=of)
            .map(|k| counts.iter().filter(|&&m| m >= k).count())
            .collect()
    };
    let overall: Vec<usize> = per_seed.iter().map(|s| s.met).collect();
    let groups = per_seed
        .first()
        .map(|s| s.groups.clone())
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(g, (name, _, of))| {
            let counts: Vec<usize> = per_seed.iter().map(|s| s.groups[g].1).collect();
            GroupCount {
                group: name,
                targets: of,
                seeds_meeting_at_least: at_least(&counts, of),
            }
        })
        .collect();
    Ok(SeedReport {
        recipe: recipe.to_string(),
        seeds: seeds.iter().map(|s| s.seed).collect(),
        against: against.iter().map(|a| a.policy.clone()).collect(),
        targets,
        seeds_meeting_at_least: at_least(&overall, n),
        per_seed,
        groups,
    })
}

fn target_summary(
    t: usize,
    head: &TargetOutcome,
    seeds: &[SeedTargets],
    against: &[AgainstTargets],
    bootstrap: Bootstrap,
) -> TargetSummary {
    let outcomes: Vec<&TargetOutcome> = seeds.iter().map(|s| &s.targets[t]).collect();
    let theirs: Vec<(&str, Option<&TargetOutcome>)> = against
        .iter()
        .map(|a| {
            let found = a.targets.iter().find(|o| key(o) == key(head));
            (a.policy.as_str(), found)
        })
        .collect();
    let checks: Vec<CheckSummary> = head
        .checks
        .iter()
        .enumerate()
        .map(|(c, check)| {
            let values: Vec<Option<f64>> = outcomes.iter().map(|o| o.checks[c].value).collect();
            let known: Vec<f64> = values.iter().flatten().copied().collect();
            let margins: Vec<f64> = outcomes.iter().map(|o| margin(&o.checks[c])).collect();
            let against = theirs
                .iter()
                .map(|(policy, o)| {
                    let other = o.and_then(|o| o.checks.get(c));
                    AgainstCheck {
                        policy: policy.to_string(),
                        value: other.and_then(|x| x.value),
                        probability_of_improvement: other.and_then(|x| {
                            probability_of_improvement(
                                std::slice::from_ref(&margins),
                                &[vec![margin(x)]],
                            )
                        }),
                    }
                })
                .collect();
            CheckSummary {
                metric: check.check.metric.to_string(),
                of: check.check.of.name().to_string(),
                bound: check.check.bound_text(),
                at_least: check.check.at_least,
                at_most: check.check.at_most,
                network: check.check.network.clone(),
                iqm: iqm(&known),
                ci95: bootstrap.interval(std::slice::from_ref(&known), |r| iqm(&r[0])),
                values,
                against,
            }
        })
        .collect();
    let against = theirs
        .iter()
        .enumerate()
        .map(|(a, (policy, o))| {
            let pois: Vec<f64> = checks
                .iter()
                .filter_map(|c| c.against[a].probability_of_improvement)
                .collect();
            AgainstTarget {
                policy: policy.to_string(),
                met: o.is_some_and(|o| o.met),
                probability_of_improvement: (pois.len() == checks.len())
                    .then(|| crate::stats::mean(&pois))
                    .flatten(),
            }
        })
        .collect();
    TargetSummary {
        suite: head.suite.clone(),
        target: head.target.clone(),
        group: head.group.clone(),
        met: outcomes.iter().map(|o| o.met).collect(),
        against,
        checks,
    }
}

fn number(v: Option<f64>) -> String {
    match v {
        Some(v) if v.abs() >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.3}"),
        None => "-".into(),
    }
}

/// The y range a compared policy's line may take in a check's panel: the seeds' values, the
/// interval and the bounds, widened by their own span on each side, so that one policy far
/// away (BBR at 11 times Cubic's rate) does not flatten the seeds into one line.
fn own_range(c: &CheckSummary) -> (f64, f64) {
    let own = c
        .values
        .iter()
        .flatten()
        .copied()
        .chain(c.iqm)
        .chain(c.ci95.into_iter().flat_map(|ci| [ci.low, ci.high]))
        .chain(c.at_least)
        .chain(c.at_most);
    let (lo, hi) = own.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if !lo.is_finite() {
        return (f64::NEG_INFINITY, f64::INFINITY);
    }
    let span = (hi - lo).max(1e-3 * hi.abs().max(1.0));
    (lo - span, hi + span)
}

impl SeedReport {
    /// The report as a Markdown page: the count per seed, how many seeds meet how many
    /// targets, then one table row per check.
    pub fn markdown(&self) -> String {
        let mut md = format!(
            "# {}: targets over {} seeds\n\n",
            self.recipe,
            self.seeds.len()
        );
        md.push_str("| seed | targets met |");
        for g in &self.groups {
            if !g.group.is_empty() {
                md.push_str(&format!(" {} |", g.group));
            }
        }
        md.push_str("\n|---|---|");
        for g in &self.groups {
            if !g.group.is_empty() {
                md.push_str("---|");
            }
        }
        md.push('\n');
        for s in &self.per_seed {
            md.push_str(&format!("| {} | {} of {} |", s.seed, s.met, s.of));
            for (g, met, of) in &s.groups {
                if !g.is_empty() {
                    md.push_str(&format!(" {met} of {of} |"));
                }
            }
            md.push('\n');
        }
        md.push_str("\nSeeds meeting at least k targets:\n\n");
        for g in &self.groups {
            let name = if g.group.is_empty() {
                "targets"
            } else {
                &g.group
            };
            let cells: Vec<String> = g
                .seeds_meeting_at_least
                .iter()
                .enumerate()
                .skip(1)
                .map(|(k, n)| format!(">= {k}: {n}"))
                .collect();
            md.push_str(&format!(
                "- {name} (of {}): {}\n",
                g.targets,
                cells.join(", ")
            ));
        }
        md.push_str(&format!(
            "\nPer check: each seed's value, the interquartile mean (IQM) with its 95% \
             stratified-bootstrap interval, and for each compared policy its value and \
             P(seed better), the probability that a seed's margin to the bound is larger.\n\n\
             | target | check | bound | {} | IQM [95% CI] | seeds met |",
            self.seeds
                .iter()
                .map(|s| format!("s{s}"))
                .collect::<Vec<_>>()
                .join(" | ")
        ));
        for a in &self.against {
            md.push_str(&format!(" {a} | P(seed > {a}) |"));
        }
        md.push_str("\n|---|---|---|");
        md.push_str(&"---|".repeat(self.seeds.len() + 2 + 2 * self.against.len()));
        md.push('\n');
        for t in &self.targets {
            let met = t.met.iter().filter(|m| **m).count();
            for (i, c) in t.checks.iter().enumerate() {
                let name = if i == 0 {
                    format!("{} ({})", t.target, t.suite)
                } else {
                    String::new()
                };
                let check = match &c.network {
                    Some(n) => format!("{} {} on {n}", c.of, c.metric),
                    None => format!("{} {}", c.of, c.metric),
                };
                md.push_str(&format!("| {name} | {check} | {} |", c.bound));
                for v in &c.values {
                    md.push_str(&format!(" {} |", number(*v)));
                }
                let ci = c.ci95.map_or_else(
                    || "-".to_string(),
                    |i| format!("[{}, {}]", number(Some(i.low)), number(Some(i.high))),
                );
                let seeds_met = if i == 0 {
                    format!("{met} of {}", t.met.len())
                } else {
                    String::new()
                };
                md.push_str(&format!(" {} {ci} | {seeds_met} |", number(c.iqm)));
                for a in &c.against {
                    md.push_str(&format!(
                        " {} | {} |",
                        number(a.value),
                        a.probability_of_improvement
                            .map_or_else(|| "-".into(), |p| format!("{p:.2}"))
                    ));
                }
                md.push('\n');
            }
        }
        md
    }

    /// The figure: one panel per check, each seed's value as a dot, the IQM and its interval as
    /// dashed and dotted lines, the bound in grey, each compared policy's value in its colour.
    pub fn figure(&self, out: &Path) -> Result<(), SeedReportError> {
        let n = self.seeds.len() as f64;
        let span = |y: f64| vec![(0.5, y), (n + 0.5, y)];
        let seeds_style = LineStyle::solid(scheme_colour("mocc").unwrap_or(REFERENCE));
        let iqm_style = seeds_style.with_dash(Dash::Dashed).with_width(2);
        let ci_style = seeds_style.with_dash(Dash::Dotted).with_width(1);
        let bound_style = LineStyle::solid(REFERENCE)
            .with_dash(Dash::Dashed)
            .with_width(1);
        let names: Vec<&str> = self.against.iter().map(String::as_str).collect();
        let against_styles: Vec<LineStyle> = policy_styles(&names)
            .into_iter()
            .map(|s| {
                let dash = if s.dash == Dash::Solid {
                    Dash::Dashed
                } else {
                    s.dash
                };
                s.with_dash(dash).with_width(2)
            })
            .collect();
        let mut panels = Vec::new();
        for t in &self.targets {
            for c in &t.checks {
                let mut lines = vec![Line {
                    label: format!("{} (each seed)", self.recipe),
                    points: c
                        .values
                        .iter()
                        .enumerate()
                        .filter_map(|(i, v)| v.map(|v| ((i + 1) as f64, v)))
                        .collect(),
                    style: seeds_style,
                }];
                if let Some(v) = c.iqm {
                    lines.push(Line {
                        label: "interquartile mean".into(),
                        points: span(v),
                        style: iqm_style,
                    });
                }
                if let Some(ci) = c.ci95 {
                    for v in [ci.low, ci.high] {
                        lines.push(Line {
                            label: "95% interval".into(),
                            points: span(v),
                            style: ci_style,
                        });
                    }
                }
                for v in c.at_least.into_iter().chain(c.at_most) {
                    lines.push(Line {
                        label: "target bound".into(),
                        points: span(v),
                        style: bound_style,
                    });
                }
                let (lo, hi) = own_range(c);
                let mut off_scale = Vec::new();
                for (a, style) in c.against.iter().zip(&against_styles) {
                    let Some(v) = a.value else { continue };
                    if v < lo || v > hi {
                        off_scale.push(format!("{} {}", a.policy, number(Some(v))));
                        continue;
                    }
                    lines.push(Line {
                        label: a.policy.clone(),
                        points: span(v),
                        style: *style,
                    });
                }
                let mut title = match c.network.as_deref() {
                    Some(network) => format!("{} on {network}", t.target),
                    None => t.target.clone(),
                };
                if !off_scale.is_empty() {
                    title = format!("{title}; off scale: {}", off_scale.join(", "));
                }
                let y_label = format!("{} {}", c.of, c.metric);
                let mut panel = Panel::new(
                    title,
                    Axis::linear("seed (index)").range(0.5, n + 0.5),
                    Axis::linear(y_label),
                    lines,
                );
                panel.markers = true;
                panels.push(panel);
            }
        }
        let mut legend: Vec<(String, LineStyle)> = vec![
            (format!("{} (each seed)", self.recipe), seeds_style),
            ("interquartile mean".into(), iqm_style),
            ("95% interval".into(), ci_style),
            ("target bound".into(), bound_style),
        ];
        legend.extend(self.against.iter().cloned().zip(against_styles));
        let columns = 4.min(panels.len().max(1));
        draw_figure(
            out,
            &Figure {
                title: Some(format!(
                    "{} over {} seeds: each check of each target",
                    self.recipe,
                    self.seeds.len()
                )),
                panels,
                columns,
                panel_size: (520, 380),
                legend,
            },
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
