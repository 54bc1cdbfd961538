//! The figures of multi-flow runs and time series: fairness (Jain's index per second, one panel
//! per flow count, and each scheme's operating point with its 1-sigma ellipse), friendliness against Cubic, and each scheme's time series on a scenario
//! file over one duration.

use crate::actor::LoadedPolicy;
use crate::figures::{cdf, policy_lines};
use crate::results::median;
use crate::results::EvalError;
use crate::simulate::{Horizon, MiRow};
use crate::suite::{FairnessSpec, FriendlinessSpec, TimeSeriesSpec};
use mocc_plot::axes::shared_range;
use mocc_plot::axes::{Axis, Scale};
use mocc_plot::chart::{draw_figure, Figure, Legend, Line, Panel, PlotError};
use mocc_plot::style::{display_name, policy_styles, Dash, LineStyle, REFERENCE};
use std::path::{Path, PathBuf};

/// Writes a whole CSV file atomically, or the error naming it.
pub(crate) fn write_text(path: &Path, text: &str) -> Result<(), PlotError> {
    mocc_policy::write_file_atomic(path, text.as_bytes()).map_err(|e| PlotError::Write {
        path: e.path,
        source: e.source,
    })
}

/// Jain's index per second of each (policy, panel: flow count and network), for the fairness
/// figure.
pub type FairnessRuns = Vec<(String, String, Vec<f64>)>;

/// The distinct panel labels and policies of (policy, label) runs, each in first-seen order.
fn labels_and_policies<'a>(
    runs: impl Iterator<Item = (&'a String, &'a String)>,
) -> (Vec<&'a str>, Vec<&'a str>) {
    let mut labels: Vec<&str> = Vec::new();
    let mut policies: Vec<&str> = Vec::new();
    for (policy, label) in runs {
        if !labels.contains(&label.as_str()) {
            labels.push(label);
        }
        if !policies.contains(&policy.as_str()) {
            policies.push(policy);
        }
    }
    (labels, policies)
}

/// The fairness figure's panels: one per flow count and network (per scheme group too when
/// the schemes do not fit one panel), the CDF of Jain's index of each policy, on one x range
/// that reaches down to `1 / max_flows` (one flow taking everything).
fn fairness_panels(runs: &FairnessRuns, max_flows: usize) -> (Vec<Panel>, Legend) {
    let (labels, policies) = labels_and_policies(runs.iter().map(|r| (&r.0, &r.1)));
    let lowest = runs
        .iter()
        .flat_map(|r| r.2.iter().copied())
        .chain([1.0 / max_flows.max(1) as f64])
        .fold(1.0f64, f64::min);
    let x0 = ((lowest - 0.02) * 20.0).floor() / 20.0;
    let mut legend = Vec::new();
    let mut by_label: Vec<Vec<(Option<&'static str>, Vec<Line>)>> = Vec::new();
    for &label in &labels {
        let points: Vec<Vec<(f64, f64)>> = policies
            .iter()
            .map(|p| {
                runs.iter()
                    .find(|r| r.0 == *p && r.1 == label)
                    .map(|r| cdf(r.2.clone()))
                    .unwrap_or_default()
            })
            .collect();
        let (groups, l) = policy_lines(&policies, points);
        legend = l;
        by_label.push(groups);
    }
    let mut panels = Vec::new();
    let n_groups = by_label.first().map_or(1, Vec::len);
    for g in 0..n_groups {
        for (&label, groups) in labels.iter().zip(&by_label) {
            let (name, lines) = groups[g].clone();
            let suffix = name.map(|g| format!(", {g} schemes")).unwrap_or_default();
            panels.push(Panel::new(
                format!("{label}{suffix}"),
                Axis::linear("Jain's fairness index (1 = equal shares)").range(x0, 1.01),
                Axis::linear("fraction of seconds").range(0.0, 1.0),
                lines,
            ));
        }
    }
    (panels, legend)
}

/// Runs the fairness experiment for every policy and network, each case `spec.runs` times:
/// fairness.csv (per second once all flows run: Jain's index, the flows' total delivery over
/// the capacity, each flow's delivery rate), fairness-summary.csv (per run: median Jain's
/// index, utilization, the ratio of the fastest flow's mean rate to the slowest's) and
/// fairness.png (the CDF of Jain's index per policy over the seconds of every run, one panel
/// per flow count and network).
pub fn fairness_outputs(
    dir: &Path,
    spec: &FairnessSpec,
    policies: &[LoadedPolicy],
) -> Result<Vec<FairnessSummary>, EvalError> {
    let max_flows = spec.flows.iter().copied().max().unwrap_or(0);
    let rate_columns: Vec<String> = (1..=max_flows).map(|k| format!(",rate_{k}_pps")).collect();
    let mut text = format!(
        "policy,flows,second,jain_index,utilization,network{},rtt_ratio,run\n",
        rate_columns.concat()
    );
    let mut summaries = Vec::new();
    let networks = spec.all_networks();
    let mut runs: FairnessRuns = Vec::new();
    let mut points: OperatingPoints = Vec::new();
    for p in policies {
        for net in &networks {
            for &n in &spec.flows {
                let label = if networks.len() > 1 {
                    format!("{n} flows, {}", net.label())
                } else {
                    format!("{n} flows")
                };
                let (mut jains, mut seconds) = (Vec::new(), Vec::new());
                for run in 0..spec.runs {
                    let rates = fairness_rates(spec, net, p, n, run)?;
                    let jain = rates.jain_per_window();
                    per_second_rows(&mut text, p.name(), net, &rates, &jain, max_flows, run);
                    summaries.push(FairnessSummary::of(p.name(), &net.label(), &rates).in_run(run));
                    seconds.extend(operating_points(&rates));
                    jains.extend(jain);
                }
                points.push((p.name().to_string(), label.clone(), seconds));
                runs.push((p.name().to_string(), label, jains));
            }
        }
    }
    let path = dir.join("fairness.csv");
    write_text(&path, &text)?;
    let path = dir.join("fairness-summary.csv");
    write_text(&path, &fairness_summary_csv(&summaries))?;
    let (panels, legend) = fairness_panels(&runs, max_flows);
    let net = &spec.network;
    let setting = if networks.len() > 1 {
        format!("{} networks", networks.len())
    } else {
        format!("{} pkt/s, {} ms RTT", net.bw_pps, 2000.0 * net.delay_s)
    };
    let schedule = schedule_text(spec);
    draw_figure(
        &dir.join("fairness.png"),
        &Figure {
            title: Some(format!(
                "Fairness: CDF of Jain's index per second while all flows run ({setting}; {schedule})"
            )),
            panels,
            columns: spec.flows.len(),
            panel_size: (470, 440),
            legend,
        },
    )?;
    let (panels, legend) = operating_point_panels(&points);
    draw_figure(
        &dir.join("fairness-operating-points.png"),
        &Figure {
            title: Some(format!(
                "While all flows run: mean and 1-sigma ellipse of the seconds ({setting}; {schedule})"
            )),
            panels,
            columns: spec.flows.len(),
            panel_size: (470, 440),
            legend,
        },
    )?;
    Ok(summaries)
}

/// One fairness run's summary (a row of fairness-summary.csv): `flows` flows of `policy` on
/// `network`, over the seconds all of them run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FairnessSummary {
    /// The scheme.
    pub policy: String,
    /// The bottleneck's label.
    pub network: String,
    /// Number of flows.
    pub flows: usize,
    /// Median of the per-second Jain's indices.
    pub median_jain_index: f64,
    /// Mean of the per-second utilizations.
    pub utilization: f64,
    /// The highest flow's mean rate over the lowest's.
    pub max_min_rate_ratio: f64,
    /// Mean RTT over the base RTT (None without samples).
    pub rtt_ratio: Option<f64>,
    /// Which run of the case (0: the schedule as written; see `FairnessSpec::runs`).
    pub run: u32,
}

impl FairnessSummary {
    /// The summary of one run's per-second rates (`mocc eval`'s simulated runs and `mocc net
    /// compare`'s real ones alike): over the seconds all flows run, the median Jain's index,
    /// the mean utilization, the fastest flow's mean rate over the slowest's and the RTT ratio.
    pub fn of(policy: &str, network: &str, rates: &crate::flows::FlowRates) -> Self {
        let jain = rates.jain_per_window();
        let utilizations: Vec<f64> = rates
            .coexisting_windows()
            .map(|w| rates.utilization_in(w))
            .collect();
        let flows = rates.rates.len();
        let means: Vec<f64> = (0..flows).map(|f| rates.mean_rate_coexisting(f)).collect();
        Self {
            policy: policy.to_string(),
            network: network.to_string(),
            flows,
            median_jain_index: median_or_zero(&jain),
            utilization: mean(&utilizations),
            max_min_rate_ratio: max_min_ratio(&means),
            rtt_ratio: rates.rtt_ratio_coexisting(),
            run: 0,
        }
    }

    /// The same summary, of run `run` of its case.
    pub fn in_run(self, run: u32) -> Self {
        Self { run, ..self }
    }
}

/// fairness-summary.csv's text.
fn fairness_summary_csv(rows: &[FairnessSummary]) -> String {
    let mut text = String::from(
        "policy,network,flows,median_jain_index,utilization,max_min_rate_ratio,rtt_ratio,run\n",
    );
    for r in rows {
        text.push_str(&format!(
            "{},{},{},{},{},{},{},{}\n",
            r.policy,
            r.network,
            r.flows,
            r.median_jain_index,
            r.utilization,
            r.max_min_rate_ratio,
            optional_cell(r.rtt_ratio),
            r.run
        ));
    }
    text
}

/// How a fairness spec starts and stops its flows, for figure titles.
fn schedule_text(spec: &FairnessSpec) -> String {
    let starts = match spec.starts_within_s {
        Some(w) => format!("started evenly within {w} s"),
        None => format!("started {} s apart", spec.stagger_s),
    };
    let starts = match spec.flow_duration_s {
        Some(d) => format!("{starts}, {d} s each"),
        None => starts,
    };
    if spec.runs > 1 {
        format!(
            "{starts}; {} runs, +-{} ms",
            spec.runs,
            1000.0 * spec.start_jitter_s
        )
    } else {
        starts
    }
}

/// Each (policy, panel label) run's seconds while all flows run, as (RTT over the base RTT,
/// utilization) points.
type OperatingPoints = Vec<(String, String, Vec<(f64, f64)>)>;

/// The (RTT ratio, utilization) of each second in which all flows run and RTT samples exist.
fn operating_points(rates: &crate::flows::FlowRates) -> Vec<(f64, f64)> {
    rates
        .coexisting_windows()
        .filter_map(|w| Some((rates.rtt_ratio_in(w)?, rates.utilization_in(w))))
        .collect()
}

/// The operating-point figure's panels: one per flow count and network; per policy the mean
/// (RTT ratio, utilization) of its seconds as a marker and their 1-sigma ellipse dashed (the
/// LEO study's Figure 7).
fn operating_point_panels(points: &OperatingPoints) -> (Vec<Panel>, Legend) {
    let (labels, policies) = labels_and_policies(points.iter().map(|r| (&r.0, &r.1)));
    let styles = policy_styles(&policies);
    let mut panels: Vec<Panel> = labels
        .iter()
        .map(|&label| {
            let mut lines = Vec::new();
            for (p, style) in policies.iter().zip(&styles) {
                let Some(run) = points.iter().find(|r| r.0 == *p && r.1 == label) else {
                    continue;
                };
                let Some(summary) = crate::ellipse::Gaussian2::of(&run.2) else {
                    continue;
                };
                lines.push(Line {
                    label: display_name(p),
                    points: summary.one_sigma_ellipse(ELLIPSE_POINTS),
                    style: style.with_dash(Dash::Dashed),
                });
                lines.push(Line {
                    label: display_name(p),
                    points: vec![summary.mean],
                    style: *style,
                });
            }
            let mut panel = Panel::new(
                label,
                Axis::linear("RTT / base RTT"),
                Axis::linear("utilization"),
                lines,
            );
            panel.markers = true;
            panel
        })
        .collect();
    // One range for every panel, wide enough for each ellipse (and 1 to 1.1, 0.8 to 1).
    let drawn: Vec<(f64, f64)> = panels
        .iter()
        .flat_map(|p| p.lines.iter().flat_map(|l| l.points.iter().copied()))
        .collect();
    let x_hi = drawn.iter().map(|p| p.0).fold(1.1, f64::max);
    let y_lo = drawn.iter().map(|p| p.1).fold(0.8, f64::min).max(0.0);
    let y_hi = drawn.iter().map(|p| p.1).fold(1.0, f64::max);
    for panel in &mut panels {
        panel.x = panel.x.clone().range(1.0, x_hi + 0.02 * (x_hi - 1.0));
        panel.y = panel.y.clone().range(y_lo - 0.01, y_hi + 0.01);
    }
    let legend = policies
        .iter()
        .zip(&styles)
        .map(|(p, s)| (display_name(p), *s))
        .collect();
    (panels, legend)
}

/// Points on each ellipse's outline.
const ELLIPSE_POINTS: usize = 72;

/// Appends fairness.csv's rows of run `run` of a case (`n` flows of `policy` on `net`), one
/// per second once all flows run (`jain` holds their Jain's indices).
fn per_second_rows(
    text: &mut String,
    policy: &str,
    net: &crate::flows::FlowNetwork,
    rates: &crate::flows::FlowRates,
    jain: &[f64],
    max_flows: usize,
    run: u32,
) {
    let n = rates.rates.len();
    for (second, j) in rates.coexisting_windows().zip(jain) {
        let per_flow: Vec<f64> = rates.rates.iter().map(|r| r[second]).collect();
        let u = rates.utilization_in(second);
        let mut cells: Vec<String> = per_flow.iter().map(|r| format!(",{r}")).collect();
        cells.resize(max_flows, ",".into());
        text.push_str(&format!(
            "{policy},{n},{second},{j},{u},{}{},{},{run}\n",
            net.label(),
            cells.concat(),
            optional_cell(rates.rtt_ratio_in(second))
        ));
    }
}

/// `n` flows of policy `p` on `net`, started and stopped as the spec says for run `run`, each
/// with its objective and extra RTT from the spec; delivery rates per second.
pub fn fairness_rates(
    spec: &FairnessSpec,
    net: &crate::flows::FlowNetwork,
    p: &LoadedPolicy,
    n: usize,
    run: u32,
) -> Result<crate::flows::FlowRates, EvalError> {
    let flows: Vec<crate::flows::Flow<'_>> = (0..n)
        .map(|k| crate::flows::Flow {
            driver: p,
            objective: spec.objective_of(k, p.scenario().objective),
            start_s: spec.start_in_run(k, n, run),
            stop_s: spec.stop_in_run(k, n, run),
            extra_rtt_s: spec.extra_rtt_of(k),
        })
        .collect();
    Ok(crate::flows::run_flows(
        net,
        &flows,
        spec.duration_s,
        1.0,
        0,
    )?)
}

/// A CSV cell: the value, or empty without one.
fn optional_cell(x: Option<f64>) -> String {
    x.map(|v| v.to_string()).unwrap_or_default()
}

/// The median of Jain's indices (0 for a run too short to have a second with every flow
/// running, as fairness-summary.csv has always written it).
fn median_or_zero(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        0.0
    } else {
        median(xs.to_vec())
    }
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

/// The fastest flow's mean rate over the slowest's (infinite when one starved completely).
fn max_min_ratio(rates: &[f64]) -> f64 {
    let hi = rates.iter().copied().fold(0.0, f64::max);
    let lo = rates.iter().copied().fold(f64::INFINITY, f64::min);
    if lo > 0.0 {
        hi / lo
    } else {
        f64::INFINITY
    }
}

/// Seconds at the start of a friendliness run that its rates leave out (both flows ramp up).
pub const FRIENDLINESS_SETTLE_S: f64 = 5.0;

/// The mean delivery rates of a friendliness run's two flows (the scheme's, then Cubic's)
/// after [`FRIENDLINESS_SETTLE_S`]; their ratio is the friendliness figure.
pub fn friendliness_rates_of(rates: &crate::flows::FlowRates) -> (f64, f64) {
    (
        rates.mean_rate(0, FRIENDLINESS_SETTLE_S),
        rates.mean_rate(1, FRIENDLINESS_SETTLE_S),
    )
}

/// One flow of `p` (under the spec's objective, or its own) and one of `cubic`, both from
/// the start, on `net` for the spec's duration; delivery rates per second.
pub fn friendliness_run(
    spec: &FriendlinessSpec,
    net: &crate::flows::FlowNetwork,
    p: &LoadedPolicy,
    cubic: &LoadedPolicy,
) -> Result<crate::flows::FlowRates, EvalError> {
    let flow = |driver, objective| crate::flows::Flow {
        driver,
        objective,
        start_s: 0.0,
        stop_s: None,
        extra_rtt_s: 0.0,
    };
    let flows = [
        flow(p, spec.objective.unwrap_or(p.scenario().objective)),
        flow(cubic, [1.0 / 3.0; 3]),
    ];
    Ok(crate::flows::run_flows(
        net,
        &flows,
        spec.duration_s,
        1.0,
        0,
    )?)
}

/// One flow of each policy against one Cubic flow, per buffer: friendliness.csv (mean
/// delivery rates and their ratio after the first 5 s, with the buffer) and a figure per
/// buffer (`friendliness.png`, or `friendliness-<k>bdp.png` with `buffers_bdp`) of the ratio
/// per second, log scale.
pub fn friendliness_outputs(
    dir: &Path,
    spec: &FriendlinessSpec,
    policies: &[LoadedPolicy],
) -> Result<Vec<PathBuf>, EvalError> {
    let cubic = LoadedPolicy::load(Path::new("cubic"))?;
    let mut text = String::from("policy,policy_pps,cubic_pps,ratio,queue_pkts\n");
    let mut figures = Vec::new();
    for (label, net) in spec.networks() {
        let mut points: Vec<Vec<(f64, f64)>> = Vec::new();
        for p in policies {
            let rates = friendliness_run(spec, &net, p, &cubic)?;
            let (a, b) = friendliness_rates_of(&rates);
            text.push_str(&format!(
                "{},{a},{b},{},{}\n",
                p.name(),
                a / b.max(1e-9),
                net.queue_pkts
            ));
            let per_second: Vec<(f64, f64)> = rates.rates[0]
                .iter()
                .zip(&rates.rates[1])
                .enumerate()
                .map(|(t, (x, y))| ((t + 1) as f64, x / y.max(1.0)))
                .collect();
            points.push(per_second);
        }
        let names: Vec<&str> = policies.iter().map(|p| p.name()).collect();
        let png = if label.is_empty() {
            dir.join("friendliness.png")
        } else {
            dir.join(format!("friendliness-{label}.png"))
        };
        draw_figure(&png, &friendliness_figure(spec, &net, &names, points))?;
        figures.push(png);
    }
    let path = dir.join("friendliness.csv");
    write_text(&path, &text)?;
    Ok(figures)
}

/// The friendliness figure: each scheme's rate ratio to Cubic per second, on a log axis with
/// the equal-share line, learned and classic schemes apart when they do not fit one panel.
fn friendliness_figure(
    spec: &FriendlinessSpec,
    net: &crate::flows::FlowNetwork,
    names: &[&str],
    points: Vec<Vec<(f64, f64)>>,
) -> Figure {
    let (groups, mut legend) = policy_lines(names, points);
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
    Figure {
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
    }
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
    let axes = RowAxes {
        end: end.max(1e-3),
        thr_top: thr_top.max(1.0),
        rtt_top: rtt_top.max(1.0),
    };
    runs.iter()
        .zip(&styles)
        .flat_map(|((name, rows), style)| axes.row(&display_name(name), rows, *style))
        .collect()
}

/// The shared axes of every row of the time-series figure.
struct RowAxes {
    end: f64,
    thr_top: f64,
    rtt_top: f64,
}

impl RowAxes {
    /// One scheme's row: throughput (sending rate, delivered, link capacity) and RTT (mean,
    /// base), titled in the scheme's colour.
    fn row(&self, who: &str, rows: &[MiRow], style: LineStyle) -> [Panel; 2] {
        let col = |f: fn(&MiRow) -> f64| -> Vec<(f64, f64)> {
            rows.iter().map(|r| (r.time_s, f(r))).collect()
        };
        let line = |label: &str, points, style| Line {
            label: label.into(),
            points,
            style,
        };
        let time = || Axis::linear("time (s)").range(0.0, self.end);
        let reference = LineStyle::solid(REFERENCE).with_width(1);
        let mut thr = Panel::new(
            format!("{who}: throughput"),
            time(),
            Axis::linear("packets/s").range(0.0, self.thr_top),
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
        let sampled_rtt_ms = |r: &MiRow| {
            if r.mean_rtt_s > 0.0 {
                1e3 * r.mean_rtt_s
            } else {
                f64::NAN
            }
        };
        let mut rtt = Panel::new(
            format!("{who}: RTT"),
            time(),
            Axis::linear("RTT (ms)").range(0.0, self.rtt_top),
            vec![
                line("mean RTT", col(sampled_rtt_ms), style.with_width(2)),
                line("base RTT", col(|r| 1e3 * r.base_rtt_s), reference),
            ],
        );
        rtt.title_colour = Some(style.colour);
        [thr, rtt]
    }
}

/// Each policy on a scenario file: timeseries-<name>.csv and .png (sending rate, delivered
/// throughput and RTT, one row of panels per policy). Returns the PNG's path.
pub fn timeseries_outputs(
    dir: &Path,
    suite_dir: &Path,
    spec: &TimeSeriesSpec,
    policies: &[LoadedPolicy],
) -> Result<PathBuf, EvalError> {
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
    write_text(&csv, &text)?;
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
    fn fairness_draws_one_panel_per_flow_count() {
        let mut runs: FairnessRuns = Vec::new();
        for p in mocc_plot::testing::TEST_SCHEMES {
            for n in [2, 3, 4] {
                runs.push((p.into(), format!("{n} flows"), vec![0.6, 0.9, 1.0]));
            }
        }
        let (panels, legend) = fairness_panels(&runs, 4);
        assert_eq!(panels.len(), 3);
        assert_eq!(legend.len(), 7);
        for (p, n) in panels.iter().zip([2, 3, 4]) {
            assert_eq!(p.title, format!("{n} flows"));
            assert_eq!(p.lines.len(), 7);
            // One x range for every panel, reaching 1/4 (the lowest index of 4 flows).
            assert_eq!(p.x.range, Some((0.2, 1.01)));
        }
        // A scheme has the same colour in every panel.
        let colours: Vec<_> = panels.iter().map(|p| p.lines[2].style.colour).collect();
        assert!(colours
            .iter()
            .all(|&c| c == mocc_plot::style::SCHEMES[2].colour));
    }

    fn repo(path: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
    }

    #[test]
    fn time_series_cover_the_same_duration_and_never_deliver_negative_packets() {
        // The LEO path: 0.1% random loss and a 0.3 s outage at 14.5 s, when MIs see no acks.
        let scenario = mocc_gym::Scenario::load(&repo("configs/scenarios/leo.yaml")).unwrap();
        let policies = [
            LoadedPolicy::load(&repo("checkpoints/aurora")).unwrap(),
            LoadedPolicy::load(Path::new("cubic")).unwrap(),
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
