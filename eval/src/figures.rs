//! The evaluation figures `mocc eval` draws from its rows: the paper's Figure 5 (utilization and
//! RTT ratio against bandwidth, RTT, random loss and buffer size) and Figure 7 (the CDF of the
//! normalized reward over networks x objectives).

use crate::results::EvalRow;
use crate::suite::{SuiteNetwork, SweepParam, SweepSpec};
use mocc_plot::axes::{shared_range, Axis, Scale};
use mocc_plot::chart::{draw_figure, Figure, Legend, Line, Panel, PlotError};
use mocc_plot::style::{display_name, is_classic, policy_styles, MAX_LINES_PER_PANEL};
use std::path::Path;

/// A metric of an evaluation row.
type Metric = fn(&EvalRow) -> f64;

/// A sweep's x axis: logarithmic for the parameters swept over decades.
fn sweep_axis(param: SweepParam) -> Axis {
    match param {
        SweepParam::Loss => Axis::linear(param.label()),
        _ => Axis::log(format!("{} (log scale)", param.label())),
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
                panels.push(Panel::new(title, sweep_axis(param), y, panel_lines));
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
pub(crate) fn policy_lines(
    policies: &[&str],
    points: Vec<Vec<(f64, f64)>>,
) -> (PanelLines, Legend) {
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
    let legend = mocc_plot::chart::legend_of(&lines);
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

    fn row(policy: &str, network: &str, w: [f64; 3], util: f64, ratio: f64) -> EvalRow {
        EvalRow {
            policy: policy.into(),
            network: network.into(),
            w_thr: w[0],
            w_lat: w[1],
            w_loss: w[2],
            seed: 0,
            metrics: crate::results::RunMetrics {
                utilization: util,
                rtt_ratio: ratio,
                mocc_reward: util,
                ..Default::default()
            },
        }
    }

    #[test]
    fn sweep_panels_split_learned_and_classic_when_lines_do_not_fit() {
        let base = crate::suite::tests::base_network();
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
            for p in mocc_plot::testing::TEST_SCHEMES {
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
                p.lines.len() <= mocc_plot::style::MAX_LINES_PER_PANEL,
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
        assert_eq!(
            (a.dash, b.dash),
            (
                mocc_plot::style::Dash::Solid,
                mocc_plot::style::Dash::Dashed
            )
        );
        // Without the split the figure has one panel per metric.
        let (panels, columns, _) = sweep_panels(&spec, &rows, &[]);
        assert_eq!((panels.len(), columns), (2 * 2, 2));
        assert_eq!(panels[0].lines.len(), 7);
    }
}
