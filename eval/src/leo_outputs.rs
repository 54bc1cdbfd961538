//! `mocc experiment leo`'s runs and outputs: every scheme on every case of a [`LeoStudy`] and
//! seed, then leo.csv, leo-summary.csv, the figures (leo-paths.png: the study's Figure 1;
//! leo-micro.png: Figures 2-3; leo-fairness.png: RTT fairness and the newcomer's share) and the
//! many-flows runs (Figure 7) in `many-flows/`.

use crate::actor::LoadedPolicy;
use crate::fairness_outputs::{fairness_outputs, folder_name, write_flow_mis, FairnessSummary};
use crate::flow_figures::write_text;
use crate::flows::FlowRates;
use crate::leo_study::{
    runs_csv, summarize, summary_csv, LeoMetrics, LeoPart, LeoRun, LeoStudy, LeoSummary,
};
use crate::leo_verdicts::{figure7_targets, verdicts, LeoVerdict};
use crate::results::EvalError;
use crate::suite::SuiteError;
use mocc_gym::ScenarioError;
use mocc_plot::axes::Axis;
use mocc_plot::chart::{draw_figure, Figure, Legend, Line, Panel};
use mocc_plot::style::{display_name, is_classic, policy_styles, Dash, LineStyle, REFERENCE};
use serde::Serialize;
use std::path::Path;

/// What `mocc experiment leo` found (summary.json).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeoReport {
    /// The settings run.
    pub study: LeoStudy,
    /// Medians over the seeds of every (part, x, scheme).
    pub summaries: Vec<LeoSummary>,
    /// The many-flows runs, one row per scheme and flow count.
    pub many_flows: Vec<FairnessSummary>,
    /// Each learned scheme against the targets.
    pub verdicts: Vec<LeoVerdict>,
}

/// What a folder of `mocc experiment leo` holds (leo.csv marks it), for replacing it whole:
/// leo.csv, leo-summary.csv, summary.json, the figures and `many-flows/`.
pub const LEO_OUTPUTS: mocc_outputs::Replaceable = mocc_outputs::Replaceable {
    what: "a LEO study's outputs",
    owns: |name, is_dir| {
        if is_dir {
            name == MANY_FLOWS_DIR || name == LEO_MIS_DIR
        } else {
            name.ends_with(".csv") || name.ends_with(".png") || name == "summary.json"
        }
    },
    marker: "leo.csv",
    command: Some("mocc experiment leo"),
};

/// The folder of the many-flows runs' outputs (fairness.csv, fairness-summary.csv,
/// fairness.png, fairness-operating-points.png).
pub const MANY_FLOWS_DIR: &str = "many-flows";

/// The folder of the runs' MI records, when asked for:
/// `<part>-<x>/<policy>/seed-<s>/flow-<k>.csv` (the policy's name as
/// [`folder_name`] writes it; `mocc eval`'s columns, [`crate::flows::FlowMi`]).
pub const LEO_MIS_DIR: &str = "mis";

/// The per-second runs the micro-benchmark figure draws: (part, scheme, rates) of the first
/// seed.
type Series = Vec<(LeoPart, String, FlowRates)>;

/// Runs the study for every scheme, writes its outputs in `out` and returns the report;
/// `progress` hears a line per scheme and part. With `record_mis`, every learned flow's MIs of
/// every run go to `out/`[`LEO_MIS_DIR`] (the many-flows runs' as `study.many_flows` says).
pub fn run_leo_study(
    study: &LeoStudy,
    policies: &[LoadedPolicy],
    out: &Path,
    record_mis: bool,
    mut progress: impl FnMut(&str),
) -> Result<LeoReport, EvalError> {
    study
        .validate()
        .map_err(|m| ScenarioError::invalid("leo study", m))?;
    let cases = study.cases();
    let mut runs = Vec::new();
    let mut series: Series = Vec::new();
    for p in policies {
        for case in &cases {
            for (k, &seed) in study.seeds.iter().enumerate() {
                let rates = case.run(p, seed, record_mis)?;
                if record_mis {
                    let dir = out
                        .join(LEO_MIS_DIR)
                        .join(format!("{}-{}", case.part.name(), case.x))
                        .join(folder_name(p.name()))
                        .join(format!("seed-{seed}"));
                    write_flow_mis(&dir, &rates)?;
                }
                runs.push(LeoRun {
                    part: case.part,
                    x: case.x,
                    policy: p.name().to_string(),
                    seed,
                    metrics: LeoMetrics::of(&rates),
                });
                if k == 0 && matches!(case.part, LeoPart::BandwidthSteps | LeoPart::RttSteps) {
                    series.push((case.part, p.name().to_string(), rates));
                }
            }
        }
        progress(&format!("leo: {} ran {} cases", p.name(), cases.len()));
    }
    write_text(&out.join("leo.csv"), &runs_csv(&runs))?;
    let summaries = summarize(&runs);
    write_text(&out.join("leo-summary.csv"), &summary_csv(&summaries))?;
    let names: Vec<&str> = policies.iter().map(LoadedPolicy::name).collect();
    draw_figure(
        &out.join("leo-paths.png"),
        &paths_figure(study, &names, &summaries),
    )?;
    draw_figure(
        &out.join("leo-micro.png"),
        &micro_figure(study, &names, &summaries, &series),
    )?;
    draw_figure(
        &out.join("leo-fairness.png"),
        &fairness_figure(study, &names, &summaries),
    )?;
    let many = out.join(MANY_FLOWS_DIR);
    std::fs::create_dir_all(&many).map_err(|source| mocc_plot::chart::PlotError::Write {
        path: many.clone(),
        source,
    })?;
    progress("leo: many flows (Figure 7)");
    let many_flows = fairness_outputs(&many, &study.many_flows, policies)?;
    let targets = figure7_targets().map_err(|message| SuiteError {
        path: "configs/eval/leo-flows.yaml".into(),
        message,
    })?;
    let verdicts = verdicts(study, &summaries, &many_flows, &targets, is_classic);
    Ok(LeoReport {
        study: study.clone(),
        summaries,
        many_flows,
        verdicts,
    })
}

/// One line per scheme of the medians of `part` against x, `value` picking the metric.
fn summary_lines(
    names: &[&str],
    summaries: &[LeoSummary],
    part: LeoPart,
    value: impl Fn(&LeoMetrics) -> Option<f64>,
) -> Vec<Line> {
    names
        .iter()
        .zip(policy_styles(names))
        .map(|(name, style)| Line {
            label: display_name(name),
            points: summaries
                .iter()
                .filter(|s| s.part == part && s.policy == *name)
                .map(|s| (s.x, value(&s.median).unwrap_or(f64::NAN)))
                .collect(),
            style,
        })
        .collect()
}

/// The legend: one entry per scheme, then the references drawn.
fn legend(names: &[&str], references: &[(&str, LineStyle)]) -> Legend {
    names
        .iter()
        .zip(policy_styles(names))
        .map(|(n, s)| (display_name(n), s))
        .chain(references.iter().map(|(l, s)| (l.to_string(), *s)))
        .collect()
}

fn reference_style() -> LineStyle {
    LineStyle::solid(REFERENCE)
        .with_dash(Dash::Dashed)
        .with_width(1)
}

/// A horizontal reference line at `y` over `[x0, x1]`.
fn level(label: &str, y: f64, x0: f64, x1: f64) -> Line {
    Line {
        label: label.into(),
        points: vec![(x0, y), (x1, y)],
        style: reference_style(),
    }
}

fn x_span(xs: &[f64]) -> (f64, f64) {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if lo.is_finite() {
        (lo, hi)
    } else {
        (0.0, 1.0)
    }
}

/// The study's Figure 1: one flow's utilization, delay inflation and retransmission rate, and
/// the two flows' goodput ratio, against the seconds between reconfigurations.
fn paths_figure(study: &LeoStudy, names: &[&str], summaries: &[LeoSummary]) -> Figure {
    let x = || Axis::linear("seconds between reconfigurations");
    let (x0, x1) = x_span(&study.reconfiguration_every_s);
    let mut utilization = summary_lines(names, summaries, LeoPart::Single, |m| Some(m.utilization));
    utilization.push(level(
        "target",
        crate::leo_verdicts::TARGET_UTILIZATION,
        x0,
        x1,
    ));
    let mut inflation = summary_lines(names, summaries, LeoPart::Single, |m| m.delay_inflation);
    inflation.push(level(
        "target",
        crate::leo_verdicts::TARGET_DELAY_INFLATION,
        x0,
        x1,
    ));
    let retransmission = summary_lines(names, summaries, LeoPart::Single, |m| {
        Some(100.0 * m.retransmission_rate)
    });
    let mut ratio = summary_lines(names, summaries, LeoPart::TwoFlows, |m| m.goodput_ratio);
    ratio.push(level(
        "target",
        crate::leo_verdicts::TARGET_GOODPUT_RATIO,
        x0,
        x1,
    ));
    let panels = vec![
        Panel::new(
            "(a) one flow: goodput",
            x(),
            Axis::linear("utilization").range(0.0, 1.05),
            utilization,
        ),
        Panel::new(
            "(b) one flow: delay inflation",
            x(),
            Axis::linear("RTT / base RTT"),
            inflation,
        ),
        Panel::new(
            "(c) one flow: retransmissions",
            x(),
            Axis::linear("lost / sent packets (%)"),
            retransmission,
        ),
        Panel::new(
            format!("(d) a second flow at {} s", study.second_flow_at_s),
            x(),
            Axis::linear("goodput ratio (lower / higher)").range(0.0, 1.05),
            ratio,
        ),
    ];
    Figure {
        title: Some(format!(
            "LEO-like paths: {} pkt/s and {} ms base RTT at start, reconfigured with a {} ms \
             handover, {} BDP buffer, {} s runs (medians of {} seeds)",
            study.bandwidth_pps,
            1000.0 * study.rtt_s,
            1000.0 * study.handover_outage_s,
            study.buffer_bdp,
            study.duration_s,
            study.seeds.len()
        )),
        panels,
        columns: 4,
        panel_size: (470, 420),
        legend: legend(names, &[("target", reference_style())]),
    }
}

/// Per-second lines of a micro-benchmark: the delivery rate (`rate`) or the RTT ratio, one per
/// scheme, and the path's capacity as the reference of the rate panel.
fn series_lines(names: &[&str], series: &Series, part: LeoPart, rate: bool) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut capacity = None;
    for (name, style) in names.iter().zip(policy_styles(names)) {
        let Some((_, _, r)) = series.iter().find(|s| s.0 == part && s.1 == *name) else {
            continue;
        };
        let at = |w: usize| (w as f64 + 0.5) * r.window_s;
        let points = if rate {
            capacity.get_or_insert_with(|| {
                r.capacity_pps
                    .iter()
                    .enumerate()
                    .map(|(w, c)| (at(w), *c))
                    .collect::<Vec<_>>()
            });
            (0..r.capacity_pps.len())
                .map(|w| (at(w), r.rates.iter().map(|f| f[w]).sum()))
                .collect()
        } else {
            (0..r.capacity_pps.len())
                .map(|w| (at(w), r.rtt_ratio_in(w).unwrap_or(f64::NAN)))
                .collect()
        };
        lines.push(Line {
            label: display_name(name),
            points,
            style,
        });
    }
    if let Some(points) = capacity {
        lines.insert(
            0,
            Line {
                label: "capacity".into(),
                points,
                style: reference_style(),
            },
        );
    }
    lines
}

/// The study's Figures 2-3: bandwidth steps and base-RTT steps per second (first seed), and
/// utilization and delay inflation against non-congestive loss.
fn micro_figure(
    study: &LeoStudy,
    names: &[&str],
    summaries: &[LeoSummary],
    series: &Series,
) -> Figure {
    let t = || Axis::linear("time (s)").range(0.0, study.micro_duration_s);
    let rate = || Axis::linear("delivered (packets/s)");
    let ratio = || Axis::linear("RTT / base RTT");
    let loss = || Axis::log("random loss rate");
    let panels = vec![
        Panel::new(
            "(a) bandwidth steps: delivery",
            t(),
            rate(),
            series_lines(names, series, LeoPart::BandwidthSteps, true),
        ),
        Panel::new(
            "(b) bandwidth steps: RTT",
            t(),
            ratio(),
            series_lines(names, series, LeoPart::BandwidthSteps, false),
        ),
        Panel::new(
            "(c) base-RTT steps: delivery",
            t(),
            rate(),
            series_lines(names, series, LeoPart::RttSteps, true),
        ),
        Panel::new(
            "(d) base-RTT steps: RTT",
            t(),
            ratio(),
            series_lines(names, series, LeoPart::RttSteps, false),
        ),
        Panel::new(
            "(e) non-congestive loss: goodput",
            loss(),
            Axis::linear("utilization").range(0.0, 1.05),
            summary_lines(names, summaries, LeoPart::RandomLoss, |m| {
                Some(m.utilization)
            }),
        ),
        Panel::new(
            "(f) non-congestive loss: delay",
            loss(),
            ratio(),
            summary_lines(names, summaries, LeoPart::RandomLoss, |m| m.delay_inflation),
        ),
    ];
    Figure {
        title: Some(format!(
            "Micro-benchmarks: {} pkt/s, {} ms, {} BDP; steps every {} s (bandwidth x0.5, \
             x0.25; base RTT x2, x3); loss: {} seeds",
            study.bandwidth_pps,
            1000.0 * study.rtt_s,
            study.buffer_bdp,
            study.micro_duration_s / 5.0,
            study.seeds.len()
        )),
        panels,
        columns: 3,
        panel_size: (500, 400),
        legend: legend(names, &[("capacity", reference_style())]),
    }
}

/// RTT fairness (Jain's index and the longer-RTT flow's share against the RTT ratio) and the
/// newcomer's share on the LEO paths.
fn fairness_figure(study: &LeoStudy, names: &[&str], summaries: &[LeoSummary]) -> Figure {
    let ratio = || Axis::linear("second flow's base RTT / first's");
    let (r0, r1) = x_span(&study.rtt_ratios);
    let (e0, e1) = x_span(&study.reconfiguration_every_s);
    let mut share = summary_lines(names, summaries, LeoPart::RttFairness, |m| {
        m.second_flow_share
    });
    share.push(level("equal share", 0.5, r0, r1));
    let mut newcomer = summary_lines(names, summaries, LeoPart::TwoFlows, |m| m.second_flow_share);
    newcomer.push(level("equal share", 0.5, e0, e1));
    let panels = vec![
        Panel::new(
            "(a) RTT fairness: Jain's index",
            ratio(),
            Axis::linear("Jain's index of mean goodputs").range(0.5, 1.01),
            summary_lines(names, summaries, LeoPart::RttFairness, |m| {
                Some(m.jain_index)
            }),
        ),
        Panel::new(
            "(b) RTT fairness: second flow's share",
            ratio(),
            Axis::linear("share of the goodput").range(0.0, 1.0),
            share,
        ),
        Panel::new(
            format!(
                "(c) LEO path: share of the flow started at {} s",
                study.second_flow_at_s
            ),
            Axis::linear("seconds between reconfigurations"),
            Axis::linear("share of the goodput").range(0.0, 1.0),
            newcomer,
        ),
    ];
    Figure {
        title: Some(format!(
            "Sharing: two flows on {} pkt/s, {} ms base RTT, {} BDP (second at {} s); \
             medians of {} seeds",
            study.bandwidth_pps,
            1000.0 * study.rtt_s,
            study.buffer_bdp,
            crate::leo_study::RTT_FAIRNESS_SECOND_START_S,
            study.seeds.len()
        )),
        panels,
        columns: 3,
        panel_size: (500, 420),
        legend: legend(names, &[("equal share", reference_style())]),
    }
}
