//! The evaluation figures `mocc eval` draws from its rows: the paper's Figure 5 (utilization and
//! RTT ratio against bandwidth, RTT, random loss and buffer size) and Figure 7 (the CDF of the
//! normalized reward over networks x objectives).

use crate::eval::{EvalRow, SuiteNetwork};
use crate::plot::{
    display_name, draw_figure, is_classic, policy_styles, Axis, Dash, Figure, Legend, Line,
    LineStyle, Panel, PlotError, Scale, MAX_LINES_PER_PANEL, REFERENCE,
};
use crate::simulate::{Horizon, MiRow};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A metric of an evaluation row.
type Metric = fn(&EvalRow) -> f64;

/// One-parameter sweeps around a base network (the `sweeps:` section of a suite).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    /// The network every sweep varies one parameter of.
    pub base: SuiteNetwork,
    /// Bandwidths (packets/s).
    #[serde(default)]
    pub bw_pps: Vec<f64>,
    /// One-way delays (s).
    #[serde(default)]
    pub delay_s: Vec<f64>,
    /// Random loss rates.
    #[serde(default)]
    pub loss: Vec<f64>,
    /// Buffer sizes (packets).
    #[serde(default)]
    pub queue_pkts: Vec<f64>,
}

/// A swept parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepParam {
    /// Bandwidth.
    Bandwidth,
    /// One-way delay.
    Delay,
    /// Random loss.
    Loss,
    /// Buffer size.
    Queue,
}

impl SweepParam {
    /// Every parameter, in figure order.
    pub const ALL: [SweepParam; 4] = [
        SweepParam::Bandwidth,
        SweepParam::Delay,
        SweepParam::Loss,
        SweepParam::Queue,
    ];

    /// Axis label with units.
    pub fn label(self) -> &'static str {
        match self {
            SweepParam::Bandwidth => "bandwidth (packets/s)",
            SweepParam::Delay => "base RTT (ms)",
            SweepParam::Loss => "random loss rate (fraction of packets)",
            SweepParam::Queue => "buffer (packets)",
        }
    }

    /// Short name in panel titles.
    fn name(self) -> &'static str {
        match self {
            SweepParam::Bandwidth => "bandwidth",
            SweepParam::Delay => "base RTT",
            SweepParam::Loss => "random loss",
            SweepParam::Queue => "buffer",
        }
    }

    /// The x axis: logarithmic for the parameters swept over decades.
    fn axis(self) -> Axis {
        match self {
            SweepParam::Loss => Axis::linear(self.label()),
            _ => Axis::log(format!("{} (log scale)", self.label())),
        }
    }

    /// The value shown on the x axis for a network.
    fn axis_value(self, n: &SuiteNetwork) -> f64 {
        match self {
            SweepParam::Bandwidth => n.bw_pps,
            SweepParam::Delay => 2000.0 * n.delay_s,
            SweepParam::Loss => n.loss,
            SweepParam::Queue => n.queue_pkts,
        }
    }
}

impl SweepSpec {
    /// The networks of every sweep, with the parameter they belong to.
    pub fn networks(&self) -> Vec<(SweepParam, SuiteNetwork)> {
        let b = self.base;
        let mut out = Vec::new();
        for &v in &self.bw_pps {
            out.push((SweepParam::Bandwidth, SuiteNetwork { bw_pps: v, ..b }));
        }
        for &v in &self.delay_s {
            out.push((SweepParam::Delay, SuiteNetwork { delay_s: v, ..b }));
        }
        for &v in &self.loss {
            out.push((SweepParam::Loss, SuiteNetwork { loss: v, ..b }));
        }
        for &v in &self.queue_pkts {
            out.push((SweepParam::Queue, SuiteNetwork { queue_pkts: v, ..b }));
        }
        out
    }
}

/// A line of the sweep figure: one policy, and one objective for policies that take it.
#[derive(Debug, Clone, PartialEq)]
struct LineKey {
    policy: String,
    objective: Option<[f64; 3]>,
}

impl LineKey {
    fn of(r: &EvalRow, per_objective: bool) -> Self {
        Self {
            policy: r.policy.clone(),
            objective: per_objective.then_some([r.w_thr, r.w_lat, r.w_loss]),
        }
    }

    fn label(&self) -> String {
        match self.objective {
            Some(w) => format!(
                "{} w=({}, {}, {})",
                display_name(&self.policy),
                w[0],
                w[1],
                w[2]
            ),
            None => display_name(&self.policy),
        }
    }
}

/// Means of a metric per (line, sweep point), in sweep order.
fn sweep_lines(
    rows: &[EvalRow],
    points: &[(SweepParam, SuiteNetwork)],
    param: SweepParam,
    objective_policies: &[String],
    metric: Metric,
) -> Vec<(LineKey, Vec<(f64, f64)>)> {
    // A policy that ignores the objective gets one line: the rows of its first objective.
    let mut first_w: Vec<(&str, [f64; 3])> = Vec::new();
    for r in rows {
        if !first_w.iter().any(|f| f.0 == r.policy) {
            first_w.push((&r.policy, [r.w_thr, r.w_lat, r.w_loss]));
        }
    }
    let keep = |r: &EvalRow| {
        objective_policies.contains(&r.policy)
            || first_w
                .iter()
                .any(|f| f.0 == r.policy && f.1 == [r.w_thr, r.w_lat, r.w_loss])
    };
    let mut lines: Vec<(LineKey, Vec<(f64, f64)>)> = Vec::new();
    for (p, net) in points.iter().filter(|(p, _)| *p == param) {
        let label = net.label();
        let mut groups: Vec<(LineKey, f64, f64)> = Vec::new();
        for r in rows.iter().filter(|r| r.network == label && keep(r)) {
            let key = LineKey::of(r, objective_policies.contains(&r.policy));
            match groups.iter_mut().find(|g| g.0 == key) {
                Some(g) => {
                    g.1 += metric(r);
                    g.2 += 1.0;
                }
                None => groups.push((key, metric(r), 1.0)),
            }
        }
        for (key, sum, n) in groups {
            let point = (p.axis_value(net), sum / n);
            match lines.iter_mut().find(|l| l.0 == key) {
                Some(l) => l.1.push(point),
                None => lines.push((key, vec![point])),
            }
        }
    }
    for l in &mut lines {
        l.1.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    lines
}

/// Splits line indices into the panels of small multiples: all in one panel when they fit,
/// else learned policies and classic controllers apart (each cut into panels of at most
/// [`MAX_LINES_PER_PANEL`]). Each group is named when there is more than one.
pub fn line_groups(policies: &[&str]) -> Vec<(Option<&'static str>, Vec<usize>)> {
    let all: Vec<usize> = (0..policies.len()).collect();
    if policies.len() <= MAX_LINES_PER_PANEL {
        return vec![(None, all)];
    }
    let (classic, learned): (Vec<usize>, Vec<usize>) =
        all.into_iter().partition(|&i| is_classic(policies[i]));
    let mut out = Vec::new();
    for (name, idx) in [("learned", learned), ("classic", classic)] {
        for chunk in idx.chunks(MAX_LINES_PER_PANEL) {
            out.push((Some(name), chunk.to_vec()));
        }
    }
    out
}

/// The range of `values` as a fixed axis range (log axes: positive values only), padded.
fn shared_range<'a>(scale: Scale, values: impl Iterator<Item = &'a f64>) -> Option<(f64, f64)> {
    let (lo, hi) = values
        .copied()
        .filter(|v| v.is_finite() && (scale == Scale::Linear || *v > 0.0))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    if !lo.is_finite() {
        return None;
    }
    Some(match scale {
        Scale::Log => (lo / 1.08, hi * 1.08),
        Scale::Linear if hi > lo => (lo - 0.04 * (hi - lo), hi + 0.04 * (hi - lo)),
        Scale::Linear => (lo - 0.5, hi + 0.5),
    })
}

/// The panels of Figure 5: one row per swept parameter; per metric one panel, or one per
/// scheme group when the lines do not fit one panel.
fn sweep_panels(
    spec: &SweepSpec,
    rows: &[EvalRow],
    objective_policies: &[String],
) -> (Vec<Panel>, usize, Legend) {
    let points = spec.networks();
    let params: Vec<SweepParam> = SweepParam::ALL
        .into_iter()
        .filter(|p| points.iter().any(|(q, _)| q == p))
        .collect();
    let metrics: [(&str, Metric, Scale); 2] = [
        ("utilization", |r| r.metrics.utilization, Scale::Linear),
        ("RTT / base RTT", |r| r.metrics.rtt_ratio, Scale::Log),
    ];
    // Every line of the figure, in order, with one look in every panel.
    let mut keys: Vec<LineKey> = Vec::new();
    for &param in &params {
        for (k, _) in sweep_lines(rows, &points, param, objective_policies, metrics[0].1) {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    let policies: Vec<&str> = keys.iter().map(|k| k.policy.as_str()).collect();
    let styles = policy_styles(&policies);
    let groups = line_groups(&policies);
    let legend: Legend = keys
        .iter()
        .map(LineKey::label)
        .zip(styles.iter().copied())
        .collect();
    let mut panels = Vec::new();
    for &param in &params {
        for (name, metric, scale) in &metrics {
            let lines = sweep_lines(rows, &points, param, objective_policies, *metric);
            let y_range = match scale {
                Scale::Linear => {
                    let hi = lines
                        .iter()
                        .flat_map(|l| l.1.iter().map(|p| p.1))
                        .fold(1.0f64, f64::max);
                    Some((0.0, 1.03 * hi))
                }
                Scale::Log => {
                    shared_range(*scale, lines.iter().flat_map(|l| l.1.iter().map(|p| &p.1)))
                }
            };
            for (group, idx) in &groups {
                let mut y = match scale {
                    Scale::Linear => Axis::linear(format!("{name} (fraction of capacity)")),
                    Scale::Log => Axis::log(format!("{name} (log scale)")),
                };
                y.range = y_range;
                let panel_lines: Vec<Line> = idx
                    .iter()
                    .filter_map(|&i| {
                        let (_, pts) = lines.iter().find(|l| l.0 == keys[i])?;
                        Some(Line {
                            label: keys[i].label(),
                            points: pts.clone(),
                            style: styles[i],
                        })
                    })
                    .collect();
                let title = match group {
                    Some(g) => format!("{name} vs {}, {g} schemes", param.name()),
                    None => format!("{name} vs {}", param.name()),
                };
                panels.push(Panel::new(title, param.axis(), y, panel_lines));
            }
        }
    }
    // Rows: a parameter's metrics side by side, or one metric's scheme groups side by side.
    let columns = if groups.len() > 1 {
        groups.len()
    } else {
        metrics.len()
    };
    (panels, columns, legend)
}

/// Figure 5: utilization and RTT ratio against each swept parameter, one line per policy (and
/// per objective for `objective_policies`; a policy's objectives share its colour, the second
/// dashed).
pub fn sweep_figure(
    out: &Path,
    spec: &SweepSpec,
    rows: &[EvalRow],
    objective_policies: &[String],
) -> Result<(), PlotError> {
    let (panels, columns, legend) = sweep_panels(spec, rows, objective_policies);
    let b = spec.base;
    let loss = if b.loss > 0.0 {
        format!("{} random loss", b.loss)
    } else {
        "no random loss".into()
    };
    let title = format!(
        "Figure 5: one parameter varied around {} pkt/s, {} ms RTT, {} packets of buffer, {loss}",
        b.bw_pps,
        2000.0 * b.delay_s,
        b.queue_pkts,
    );
    draw_figure(
        out,
        &Figure {
            title: Some(title),
            panels,
            columns,
            panel_size: (640, 340),
            legend,
        },
    )
}

/// The empirical CDF of `values` as (value, fraction) points.
pub fn cdf(mut values: Vec<f64>) -> Vec<(f64, f64)> {
    values.retain(|v| v.is_finite());
    values.sort_by(f64::total_cmp);
    let n = values.len().max(1) as f64;
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| (v, (i + 1) as f64 / n))
        .collect()
}

/// Policies in order of first appearance.
fn policies_of(rows: &[EvalRow]) -> Vec<&str> {
    let mut policies: Vec<&str> = Vec::new();
    for r in rows {
        if !policies.contains(&r.policy.as_str()) {
            policies.push(&r.policy);
        }
    }
    policies
}

/// The lines of each panel of small multiples, with the panel's group name.
type PanelLines = Vec<(Option<&'static str>, Vec<Line>)>;

/// One line per policy (its scheme's colour), cut into small multiples by [`line_groups`]:
/// `(group name, lines)` per panel.
fn policy_lines(policies: &[&str], points: Vec<Vec<(f64, f64)>>) -> (PanelLines, Legend) {
    let styles = policy_styles(policies);
    let lines: Vec<Line> = policies
        .iter()
        .zip(points)
        .zip(&styles)
        .map(|((p, pts), s)| Line {
            label: display_name(p),
            points: pts,
            style: *s,
        })
        .collect();
    let legend = crate::plot::legend_of(&lines);
    let groups = line_groups(policies)
        .into_iter()
        .map(|(g, idx)| (g, idx.iter().map(|&i| lines[i].clone()).collect()))
        .collect();
    (groups, legend)
}

/// Figure 7: the CDF of the normalized (MOCC) reward over every run, per policy, over the whole
/// range and (when runs fall below 0.85) zoomed on rewards from 0.9.
pub fn reward_cdf_figure(out: &Path, rows: &[EvalRow]) -> Result<(), PlotError> {
    let policies = policies_of(rows);
    let cdfs: Vec<Vec<(f64, f64)>> = policies
        .iter()
        .map(|p| {
            cdf(rows
                .iter()
                .filter(|r| r.policy == *p)
                .map(|r| r.metrics.mocc_reward)
                .collect())
        })
        .collect();
    let low = cdfs
        .iter()
        .flatten()
        .map(|p| p.0)
        .fold(f64::INFINITY, f64::min);
    let high = cdfs
        .iter()
        .flatten()
        .map(|p| p.0)
        .fold(f64::NEG_INFINITY, f64::max);
    let zoom = low < 0.85 && high > 0.9;
    let (groups, legend) = policy_lines(&policies, cdfs);
    let x_label = "normalized reward per MI (run mean)";
    let mut panels = Vec::new();
    for (g, lines) in groups {
        let suffix = g.map(|g| format!(", {g} schemes")).unwrap_or_default();
        panels.push(Panel::new(
            format!("all runs{suffix}"),
            Axis::linear(x_label),
            Axis::linear("fraction of runs").range(0.0, 1.0),
            lines.clone(),
        ));
        if zoom {
            panels.push(Panel::new(
                format!("detail: rewards from 0.9{suffix}"),
                Axis::linear(x_label).range(0.9, high.max(0.9) + 0.005),
                Axis::linear("fraction of runs").range(0.0, 1.0),
                lines,
            ));
        }
    }
    let columns = if zoom { 2 } else { 1 };
    draw_figure(
        out,
        &Figure {
            title: Some(format!(
                "CDF of the normalized reward over networks x objectives x seeds ({} runs per scheme)",
                rows.len() / policies.len().max(1)
            )),
            panels,
            columns,
            panel_size: (640, 480),
            legend,
        },
    )
}

/// The `fairness:` section of a suite: n flows of one scheme with staggered starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FairnessSpec {
    /// The bottleneck.
    pub network: crate::flows::FlowNetwork,
    /// Flow counts to run (each 2..=8).
    pub flows: Vec<usize>,
    /// Seconds between flow starts.
    pub stagger_s: f64,
    /// Length of each run (s).
    pub duration_s: f64,
}

/// The `friendliness:` section: one flow of the scheme against one Cubic flow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FriendlinessSpec {
    /// The bottleneck.
    pub network: crate::flows::FlowNetwork,
    /// Length of the run (s); the first 5 s are not counted.
    pub duration_s: f64,
}

/// A scenario file whose time series each policy draws (`timeseries:` entries). Give
/// `duration_s` (every scheme covers the same simulated time) or, as older suites do, `steps`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeSeriesSpec {
    /// Scenario file (relative to the suite file).
    pub scenario: PathBuf,
    /// Simulated seconds each policy runs (until the first MI that ends at or after it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// MIs each policy runs instead (schemes with longer MIs then run longer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<usize>,
}

impl TimeSeriesSpec {
    /// Checks the entry; `field` names it in messages (`timeseries[0]`).
    pub fn validate(&self, field: &str) -> Result<(), String> {
        match (self.duration_s, self.steps) {
            (Some(_), Some(_)) => Err(format!("{field}: give duration_s or steps, not both")),
            (None, None) => Err(format!("{field}.duration_s: required (or steps)")),
            (Some(d), None) if !(d.is_finite() && d > 0.0) => {
                Err(format!("{field}.duration_s: must be > 0 (got {d})"))
            }
            (None, Some(0)) => Err(format!("{field}.steps: must be >= 1")),
            _ => Ok(()),
        }
    }

    /// How long each policy runs.
    pub fn horizon(&self) -> Horizon {
        match (self.duration_s, self.steps) {
            (Some(d), _) => Horizon::Seconds(d),
            (None, Some(n)) => Horizon::Mis(n),
            (None, None) => Horizon::Mis(0),
        }
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> PlotError + '_ {
    move |e| PlotError::Draw(format!("{}: {e}", path.display()))
}

/// Jain's index per second of each (policy, flow count), for the fairness figure.
pub type FairnessRuns = Vec<(String, usize, Vec<f64>)>;

/// The fairness figure's panels: one per flow count (per scheme group too when the schemes do
/// not fit one panel), the CDF of Jain's index of each policy, on one x range.
fn fairness_panels(runs: &FairnessRuns) -> (Vec<Panel>, usize, Legend) {
    let mut counts: Vec<usize> = runs.iter().map(|r| r.1).collect();
    counts.sort_unstable();
    counts.dedup();
    let mut policies: Vec<&str> = Vec::new();
    for r in runs {
        if !policies.contains(&r.0.as_str()) {
            policies.push(&r.0);
        }
    }
    let lowest = runs
        .iter()
        .flat_map(|r| r.2.iter().copied())
        .chain(counts.last().map(|&n| 1.0 / n as f64))
        .fold(1.0f64, f64::min);
    let x0 = ((lowest - 0.02) * 20.0).floor() / 20.0;
    let mut legend = Vec::new();
    let mut by_count: Vec<Vec<(Option<&'static str>, Vec<Line>)>> = Vec::new();
    for &n in &counts {
        let points: Vec<Vec<(f64, f64)>> = policies
            .iter()
            .map(|p| {
                runs.iter()
                    .find(|r| r.0 == *p && r.1 == n)
                    .map(|r| cdf(r.2.clone()))
                    .unwrap_or_default()
            })
            .collect();
        let (groups, l) = policy_lines(&policies, points);
        legend = l;
        by_count.push(groups);
    }
    let mut panels = Vec::new();
    let n_groups = by_count.first().map_or(1, Vec::len);
    for g in 0..n_groups {
        for (&n, groups) in counts.iter().zip(&by_count) {
            let (name, lines) = groups[g].clone();
            let suffix = name.map(|g| format!(", {g} schemes")).unwrap_or_default();
            panels.push(Panel::new(
                format!("{n} flows{suffix}"),
                Axis::linear("Jain's fairness index (1 = equal shares)").range(x0, 1.01),
                Axis::linear("fraction of seconds").range(0.0, 1.0),
                lines,
            ));
        }
    }
    (panels, counts.len(), legend)
}

/// Runs the fairness experiment for every policy: fairness.csv (Jain's index per second once
/// all flows run) and fairness.png (its CDF per policy, one panel per flow count).
pub fn fairness_outputs(
    dir: &Path,
    spec: &FairnessSpec,
    policies: &[crate::eval::LoadedPolicy],
) -> Result<(), crate::eval::EvalError> {
    let mut text = String::from("policy,flows,second,jain_index\n");
    let mut runs: FairnessRuns = Vec::new();
    for p in policies {
        for &n in &spec.flows {
            let flows: Vec<crate::flows::Flow<'_>> = (0..n)
                .map(|k| crate::flows::Flow {
                    driver: p,
                    objective: p.scenario().objective,
                    start_s: k as f64 * spec.stagger_s,
                })
                .collect();
            let rates = crate::flows::run_flows(&spec.network, &flows, spec.duration_s, 1.0, 0)?;
            let jain = rates.jain_per_window();
            let first = rates.rates[0].len() - jain.len();
            for (k, j) in jain.iter().enumerate() {
                text.push_str(&format!("{},{n},{},{j}\n", p.name(), first + k));
            }
            runs.push((p.name().to_string(), n, jain));
        }
    }
    let path = dir.join("fairness.csv");
    std::fs::write(&path, text).map_err(io_err(&path))?;
    let (panels, columns, legend) = fairness_panels(&runs);
    let net = &spec.network;
    draw_figure(
        &dir.join("fairness.png"),
        &Figure {
            title: Some(format!(
                "Fairness: CDF of Jain's index per second once all flows run (flows of one scheme started {} s apart; {} pkt/s, {} ms RTT)",
                spec.stagger_s, net.bw_pps, 2000.0 * net.delay_s
            )),
            panels,
            columns,
            panel_size: (470, 440),
            legend,
        },
    )?;
    Ok(())
}

/// One flow of each policy against one Cubic flow: friendliness.csv (mean delivery rates and
/// their ratio after the first 5 s) and friendliness.png (the ratio per second, log scale).
pub fn friendliness_outputs(
    dir: &Path,
    spec: &FriendlinessSpec,
    policies: &[crate::eval::LoadedPolicy],
) -> Result<(), crate::eval::EvalError> {
    let cubic = crate::eval::LoadedPolicy::load(Path::new("cubic"))?;
    let mut text = String::from("policy,policy_pps,cubic_pps,ratio\n");
    let mut points: Vec<Vec<(f64, f64)>> = Vec::new();
    for p in policies {
        let flows = [
            crate::flows::Flow {
                driver: p,
                objective: p.scenario().objective,
                start_s: 0.0,
            },
            crate::flows::Flow {
                driver: &cubic,
                objective: [1.0 / 3.0; 3],
                start_s: 0.0,
            },
        ];
        let rates = crate::flows::run_flows(&spec.network, &flows, spec.duration_s, 1.0, 0)?;
        let (a, b) = (rates.mean_rate(0, 5.0), rates.mean_rate(1, 5.0));
        text.push_str(&format!("{},{a},{b},{}\n", p.name(), a / b.max(1e-9)));
        let per_second: Vec<(f64, f64)> = rates.rates[0]
            .iter()
            .zip(&rates.rates[1])
            .enumerate()
            .map(|(t, (x, y))| ((t + 1) as f64, x / y.max(1.0)))
            .collect();
        points.push(per_second);
    }
    let path = dir.join("friendliness.csv");
    std::fs::write(&path, text).map_err(io_err(&path))?;
    let names: Vec<&str> = policies.iter().map(|p| p.name()).collect();
    let (groups, mut legend) = policy_lines(&names, points);
    let equal = LineStyle::solid(REFERENCE)
        .with_dash(Dash::Dashed)
        .with_width(1);
    legend.push(("equal share (ratio 1)".into(), equal));
    let all: Vec<f64> = groups
        .iter()
        .flat_map(|g| g.1.iter().flat_map(|l| l.points.iter().map(|p| p.1)))
        .chain([1.0])
        .collect();
    let y_range = shared_range(Scale::Log, all.iter());
    let panels = groups
        .into_iter()
        .map(|(g, mut lines)| {
            lines.insert(
                0,
                Line {
                    label: "equal share (ratio 1)".into(),
                    points: vec![(0.0, 1.0), (spec.duration_s, 1.0)],
                    style: equal,
                },
            );
            let mut y = Axis::log("delivery rate, scheme / Cubic (log scale)");
            y.range = y_range;
            let title = match g {
                Some(g) => format!("{g} schemes"),
                None => String::new(),
            };
            Panel::new(
                title,
                Axis::linear("time (s)").range(0.0, spec.duration_s),
                y,
                lines,
            )
        })
        .collect();
    let net = &spec.network;
    draw_figure(
        &dir.join("friendliness.png"),
        &Figure {
            title: Some(format!(
                "Friendliness: one flow of the scheme against one Cubic flow ({} pkt/s, {} ms RTT, {} packets)",
                net.bw_pps,
                2000.0 * net.delay_s,
                net.queue_pkts
            )),
            panels,
            columns: 1,
            panel_size: (1200, 560),
            legend,
        },
    )?;
    Ok(())
}

/// One policy's run of a time-series scenario.
pub type TimeSeries = (String, Vec<MiRow>);

/// The time-series figure's panels: one row per policy (its colour), throughput beside RTT,
/// every row on the same axes. `duration_s` fixes the time axis (else it fits the runs).
fn timeseries_panels(runs: &[TimeSeries], duration_s: Option<f64>) -> Vec<Panel> {
    let names: Vec<&str> = runs.iter().map(|r| r.0.as_str()).collect();
    let styles = policy_styles(&names);
    let end = duration_s.unwrap_or_else(|| {
        runs.iter()
            .filter_map(|r| r.1.last().map(|m| m.time_s))
            .fold(0.0, f64::max)
    });
    let all = || runs.iter().flat_map(|r| r.1.iter());
    let capacity = all().map(|m| m.capacity_pps).fold(0.0, f64::max);
    let delivered = all().map(|m| m.delivered_pps).fold(0.0, f64::max);
    // Sending-rate bursts far above the link are cut at 1.5 x its capacity.
    let thr_top = 1.05
        * delivered
            .max(capacity)
            .min(1.5 * capacity.max(1.0))
            .max(capacity);
    let rtt_top = 1.05e3
        * all()
            .map(|m| m.mean_rtt_s.max(m.base_rtt_s))
            .fold(0.0, f64::max);
    let time = || Axis::linear("time (s)").range(0.0, end.max(1e-3));
    let reference = LineStyle::solid(REFERENCE).with_width(1);
    let mut panels = Vec::new();
    for ((name, rows), style) in runs.iter().zip(&styles) {
        let col = |f: fn(&MiRow) -> f64| -> Vec<(f64, f64)> {
            rows.iter().map(|r| (r.time_s, f(r))).collect()
        };
        let line = |label: &str, points, style| Line {
            label: label.into(),
            points,
            style,
        };
        let who = display_name(name);
        let mut thr = Panel::new(
            format!("{who}: throughput"),
            time(),
            Axis::linear("packets/s").range(0.0, thr_top.max(1.0)),
            vec![
                line(
                    "sending rate",
                    col(|r| r.send_pps),
                    style.with_opacity(0.35).with_width(1),
                ),
                line(
                    "delivered throughput",
                    col(|r| r.delivered_pps),
                    style.with_width(2),
                ),
                line("link capacity", col(|r| r.capacity_pps), reference),
            ],
        );
        thr.title_colour = Some(style.colour);
        // MIs without an RTT sample have no RTT (the column holds 0): they break the line.
        let mut rtt = Panel::new(
            format!("{who}: RTT"),
            time(),
            Axis::linear("RTT (ms)").range(0.0, rtt_top.max(1.0)),
            vec![
                line(
                    "mean RTT",
                    rows.iter()
                        .map(|r| {
                            (
                                r.time_s,
                                if r.mean_rtt_s > 0.0 {
                                    1e3 * r.mean_rtt_s
                                } else {
                                    f64::NAN
                                },
                            )
                        })
                        .collect(),
                    style.with_width(2),
                ),
                line("base RTT", col(|r| 1e3 * r.base_rtt_s), reference),
            ],
        );
        rtt.title_colour = Some(style.colour);
        panels.push(thr);
        panels.push(rtt);
    }
    panels
}

/// Each policy on a scenario file: timeseries-<name>.csv and .png (sending rate, delivered
/// throughput and RTT, one row of panels per policy). Returns the PNG's path.
pub fn timeseries_outputs(
    dir: &Path,
    suite_dir: &Path,
    spec: &TimeSeriesSpec,
    policies: &[crate::eval::LoadedPolicy],
) -> Result<PathBuf, crate::eval::EvalError> {
    let path = suite_dir.join(&spec.scenario);
    let scenario = mocc_gym::Scenario::load(&path)?;
    let stem = spec
        .scenario
        .file_stem()
        .map_or_else(|| "scenario".into(), |s| s.to_string_lossy().into_owned());
    let mut text =
        String::from("policy,time_s,send_pps,delivered_pps,mean_rtt_s,capacity_pps,base_rtt_s\n");
    let mut runs: Vec<TimeSeries> = Vec::new();
    for p in policies {
        let (rows, _) = crate::simulate::simulate_policy_for(
            scenario.config(),
            p,
            p.scenario().objective,
            spec.horizon(),
            0,
        )?;
        for r in &rows {
            text.push_str(&format!(
                "{},{},{},{},{},{},{}\n",
                p.name(),
                r.time_s,
                r.send_pps,
                r.delivered_pps,
                r.mean_rtt_s,
                r.capacity_pps,
                r.base_rtt_s
            ));
        }
        runs.push((p.name().to_string(), rows));
    }
    let csv = dir.join(format!("timeseries-{stem}.csv"));
    std::fs::write(&csv, text).map_err(io_err(&csv))?;
    let out = dir.join(format!("timeseries-{stem}.png"));
    let reference = LineStyle::solid(REFERENCE).with_width(1);
    let neutral = LineStyle::solid(REFERENCE).with_width(2);
    let span = match spec.horizon() {
        Horizon::Seconds(d) => format!("{d} s"),
        Horizon::Mis(n) => format!("{n} MIs"),
    };
    draw_figure(
        &out,
        &Figure {
            title: Some(format!(
                "{stem}: each scheme as the scenario's observed sender, over {span}"
            )),
            panels: timeseries_panels(&runs, spec.duration_s),
            columns: 2,
            panel_size: (700, 240),
            legend: vec![
                (
                    "delivered throughput / mean RTT (scheme colour)".into(),
                    neutral,
                ),
                (
                    "sending rate (light)".into(),
                    neutral.with_opacity(0.35).with_width(1),
                ),
                ("link capacity / base RTT".into(), reference),
            ],
        },
    )?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdf_hand_values() {
        assert_eq!(
            cdf(vec![0.3, 0.1, f64::NAN, 0.2]),
            vec![(0.1, 1.0 / 3.0), (0.2, 2.0 / 3.0), (0.3, 1.0)]
        );
    }

    #[test]
    fn sweeps_vary_one_parameter_each() {
        let base = SuiteNetwork {
            bw_pps: 500.0,
            delay_s: 0.03,
            queue_pkts: 100.0,
            loss: 0.0,
        };
        let spec = SweepSpec {
            base,
            bw_pps: vec![100.0, 200.0],
            delay_s: vec![0.1],
            loss: vec![],
            queue_pkts: vec![10.0],
        };
        let n = spec.networks();
        assert_eq!(n.len(), 4);
        assert_eq!(
            n[1],
            (
                SweepParam::Bandwidth,
                SuiteNetwork {
                    bw_pps: 200.0,
                    ..base
                }
            )
        );
        assert_eq!(n[2].1.delay_s, 0.1);
        assert_eq!(n[2].1.bw_pps, 500.0);
        assert_eq!(SweepParam::Delay.axis_value(&n[2].1), 200.0);
    }

    fn row(policy: &str, network: &str, w: [f64; 3], util: f64, ratio: f64) -> EvalRow {
        EvalRow {
            policy: policy.into(),
            network: network.into(),
            w_thr: w[0],
            w_lat: w[1],
            w_loss: w[2],
            seed: 0,
            metrics: crate::eval::RunMetrics {
                utilization: util,
                rtt_ratio: ratio,
                mocc_reward: util,
                ..Default::default()
            },
        }
    }

    const SCHEMES7: [&str; 7] = [
        "checkpoints/mocc-omega36",
        "checkpoints/aurora",
        "cubic",
        "bbr",
        "copa",
        "vegas",
        "vivace",
    ];

    #[test]
    fn sweep_panels_split_learned_and_classic_when_lines_do_not_fit() {
        let base = SuiteNetwork {
            bw_pps: 500.0,
            delay_s: 0.03,
            queue_pkts: 100.0,
            loss: 0.0,
        };
        let spec = SweepSpec {
            base,
            bw_pps: vec![100.0, 200.0],
            delay_s: vec![],
            loss: vec![],
            queue_pkts: vec![10.0, 100.0],
        };
        let ws = [[0.8, 0.1, 0.1], [0.1, 0.8, 0.1]];
        let mut rows = Vec::new();
        for (_, net) in spec.networks() {
            for p in SCHEMES7 {
                for w in ws {
                    rows.push(row(p, &net.label(), w, 0.9, 1.2));
                }
            }
        }
        // MOCC at two objectives + 6 other schemes = 8 lines: learned and classic panels.
        let (panels, columns, legend) =
            sweep_panels(&spec, &rows, &["checkpoints/mocc-omega36".to_string()]);
        assert_eq!(legend.len(), 8);
        // Rows: (parameter, metric); columns: learned | classic.
        assert_eq!(columns, 2);
        assert_eq!(panels.len(), 2 * 2 * 2);
        for p in &panels {
            assert!(
                p.lines.len() <= crate::plot::MAX_LINES_PER_PANEL,
                "{}",
                p.title
            );
            assert!(
                p.x.label.contains('(') && p.y.label.contains('('),
                "units: {}",
                p.title
            );
        }
        assert_eq!(panels[0].lines.len(), 3, "MOCC x2 and Aurora");
        assert_eq!(panels[1].lines.len(), 5, "the classic schemes");
        // The two MOCC lines share the MOCC colour, the second dashed.
        let (a, b) = (panels[0].lines[0].style, panels[0].lines[1].style);
        assert_eq!(a.colour, b.colour);
        assert_eq!((a.dash, b.dash), (Dash::Solid, Dash::Dashed));
        // Without the split the figure has one panel per metric.
        let (panels, columns, _) = sweep_panels(&spec, &rows, &[]);
        assert_eq!((panels.len(), columns), (2 * 2, 2));
        assert_eq!(panels[0].lines.len(), 7);
    }

    #[test]
    fn fairness_draws_one_panel_per_flow_count() {
        let mut runs: FairnessRuns = Vec::new();
        for p in SCHEMES7 {
            for n in [2, 3, 4] {
                runs.push((p.into(), n, vec![0.6, 0.9, 1.0]));
            }
        }
        let (panels, columns, legend) = fairness_panels(&runs);
        assert_eq!((panels.len(), columns), (3, 3));
        assert_eq!(legend.len(), 7);
        for (p, n) in panels.iter().zip([2, 3, 4]) {
            assert_eq!(p.title, format!("{n} flows"));
            assert_eq!(p.lines.len(), 7);
            // One x range for every panel, reaching 1/4 (the lowest index of 4 flows).
            assert_eq!(p.x.range, Some((0.2, 1.01)));
        }
        // A scheme has the same colour in every panel.
        let colours: Vec<_> = panels.iter().map(|p| p.lines[2].style.colour).collect();
        assert!(colours.iter().all(|&c| c == crate::plot::SCHEMES[2].colour));
    }

    #[test]
    fn timeseries_entries_take_a_duration_or_old_steps() {
        let new: TimeSeriesSpec =
            serde_saphyr::from_str("{scenario: leo.yaml, duration_s: 30}").unwrap();
        assert_eq!(new.horizon(), Horizon::Seconds(30.0));
        assert_eq!(new.validate("timeseries[0]"), Ok(()));
        let old: TimeSeriesSpec =
            serde_saphyr::from_str("{scenario: leo.yaml, steps: 1500}").unwrap();
        assert_eq!(old.horizon(), Horizon::Mis(1500));
        assert_eq!(old.validate("timeseries[0]"), Ok(()));
        let both: TimeSeriesSpec =
            serde_saphyr::from_str("{scenario: a.yaml, steps: 5, duration_s: 3}").unwrap();
        assert!(both.validate("t").unwrap_err().contains("not both"));
        let none: TimeSeriesSpec = serde_saphyr::from_str("{scenario: a.yaml}").unwrap();
        assert!(none.validate("t").unwrap_err().contains("t.duration_s"));
        let bad: TimeSeriesSpec =
            serde_saphyr::from_str("{scenario: a.yaml, duration_s: -1}").unwrap();
        assert!(bad.validate("t").unwrap_err().contains("> 0"));
    }

    fn repo(path: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
    }

    #[test]
    fn time_series_cover_the_same_duration_and_never_deliver_negative_packets() {
        // The LEO path: 0.1% random loss and a 0.3 s outage at 14.5 s, when MIs see no acks.
        let scenario = mocc_gym::Scenario::load(&repo("configs/scenarios/leo.yaml")).unwrap();
        let policies = [
            crate::eval::LoadedPolicy::load(&repo("checkpoints/aurora")).unwrap(),
            crate::eval::LoadedPolicy::load(Path::new("cubic")).unwrap(),
        ];
        let duration = 16.0;
        let mut runs: Vec<TimeSeries> = Vec::new();
        for p in &policies {
            let (rows, _) = crate::simulate::simulate_policy_for(
                scenario.config(),
                p,
                p.scenario().objective,
                Horizon::Seconds(duration),
                0,
            )
            .unwrap();
            let last = rows.last().unwrap();
            // Runs until the MI that crosses the end, not one MI more.
            assert!(last.time_s >= duration, "{}", p.name());
            assert!(rows[rows.len() - 2].time_s < duration, "{}", p.name());
            runs.push((p.name().to_string(), rows));
        }
        // Schemes with different MI lengths run different numbers of MIs over the same time.
        assert_ne!(runs[0].1.len(), runs[1].1.len());
        // Aurora's `recv rate` (acked - 1 packet) goes negative here; delivered packets do not.
        assert!(runs[0].1.iter().any(|r| r.thr_pps < 0.0));
        let panels = timeseries_panels(&runs, Some(duration));
        assert_eq!(panels.len(), 2 * runs.len());
        for p in panels.iter().step_by(2) {
            let thr = p
                .lines
                .iter()
                .find(|l| l.label == "delivered throughput")
                .unwrap();
            assert!(thr.points.iter().all(|q| q.1 >= 0.0), "{}", p.title);
            assert_eq!(p.x.range, Some((0.0, duration)));
            assert_eq!(
                p.y.range, panels[0].y.range,
                "one throughput scale for every row"
            );
        }
        for (name, rows) in &runs {
            assert!(rows.iter().all(|r| r.delivered_pps >= 0.0), "{name}");
        }
    }
}
