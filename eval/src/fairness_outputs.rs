//! The `fairness:` section's runs and outputs: n flows of each scheme on each bottleneck, each
//! case run as often as the section asks, summarized over the seconds all flows run
//! (fairness.csv, fairness-summary.csv, fairness.png, fairness-operating-points.png).

use crate::actor::LoadedPolicy;
use crate::figures::{cdf, policy_lines};
use crate::flow_figures::write_text;
use crate::results::median;
use crate::results::EvalError;
use crate::suite::FairnessSpec;
use mocc_plot::axes::Axis;
use mocc_plot::chart::{draw_figure, Figure, Legend, Line, Panel, PlotError};
use mocc_plot::style::{display_name, policy_styles, Dash};
use std::path::Path;

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
                    if spec.record_mis {
                        let case = dir.join(MIS_DIR).join(case_folder(p.name(), net, n, run));
                        write_flow_mis(&case, &rates)?;
                    }
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
    /// Median of the per-second Jain's indices (NaN, an empty cell, for a run too short to
    /// have a second with every flow running: undefined, not 0).
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
            median_jain_index: median(jain.clone()),
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
            mocc_outputs::csv::cell(&r.policy),
            mocc_outputs::csv::cell(&r.network),
            r.flows,
            mocc_outputs::csv::number(Some(r.median_jain_index)),
            r.utilization,
            r.max_min_rate_ratio,
            mocc_outputs::csv::number(r.rtt_ratio),
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
            "{},{n},{second},{j},{u},{}{},{},{run}\n",
            mocc_outputs::csv::cell(policy),
            mocc_outputs::csv::cell(&net.label()),
            cells.concat(),
            mocc_outputs::csv::number(rates.rtt_ratio_in(second))
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
            record_mis: spec.record_mis,
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

/// Where `mocc eval` writes the MIs of a suite with `fairness.record_mis`.
pub const MIS_DIR: &str = "fairness-mis";

/// The folder of one run's MI records under [`MIS_DIR`]: `<policy>/<network>/<n>-flows-run-<r>`,
/// the policy's name as [`folder_name`] writes it.
pub fn case_folder(
    policy: &str,
    net: &crate::flows::FlowNetwork,
    n: usize,
    run: u32,
) -> std::path::PathBuf {
    Path::new(&folder_name(policy))
        .join(net.label())
        .join(format!("{n}-flows-run-{run}"))
}

/// A policy's name as one folder's name: every character but letters, digits, `-`, `_` and `.`
/// as `_` (`checkpoints/mocc-pair`: `checkpoints_mocc-pair`).
pub fn folder_name(policy: &str) -> String {
    policy
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Writes `flow-<k>.csv` (k from 1) into `dir` for each flow of the run that recorded MIs
/// (nothing, and no folder, for a scheme without an MI clock).
pub fn write_flow_mis(dir: &Path, rates: &crate::flows::FlowRates) -> Result<(), EvalError> {
    let texts: Vec<Option<String>> = rates
        .mis
        .iter()
        .map(|records| (!records.is_empty()).then(|| crate::flows::FlowMi::csv_text(records)))
        .collect();
    write_flow_csvs(dir, &texts)
}

/// Writes `flow-<k>.csv` (k from 1) into `dir` for each flow with a text (nothing, and no
/// folder, when none has one): one run's MI records, simulated or real.
pub fn write_flow_csvs(dir: &Path, texts: &[Option<String>]) -> Result<(), EvalError> {
    if texts.iter().all(Option::is_none) {
        return Ok(());
    }
    std::fs::create_dir_all(dir).map_err(|source| PlotError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    for (k, text) in texts.iter().enumerate() {
        if let Some(text) = text {
            write_text(&dir.join(format!("flow-{}.csv", k + 1)), text)?;
        }
    }
    Ok(())
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
}
