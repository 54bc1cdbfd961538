//! The figures of the other multi-flow sections and of time series: friendliness against
//! Cubic (each scheme's rate over Cubic's per second) and each scheme's time series on a
//! scenario file over one duration. The fairness section's are in
//! [`crate::fairness_outputs`].

use crate::actor::LoadedPolicy;
use crate::figures::policy_lines;
use crate::results::EvalError;
use crate::simulate::{Horizon, MiRow};
use crate::suite::{FriendlinessSpec, TimeSeriesSpec};
use mocc_plot::axes::shared_range;
use mocc_plot::axes::{Axis, Scale};
use mocc_plot::chart::{draw_figure, Figure, Line, Panel, PlotError};
use mocc_plot::style::{display_name, policy_styles, Dash, LineStyle, REFERENCE};
use std::path::{Path, PathBuf};

/// Writes a whole CSV file atomically, or the error naming it.
pub(crate) fn write_text(path: &Path, text: &str) -> Result<(), PlotError> {
    mocc_outputs::write_file_atomic(path, text.as_bytes()).map_err(|e| PlotError::Write {
        path: e.path,
        source: e.source,
    })
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

/// The Cubic flow a friendliness run sets beside a scheme (the spec's `cubic`).
pub fn friendliness_cubic(spec: &FriendlinessSpec) -> Result<LoadedPolicy, EvalError> {
    Ok(LoadedPolicy::load(Path::new(spec.cubic.name()))?)
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
        record_mis: false,
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
) -> Result<(Vec<FriendlinessRow>, Vec<PathBuf>), EvalError> {
    let cubic = friendliness_cubic(spec)?;
    let mut text = String::from("policy,policy_pps,cubic_pps,ratio,network,queue_pkts\n");
    let mut rows = Vec::new();
    let mut figures = Vec::new();
    for (label, net) in spec.networks() {
        let mut points: Vec<Vec<(f64, f64)>> = Vec::new();
        for p in policies {
            let rates = friendliness_run(spec, &net, p, &cubic)?;
            let (a, b) = friendliness_rates_of(&rates);
            let row = FriendlinessRow {
                policy: p.name().to_string(),
                network: net.label(),
                policy_pps: a,
                cubic_pps: b,
                ratio: a / b.max(1e-9),
                queue_pkts: net.queue_pkts,
            };
            text.push_str(&format!(
                "{},{},{},{},{},{}\n",
                mocc_outputs::csv::cell(&row.policy),
                row.policy_pps,
                row.cubic_pps,
                row.ratio,
                row.network,
                row.queue_pkts
            ));
            rows.push(row);
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
    Ok((rows, figures))
}

/// One row of friendliness.csv: a scheme's flow beside one Cubic flow on one buffer.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FriendlinessRow {
    /// The scheme.
    pub policy: String,
    /// The bottleneck's label (its buffer included).
    pub network: String,
    /// The scheme's mean delivery rate after the first 5 s (packets/s).
    pub policy_pps: f64,
    /// Cubic's.
    pub cubic_pps: f64,
    /// The scheme's rate over Cubic's.
    pub ratio: f64,
    /// The buffer (packets).
    pub queue_pkts: f64,
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

/// The names of a suite's time series, in order: each scenario file's stem, with `-2`, `-3`,
/// ... after a stem an earlier entry already has, so no two write the same files.
pub fn timeseries_names(specs: &[TimeSeriesSpec]) -> Vec<String> {
    let mut names: Vec<String> = Vec::with_capacity(specs.len());
    for spec in specs {
        let stem = spec
            .scenario
            .file_stem()
            .map_or_else(|| "scenario".into(), |s| s.to_string_lossy().into_owned());
        let mut name = stem.clone();
        let mut k = 1;
        while names.contains(&name) {
            k += 1;
            name = format!("{stem}-{k}");
        }
        names.push(name);
    }
    names
}

/// Each policy on a scenario file: timeseries-<stem>.csv and .png (sending rate, delivered
/// throughput and RTT, one row of panels per policy), `stem` from [`timeseries_names`].
/// Returns the PNG's path.
pub fn timeseries_outputs(
    dir: &Path,
    suite_dir: &Path,
    spec: &TimeSeriesSpec,
    stem: &str,
    policies: &[LoadedPolicy],
) -> Result<PathBuf, EvalError> {
    let path = suite_dir.join(&spec.scenario);
    let scenario = mocc_gym::Scenario::load(&path)?;
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
                mocc_outputs::csv::cell(p.name()),
                r.time_s,
                r.send_pps,
                r.delivered_pps,
                mocc_outputs::csv::number(r.rtt_sample()),
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
