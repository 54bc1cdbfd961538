//! `mocc net compare`: every network and objective of an eval suite, in the simulator and on a
//! real emulated path, side by side: what the simulator predicts against what a real kernel
//! queue gives.

use crate::path::{flow_metrics, rate_driver};
use crate::timeline::PathTimeline;
use mocc_eval::actor::LoadedPolicy;
use mocc_eval::results::{EvalError, RunMetrics};
use mocc_eval::scenario_eval::fixed_link_runs;
use mocc_eval::suite::{Suite, SuiteNetwork};
use mocc_net::transport::{run_controlled_flow, run_tcp_flow};
use mocc_net::{NetError, PathSpec, Topology};
use mocc_plot::axes::shared_range;
use mocc_plot::axes::{Axis, Scale};
use mocc_plot::chart::{draw_figure, legend_of, Figure, Line, Panel, PlotError};
use mocc_plot::style::{policy_styles, Dash, LineStyle, REFERENCE};
use mocc_policy::MetricsVersion;
use serde::Serialize;
use std::path::Path;
use std::time::Duration;

/// How the real side runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RealRuns {
    /// Length of each real run (s).
    pub duration_s: f64,
    /// Real runs per network and objective (their metrics are averaged).
    pub repeats: u32,
}

/// Why a comparison stopped.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// The simulator side failed.
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// The real path could not be built or used.
    #[error(transparent)]
    Net(#[from] NetError),
    /// The policy cannot drive a real flow.
    #[error("{0}")]
    Policy(String),
    /// The figure could not be drawn.
    #[error(transparent)]
    Plot(#[from] PlotError),
    /// A row could not be written.
    #[error("{path}: {source}")]
    Write {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// One network and objective of one policy on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompareRow {
    /// The policy.
    pub policy: String,
    /// The network's label.
    pub network: String,
    /// Objective weights.
    pub w: [f64; 3],
    /// Simulator: the mean over the suite's seeds.
    pub sim: RunMetrics,
    /// Real path: the mean over the real runs.
    pub real: RunMetrics,
    /// Sample standard deviation of the simulator's utilization over its seeds (0 for one).
    pub sim_utilization_sd: f64,
    /// Sample standard deviation of the real utilization over the real runs (0 for one).
    pub real_utilization_sd: f64,
}

/// Runs `policy` (an export folder, `const:RATE`, or `cubic` / `bbr`: the simulator's model
/// against the kernel's own) on every network of `suite` (its `networks`; sweeps and the other
/// sections are left out) under each objective (once, under the first, for the schemes that
/// take none): `runs.repeats` real runs of
/// `runs.duration_s` on a path built for each network, and the same experiment in the simulator
/// once per suite seed (the flow alone on the link, started at half the bottleneck's rate, for
/// the same number of seconds, utilization over the whole run). `progress` hears of each real
/// run; `on_row` gets each row as soon as it is measured (to write it then: a long comparison
/// that is stopped keeps what it measured).
pub fn compare(
    policy: &str,
    suite: &Suite,
    runs: RealRuns,
    mut progress: impl FnMut(&str),
    mut on_row: impl FnMut(&CompareRow) -> Result<(), CompareError>,
) -> Result<Vec<CompareRow>, CompareError> {
    let loaded = LoadedPolicy::load(Path::new(policy)).map_err(EvalError::from)?;
    let metrics = loaded.scenario().metrics;
    let mut rows = Vec::new();
    for net in &suite.networks {
        let path = path_of(net);
        let start_rate_pps = path.bandwidth_pps / 2.0;
        let topology = Topology::create(&path)?;
        let objectives = suite.objectives_or_default();
        let objectives = if loaded.baseline().is_some() {
            &objectives[..1]
        } else {
            &objectives[..]
        };
        for &w in objectives {
            let sim = fixed_link_runs(
                &loaded,
                net,
                start_rate_pps,
                w,
                &suite.seeds,
                runs.duration_s,
            )?;
            let mut real = Vec::new();
            for k in 0..runs.repeats {
                progress(&format!(
                    "{policy} on {} under {w:?}: real run {}",
                    net.label(),
                    k + 1
                ));
                real.push(real_run(
                    &topology,
                    &path,
                    policy,
                    w,
                    start_rate_pps,
                    runs.duration_s,
                    metrics,
                )?);
            }
            let row = CompareRow {
                policy: policy.to_string(),
                network: net.label(),
                w,
                sim: RunMetrics::mean(sim.iter()),
                real: RunMetrics::mean(real.iter()),
                sim_utilization_sd: sample_sd(sim.iter().map(|m| m.utilization)),
                real_utilization_sd: sample_sd(real.iter().map(|m| m.utilization)),
            };
            on_row(&row)?;
            rows.push(row);
        }
        topology.close()?;
    }
    Ok(rows)
}

/// Sample standard deviation (n - 1 in the denominator); 0 for fewer than two values.
fn sample_sd(values: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = values.collect();
    if v.len() < 2 {
        return 0.0;
    }
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let squares: f64 = v.iter().map(|x| (x - mean).powi(2)).sum();
    (squares / (v.len() - 1) as f64).sqrt()
}

/// The real path of a suite network.
fn path_of(net: &SuiteNetwork) -> PathSpec {
    PathSpec {
        bandwidth_pps: net.bw_pps,
        delay_s: net.delay_s,
        queue_pkts: net.queue_pkts.round() as u32,
        loss: net.loss,
    }
}

fn real_run(
    topology: &Topology,
    path: &PathSpec,
    policy: &str,
    w: [f64; 3],
    start_rate_pps: f64,
    duration_s: f64,
    metrics: MetricsVersion,
) -> Result<RunMetrics, CompareError> {
    let duration = Duration::from_secs_f64(duration_s);
    let flow = match kernel_tcp(policy) {
        Some(cc) => run_tcp_flow(topology, cc, duration)?,
        None => {
            let driver =
                rate_driver(policy, Some(w), start_rate_pps).map_err(CompareError::Policy)?;
            run_controlled_flow(topology, 0, driver, duration)?
        }
    };
    let timeline = PathTimeline::fixed(path);
    Ok(flow_metrics(&flow, &timeline, flow.started_ns, metrics, w))
}

/// The kernel congestion control a compared scheme names, for the schemes both sides have.
pub fn kernel_tcp(policy: &str) -> Option<&str> {
    matches!(policy, "cubic" | "bbr").then_some(policy)
}

/// compare.csv's header line.
pub const CSV_HEADER: &str = "policy,network,w_thr,w_lat,w_loss,sim_utilization,\
    real_utilization,sim_thr_pps,real_thr_pps,sim_rtt_ratio,real_rtt_ratio,sim_loss,real_loss,\
    sim_utilization_sd,real_utilization_sd\n";

/// One row of compare.csv (with its newline): the simulator's and the real path's
/// utilization, delivered packets/s, RTT ratio and loss.
pub fn csv_line(r: &CompareRow) -> String {
    format!(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
        mocc_outputs::csv::cell(&r.policy),
        mocc_outputs::csv::cell(&r.network),
        r.w[0],
        r.w[1],
        r.w[2],
        r.sim.utilization,
        r.real.utilization,
        r.sim.thr_pps,
        r.real.thr_pps,
        r.sim.rtt_ratio,
        r.real.rtt_ratio,
        r.sim.loss,
        r.real.loss,
        r.sim_utilization_sd,
        r.real_utilization_sd
    )
}

/// The figure: real against simulated utilization, RTT ratio and loss, one point per network
/// and objective, one colour per policy, and the line where both agree.
pub fn figure(out: &Path, rows: &[CompareRow]) -> Result<(), PlotError> {
    let mut policies: Vec<&str> = rows.iter().map(|r| r.policy.as_str()).collect();
    policies.dedup();
    let styles = policy_styles(&policies);
    let panel = |title: &str, unit: &str, get: fn(&RunMetrics) -> f64| {
        let mut lines: Vec<Line> = policies
            .iter()
            .zip(&styles)
            .map(|(p, s)| Line {
                label: mocc_plot::style::display_name(p),
                points: rows
                    .iter()
                    .filter(|r| r.policy == *p)
                    .map(|r| (get(&r.sim), get(&r.real)))
                    .collect(),
                style: *s,
            })
            .collect();
        // One range for both axes, so the diagonal is the diagonal.
        let values: Vec<f64> = rows
            .iter()
            .flat_map(|r| [get(&r.sim), get(&r.real)])
            .collect();
        let (lo, hi) = shared_range(Scale::Linear, values.iter()).unwrap_or((0.0, 1.0));
        lines.insert(0, equal_line(lo, hi));
        let mut p = Panel::new(
            title,
            Axis::linear(format!("simulator {unit}")).range(lo, hi),
            Axis::linear(format!("real path {unit}")).range(lo, hi),
            lines,
        );
        p.markers = true;
        p
    };
    let panels = vec![
        panel("Utilization", "utilization (fraction of the link)", |m| {
            m.utilization
        }),
        panel("RTT ratio", "RTT / propagation RTT", |m| m.rtt_ratio),
        panel("Loss", "loss (fraction of packets)", |m| m.loss),
    ];
    let mut legend = vec![("real = simulator".to_string(), reference_style())];
    legend.extend(legend_of(panels[0].lines.iter().skip(1)));
    draw_figure(
        out,
        &Figure {
            title: Some("Simulator against a real Linux path".into()),
            panels,
            columns: 3,
            panel_size: (520, 460),
            legend,
        },
    )
}

fn reference_style() -> LineStyle {
    LineStyle::solid(REFERENCE).with_dash(Dash::Dashed)
}

/// The diagonal from `lo` to `hi` (dashed, so a scatter panel draws it as a line).
fn equal_line(lo: f64, hi: f64) -> Line {
    Line {
        label: "real = simulator".into(),
        points: vec![(lo, lo), (hi, hi)],
        style: reference_style().with_width(1),
    }
}

/// Per policy: how far the real path is from the simulator over the suite.
#[derive(Debug, Serialize)]
pub struct CompareSummary {
    /// The policy.
    pub policy: String,
    /// Its networks x objectives.
    pub cases: usize,
    /// The largest |real - simulated| utilization.
    pub max_abs_utilization_diff: f64,
    /// The largest |real / simulated - 1| RTT ratio.
    pub max_rel_rtt_ratio_diff: f64,
    /// The largest |real - simulated| loss rate.
    pub max_abs_loss_diff: f64,
}

/// Per policy of `policies`: the largest differences between the real path and the simulator
/// over its rows.
pub fn summarize(policies: &[String], rows: &[CompareRow]) -> Vec<CompareSummary> {
    policies
        .iter()
        .map(|p| {
            let mine: Vec<&CompareRow> = rows.iter().filter(|r| &r.policy == p).collect();
            let max =
                |f: &dyn Fn(&CompareRow) -> f64| mine.iter().map(|r| f(r)).fold(0.0, f64::max);
            CompareSummary {
                policy: p.clone(),
                cases: mine.len(),
                max_abs_utilization_diff: max(&|r| (r.real.utilization - r.sim.utilization).abs()),
                max_rel_rtt_ratio_diff: max(&|r| {
                    (r.real.rtt_ratio / r.sim.rtt_ratio.max(1e-9) - 1.0).abs()
                }),
                max_abs_loss_diff: max(&|r| (r.real.loss - r.sim.loss).abs()),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_sd_uses_n_minus_one() {
        // Mean 2.5, squares 2.25 + 0.25 + 0.25 + 2.25 = 5, over 3.
        let sd = sample_sd([1.0, 2.0, 3.0, 4.0].into_iter());
        assert!((sd - (5.0f64 / 3.0).sqrt()).abs() < 1e-12, "{sd}");
        assert_eq!(sample_sd([0.7].into_iter()), 0.0);
        assert_eq!(sample_sd(std::iter::empty()), 0.0);
    }
}
