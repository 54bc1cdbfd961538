//! The evaluation figures `mocc eval` draws from its rows: the paper's Figure 5 (utilization and
//! RTT ratio against bandwidth, RTT, random loss and buffer size) and Figure 7 (the CDF of the
//! normalized reward over networks x objectives).

use crate::eval::{EvalRow, SuiteNetwork};
use crate::plot::{multi_line, register_font, PlotError, Series};
use plotters::prelude::*;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A labelled series of (x, y) points.
type Line = (String, Vec<(f64, f64)>);
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
            SweepParam::Loss => "random loss rate",
            SweepParam::Queue => "buffer (packets)",
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

/// A line of a figure: one policy, and one objective for policies that take it.
fn line_key(r: &EvalRow, per_objective: bool) -> String {
    if per_objective {
        format!("{} w=({}, {}, {})", r.policy, r.w_thr, r.w_lat, r.w_loss)
    } else {
        r.policy.clone()
    }
}

/// Means of a metric per (line, sweep point), in sweep order.
fn sweep_lines(
    rows: &[EvalRow],
    points: &[(SweepParam, SuiteNetwork)],
    param: SweepParam,
    objective_policies: &[String],
    metric: Metric,
) -> Vec<Line> {
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
    let mut lines: Vec<Line> = Vec::new();
    for (p, net) in points.iter().filter(|(p, _)| *p == param) {
        let label = net.label();
        let mut groups: Vec<(String, f64, f64)> = Vec::new();
        for r in rows.iter().filter(|r| r.network == label && keep(r)) {
            let key = line_key(r, objective_policies.contains(&r.policy));
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

/// Figure 5: utilization and RTT ratio against each swept parameter, one line per policy (and
/// per objective for `objective_policies`).
pub fn sweep_figure(
    out: &Path,
    spec: &SweepSpec,
    rows: &[EvalRow],
    objective_policies: &[String],
) -> Result<(), PlotError> {
    register_font();
    let d = |e: String| PlotError::Draw(format!("{}: {e}", out.display()));
    let points = spec.networks();
    let params: Vec<SweepParam> = SweepParam::ALL
        .into_iter()
        .filter(|p| points.iter().any(|(q, _)| q == p))
        .collect();
    let root =
        BitMapBackend::new(out, (1400, 380 * params.len().max(1) as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| d(e.to_string()))?;
    let areas = root.split_evenly((params.len().max(1), 2));
    let metrics: [(&str, Metric); 2] = [
        ("link utilization", |r| r.metrics.utilization),
        ("RTT / base RTT", |r| r.metrics.rtt_ratio),
    ];
    for (k, &param) in params.iter().enumerate() {
        for (j, (name, metric)) in metrics.iter().enumerate() {
            let lines = sweep_lines(rows, &points, param, objective_policies, *metric);
            let series = as_series(&lines);
            let title = format!("{name} vs {}", param.label());
            multi_line(
                &areas[2 * k + j],
                &title,
                param.label(),
                name,
                &series,
                false,
            )
            .map_err(d)?;
        }
    }
    root.present().map_err(|e| d(e.to_string()))?;
    Ok(())
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

/// Figure 7: the CDF of the normalized (MOCC) reward over every run, per policy.
pub fn reward_cdf_figure(out: &Path, rows: &[EvalRow]) -> Result<(), PlotError> {
    register_font();
    let mut policies: Vec<&str> = Vec::new();
    for r in rows {
        if !policies.contains(&r.policy.as_str()) {
            policies.push(&r.policy);
        }
    }
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
    let series: Vec<Series<'_>> = policies
        .iter()
        .zip(&cdfs)
        .map(|(p, c)| Series {
            label: p.to_string(),
            points: c,
        })
        .collect();
    single_chart(
        out,
        "CDF of the normalized reward over networks x objectives x seeds",
        "normalized reward per MI (run mean)",
        "fraction of runs",
        &series,
    )?;
    Ok(())
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

/// A scenario file whose time series each policy draws (`timeseries:` entries).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeSeriesSpec {
    /// Scenario file (relative to the suite file).
    pub scenario: std::path::PathBuf,
    /// MIs to run.
    pub steps: usize,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> PlotError + '_ {
    move |e| PlotError::Draw(format!("{}: {e}", path.display()))
}

/// Runs the fairness experiment for every policy: fairness.csv (Jain's index per second once
/// all flows run) and fairness.png (its CDF per policy and flow count).
pub fn fairness_outputs(
    dir: &Path,
    spec: &FairnessSpec,
    policies: &[crate::eval::LoadedPolicy],
) -> Result<(), crate::eval::EvalError> {
    let mut text = String::from("policy,flows,second,jain_index\n");
    let mut lines: Vec<Line> = Vec::new();
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
            lines.push((format!("{} x{n}", p.name()), cdf(jain)));
        }
    }
    csv_and_chart(
        dir,
        "fairness",
        text,
        [
            "Fairness: CDF of Jain's index per second (staggered flows of one scheme)",
            "Jain's fairness index",
            "fraction of seconds",
        ],
        &lines,
    )?;
    Ok(())
}

/// One flow of each policy against one Cubic flow: friendliness.csv (mean delivery rates and
/// their ratio after the first 5 s) and friendliness.png (the ratio per second).
pub fn friendliness_outputs(
    dir: &Path,
    spec: &FriendlinessSpec,
    policies: &[crate::eval::LoadedPolicy],
) -> Result<(), crate::eval::EvalError> {
    let cubic = crate::eval::LoadedPolicy::load(Path::new("cubic"))?;
    let mut text = String::from("policy,policy_pps,cubic_pps,ratio\n");
    let mut lines: Vec<Line> = Vec::new();
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
        lines.push((p.name().to_string(), per_second));
    }
    csv_and_chart(
        dir,
        "friendliness",
        text,
        [
            "Friendliness: delivery rate of the scheme / of a competing Cubic flow",
            "time (s)",
            "rate ratio (scheme / Cubic)",
        ],
        &lines,
    )?;
    Ok(())
}

/// Each policy on a scenario file: timeseries-<name>.csv and .png (rate, throughput, RTT).
pub fn timeseries_outputs(
    dir: &Path,
    suite_dir: &Path,
    spec: &TimeSeriesSpec,
    policies: &[crate::eval::LoadedPolicy],
) -> Result<(), crate::eval::EvalError> {
    let path = suite_dir.join(&spec.scenario);
    let scenario = mocc_gym::Scenario::load(&path)?;
    let stem = spec
        .scenario
        .file_stem()
        .map_or_else(|| "scenario".into(), |s| s.to_string_lossy().into_owned());
    let mut text = String::from("policy,time_s,send_pps,thr_pps,mean_rtt_s\n");
    let mut panels: [Vec<Line>; 3] = Default::default();
    for p in policies {
        let (rows, _) = crate::simulate::simulate_policy(
            scenario.config(),
            p,
            p.scenario().objective,
            spec.steps,
            0,
        )?;
        for r in &rows {
            text.push_str(&format!(
                "{},{},{},{},{}\n",
                p.name(),
                r.time_s,
                r.send_pps,
                r.thr_pps,
                r.mean_rtt_s
            ));
        }
        let col = |f: fn(&crate::simulate::MiRow) -> f64| -> Vec<(f64, f64)> {
            rows.iter().map(|r| (r.time_s, f(r))).collect()
        };
        panels[0].push((p.name().to_string(), col(|r| r.send_pps)));
        panels[1].push((p.name().to_string(), col(|r| r.thr_pps)));
        panels[2].push((p.name().to_string(), col(|r| 1e3 * r.mean_rtt_s)));
    }
    let csv = dir.join(format!("timeseries-{stem}.csv"));
    std::fs::write(&csv, text).map_err(io_err(&csv))?;
    let out = dir.join(format!("timeseries-{stem}.png"));
    register_font();
    let d = |e: String| PlotError::Draw(format!("{}: {e}", out.display()));
    let root = BitMapBackend::new(&out, (1200, 1050)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| d(e.to_string()))?;
    let areas = root.split_evenly((3, 1));
    let titles = [
        ("sending rate", "packets/s"),
        ("throughput (delivered)", "packets/s"),
        ("mean RTT", "ms"),
    ];
    for ((area, lines), (title, unit)) in areas.iter().zip(&panels).zip(titles) {
        let series = as_series(lines);
        multi_line(
            area,
            &format!("{stem}: {title}"),
            "time (s)",
            unit,
            &series,
            false,
        )
        .map_err(d)?;
    }
    root.present().map_err(|e| d(e.to_string()))?;
    Ok(())
}

/// Borrows labelled lines as chart series.
fn as_series(lines: &[Line]) -> Vec<Series<'_>> {
    lines
        .iter()
        .map(|(l, pts)| Series {
            label: l.clone(),
            points: pts,
        })
        .collect()
}

/// Writes `name.csv` and draws `name.png` (one chart of `lines`) into `dir`.
fn csv_and_chart(
    dir: &Path,
    name: &str,
    csv: String,
    labels: [&str; 3],
    lines: &[Line],
) -> Result<(), PlotError> {
    let path = dir.join(format!("{name}.csv"));
    std::fs::write(&path, csv).map_err(io_err(&path))?;
    let [title, x, y] = labels;
    single_chart(
        &dir.join(format!("{name}.png")),
        title,
        x,
        y,
        &as_series(lines),
    )
}

fn single_chart(
    out: &Path,
    title: &str,
    x: &str,
    y: &str,
    series: &[Series<'_>],
) -> Result<(), PlotError> {
    register_font();
    let d = |e: String| PlotError::Draw(format!("{}: {e}", out.display()));
    let root = BitMapBackend::new(out, (1000, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| d(e.to_string()))?;
    multi_line(&root, title, x, y, series, false).map_err(d)?;
    root.present().map_err(|e| d(e.to_string()))?;
    Ok(())
}
