//! The time series of a real-path run (`mocc net run`): each flow's delivered rate and RTT
//! over the run, in half-second bins, with the link's capacity and propagation RTT over time.

use crate::timeline::PathTimeline;
use mocc_net::transport::FlowOutcome;
use mocc_plot::axes::Axis;
use mocc_plot::chart::{draw_figure, legend_of, Figure, Line, Panel, PlotError};
use mocc_plot::style::{display_name, policy_styles, Dash, LineStyle, REFERENCE};
use std::path::Path;

/// (time, value) points of a line.
pub type Series = Vec<(f64, f64)>;

/// Width of a time bin (s).
pub const BIN_S: f64 = 0.5;

/// One flow of the run: its name, when it started (s) and what it did.
pub struct RunFlow<'a> {
    /// Policy or scheme name.
    pub name: &'a str,
    /// Time 0 of its MIs within the run (s).
    pub start_s: f64,
    /// The flow.
    pub outcome: &'a FlowOutcome,
}

/// Packets acknowledged per second and the mean RTT (ms, weighted by samples) of each
/// [`BIN_S`] bin a flow was active in, at the bins' centres in run time. An MI's packets and
/// samples are spread over the bins it overlaps in proportion to the overlap, and only whole
/// bins are kept: a bin the flow's last MI ends inside would show a rate that was never sent.
pub fn binned(flow: &RunFlow<'_>) -> (Series, Series) {
    let bins = flow.outcome.mis.last().map_or(0, |r| {
        ((flow.start_s + r.mi.send_end_s) / BIN_S).floor() as usize
    });
    let mut acked = vec![0.0; bins];
    let mut rtt = vec![(0.0, 0.0); bins];
    for r in &flow.outcome.mis {
        let (from, to) = (
            flow.start_s + r.mi.send_start_s,
            flow.start_s + r.mi.send_end_s,
        );
        let packets = r.mi.bytes_acked / mocc_policy::BYTES_PER_PACKET;
        let samples = r.mi.rtt.count as f64;
        let first = (from / BIN_S).floor() as usize;
        for (k, bin) in acked.iter_mut().enumerate().skip(first) {
            let (lo, hi) = (k as f64 * BIN_S, (k + 1) as f64 * BIN_S);
            if lo >= to {
                break;
            }
            let share = if to > from {
                (hi.min(to) - lo.max(from)).max(0.0) / (to - from)
            } else {
                1.0
            };
            *bin += share * packets;
            rtt[k].0 += share * samples * r.mi.rtt.mean_s;
            rtt[k].1 += share * samples;
        }
    }
    let first = (flow.start_s / BIN_S).floor() as usize;
    let centre = |k: usize| (k as f64 + 0.5) * BIN_S;
    let rate = (first..bins)
        .map(|k| (centre(k), acked[k] / BIN_S))
        .collect();
    let rtt_ms = (first..bins)
        .filter(|&k| rtt[k].1 > 0.0)
        .map(|k| (centre(k), 1e3 * rtt[k].0 / rtt[k].1))
        .collect();
    (rate, rtt_ms)
}

/// Draws the run's time series to `out`, under `title`, with the path's capacity and
/// propagation RTT over the run as references.
pub fn flows_figure(
    out: &Path,
    title: String,
    path: &PathTimeline,
    flows: &[RunFlow<'_>],
) -> Result<(), PlotError> {
    let names: Vec<&str> = flows.iter().map(|f| f.name).collect();
    let styles = policy_styles(&names);
    let end = flows
        .iter()
        .filter_map(|f| f.outcome.mis.last().map(|r| f.start_s + r.mi.send_end_s))
        .fold(BIN_S, f64::max);
    let steps = path.steps(end);
    let reference = |value: fn(&(f64, f64, f64)) -> f64| Line {
        label: "link capacity / propagation RTT".into(),
        points: step_points(&steps, end, value),
        style: LineStyle::solid(REFERENCE)
            .with_dash(Dash::Dotted)
            .with_width(1),
    };
    let top = steps.iter().map(|s| s.1).fold(0.0, f64::max);
    let mut rates = vec![reference(|s| s.1)];
    let mut rtts = vec![reference(|s| 1e3 * s.2)];
    for (k, (f, style)) in flows.iter().zip(&styles).enumerate() {
        let (rate, rtt) = binned(f);
        let label = format!("flow {k}: {}", display_name(f.name));
        rates.push(Line {
            label: label.clone(),
            points: rate,
            style: *style,
        });
        rtts.push(Line {
            label,
            points: rtt,
            style: *style,
        });
    }
    let legend = legend_of(&rates);
    let time = || Axis::linear("time (s)").range(0.0, end);
    draw_figure(
        out,
        &Figure {
            title: Some(title),
            panels: vec![
                Panel::new(
                    "Delivered rate (0.5 s bins)",
                    time(),
                    Axis::linear("packets acknowledged per second").range(0.0, 1.15 * top.max(1.0)),
                    rates,
                ),
                Panel::new("RTT (0.5 s bins)", time(), Axis::linear("RTT (ms)"), rtts),
            ],
            columns: 1,
            panel_size: (900, 360),
            legend,
        },
    )
}

/// A step line through `steps` (time first) up to `end`: each value held until the next.
fn step_points(steps: &[(f64, f64, f64)], end: f64, value: fn(&(f64, f64, f64)) -> f64) -> Series {
    let mut points = Vec::with_capacity(2 * steps.len());
    for (k, s) in steps.iter().enumerate() {
        let until = steps.get(k + 1).map_or(end, |n| n.0);
        points.push((s.0, value(s)));
        points.push((until, value(s)));
    }
    points
}

/// The title of a run on a fixed path.
pub fn fixed_path_title(path: &mocc_net::PathSpec) -> String {
    format!(
        "Real path: {} pkt/s, {} ms one way, {}-packet queue, {}% loss",
        path.bandwidth_pps,
        1e3 * path.delay_s,
        path.queue_pkts,
        100.0 * path.loss
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use mocc_net::transport::MiRecord;
    use mocc_policy::{MonitorInterval, RttSummary, BYTES_PER_PACKET};

    fn mi(start: f64, end: f64, acked: f64, rtt: f64) -> MiRecord {
        MiRecord {
            rate_pps: 100.0,
            mi: MonitorInterval {
                bytes_acked: acked * BYTES_PER_PACKET,
                send_start_s: start,
                send_end_s: end,
                recv_start_s: start,
                recv_end_s: end,
                rtt: RttSummary::from_samples(&vec![rtt; acked as usize]),
                ..MonitorInterval::default()
            },
        }
    }

    #[test]
    fn bins_count_packets_per_second_in_run_time() {
        let outcome = FlowOutcome {
            mis: vec![
                mi(0.0, 0.2, 10.0, 0.04),
                mi(0.2, 0.4, 20.0, 0.06),
                mi(0.4, 0.6, 5.0, 0.05),
            ],
            ..FlowOutcome::default()
        };
        // Started 1 s into the run: its MIs span 1.0-1.2, 1.2-1.4 and 1.4-1.6 s; the bin from
        // 1.5 s is not whole and is left out.
        let (rate, rtt) = binned(&RunFlow {
            name: "const:100",
            start_s: 1.0,
            outcome: &outcome,
        });
        // Bin [1.0, 1.5): 10 + 20 packets and half of the last MI's 5.
        assert_eq!(rate.len(), 1);
        assert_eq!(rate[0].0, 1.25);
        assert!((rate[0].1 - 32.5 / BIN_S).abs() < 1e-9, "{rate:?}");
        assert_eq!(rtt.len(), 1);
        let expected = (10.0 * 0.04 + 20.0 * 0.06 + 2.5 * 0.05) / 32.5;
        assert!((rtt[0].1 - 1e3 * expected).abs() < 1e-9, "{rtt:?}");
    }

    #[test]
    fn a_step_line_holds_each_value_until_the_next_change() {
        let steps = [(0.0, 800.0, 0.04), (5.0, 400.0, 0.06)];
        assert_eq!(
            step_points(&steps, 8.0, |s| s.1),
            vec![(0.0, 800.0), (5.0, 800.0), (5.0, 400.0), (8.0, 400.0)]
        );
    }
}
