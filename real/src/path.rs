//! Flows measured on a real path (`mocc-net`) in the evaluation's terms: each MI the sender
//! formed becomes the same per-MI statistics and rewards the simulator's MIs give, so a real
//! run's row sits beside `mocc eval`'s.

use crate::timeline::PathTimeline;
use mocc_eval::results::{RunMetrics, RunSums};
use mocc_gym::{MiOutcome, StepInfo};
use mocc_net::transport::{ConstantRate, FlowOutcome, PolicyDriver, RateDriver};
use mocc_policy::{Controller, MetricsVersion, MonitorInterval, Policy};
use std::path::Path;
use std::sync::Arc;

/// The rate rule of a real flow of `scheme`: `const:RATE`, or an export folder whose
/// controller acts under `objective` (default: the policy's) from `start_rate_pps`.
pub fn rate_driver(
    scheme: &str,
    objective: Option<[f64; 3]>,
    start_rate_pps: f64,
) -> Result<Box<dyn RateDriver>, String> {
    if let Some(rate) = scheme.strip_prefix("const:") {
        let rate: f64 = rate
            .parse()
            .map_err(|_| format!("{scheme}: not a number: {rate:?}"))?;
        mocc_gym::limits::check_rate(rate).map_err(|m| format!("{scheme}: {m}"))?;
        return Ok(Box::new(ConstantRate::new(rate)));
    }
    let policy = Policy::load(Path::new(scheme)).map_err(|e| {
        format!(
            "{scheme}: not const:RATE and not an export folder (make one with `mocc export`): {e}"
        )
    })?;
    let objective = objective.unwrap_or(policy.spec().default_objective);
    let controller =
        Controller::new(Arc::new(policy), objective).map_err(|e| format!("{scheme}: {e}"))?;
    Ok(Box::new(PolicyDriver::new(controller, start_rate_pps)))
}

/// The metrics of one flow on `path`, rewards under `objective` with throughput as `metrics`
/// defines it. `run_start_ns` is time 0 of the path's timeline (`mocc_net::timing::
/// monotonic_ns`). Utilization and throughput are the flow's acknowledged packets over its
/// time, handshake included (against what the path could carry then); RTT, RTT ratio, loss and
/// rewards are means over its MIs, each MI against the capacity over it and the base RTT in
/// force when it ends, as `mocc eval` computes them.
pub fn flow_metrics(
    flow: &FlowOutcome,
    path: &PathTimeline,
    run_start_ns: u64,
    metrics: MetricsVersion,
    objective: [f64; 3],
) -> RunMetrics {
    let span = FlowSpan {
        origin_s: seconds_between(run_start_ns, flow.origin_ns),
        started_s: seconds_between(run_start_ns, flow.started_ns),
        duration_s: flow.duration_s,
        acked_pkts: flow.acked as f64,
    };
    mi_metrics(
        flow.mis.iter().map(|r| (&r.mi, r.rate_pps)),
        &span,
        path,
        metrics,
        objective,
    )
}

/// Where a flow's MIs sit in a run, and what it delivered.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlowSpan {
    /// Time 0 of the MIs' clock, in run time (s).
    pub origin_s: f64,
    /// When the flow started, in run time (s).
    pub started_s: f64,
    /// How long it ran (s).
    pub duration_s: f64,
    /// Packets (1500 bytes) it got acknowledged.
    pub acked_pkts: f64,
}

/// The evaluation's metrics of a flow's MIs (each with the rate it was sent at), as
/// [`flow_metrics`] defines them, for any sender that logs MIs (the UDP transport, a QUIC
/// connection's learned controller).
pub fn mi_metrics<'a>(
    mis: impl Iterator<Item = (&'a MonitorInterval, f64)>,
    span: &FlowSpan,
    path: &PathTimeline,
    metrics: MetricsVersion,
    objective: [f64; 3],
) -> RunMetrics {
    let mut sums = RunSums::default();
    for (mi, rate_pps) in mis {
        let (t0, t1) = (
            span.origin_s + mi.send_start_s,
            span.origin_s + mi.send_end_s,
        );
        let outcome = MiOutcome::of_mi(mi, metrics, path.capacity_pps(t0, t1), path.base_rtt_s(t1));
        sums.add(&StepInfo::new(mi, &outcome, rate_pps, 0.0), &objective);
    }
    let end_s = span.started_s + span.duration_s;
    sums.set_totals(
        span.acked_pkts,
        path.capacity_pkts(span.started_s, end_s),
        span.duration_s,
    );
    sums.metrics()
}

/// Seconds from monotonic time `from_ns` to `to_ns` (negative when `to_ns` is earlier).
pub fn seconds_between(from_ns: u64, to_ns: u64) -> f64 {
    (to_ns as f64 - from_ns as f64) * 1e-9
}

#[cfg(test)]
mod tests {
    use super::*;
    use mocc_net::transport::MiRecord;
    use mocc_net::PathSpec;
    use mocc_policy::{MonitorInterval, RttSummary, BYTES_PER_PACKET};

    fn mi(start: f64, acked: f64, lost: f64, rtt: f64) -> MiRecord {
        MiRecord {
            rate_pps: 100.0,
            mi: MonitorInterval {
                bytes_sent: (acked + lost) * BYTES_PER_PACKET,
                bytes_acked: acked * BYTES_PER_PACKET,
                bytes_lost: lost * BYTES_PER_PACKET,
                send_start_s: start,
                send_end_s: start + 0.1,
                recv_start_s: start,
                recv_end_s: start + 0.1,
                rtt: RttSummary::from_samples(&[rtt]),
                ack_span: None,
                train_pps: None,
            },
        }
    }

    #[test]
    fn hand_computed_metrics_of_two_mis() {
        let path = PathSpec {
            bandwidth_pps: 200.0,
            delay_s: 0.02,
            queue_pkts: 10,
            loss: 0.0,
        };
        let flow = FlowOutcome {
            sent: 20,
            acked: 18,
            lost: 2,
            duration_s: 0.2,
            mis: vec![mi(0.0, 10.0, 0.0, 0.04), mi(0.1, 8.0, 2.0, 0.06)],
            ..FlowOutcome::default()
        };
        let timeline = PathTimeline::fixed(&path);
        let m = flow_metrics(
            &flow,
            &timeline,
            0,
            MetricsVersion::default(),
            [0.4, 0.3, 0.3],
        );
        // 18 packets in 0.2 s on a 200 pkt/s link.
        assert!((m.thr_pps - 90.0).abs() < 1e-9);
        assert!((m.utilization - 0.45).abs() < 1e-9);
        // Per-MI means: RTT (0.04 + 0.06) / 2, ratio against 40 ms, loss (0 + 0.2) / 2.
        assert!((m.mean_rtt_s - 0.05).abs() < 1e-12);
        assert!((m.rtt_ratio - 1.25).abs() < 1e-12);
        assert!((m.loss - 0.1).abs() < 1e-12);
    }

    #[test]
    fn a_flow_on_a_changing_path_is_measured_against_the_path_of_its_time() {
        // The link halves to 100 pkt/s and its delay doubles at 1.1 s of the run; the flow
        // started at 1.0 s (its MIs count from there): its second MI, [1.1, 1.2], meets the
        // new path.
        let scenario = mocc_gym::Scenario::from_yaml_str(
            "link:\n  bandwidth_pps: 200\n  delay_s: 0.02\n  queue_pkts: 10\n  loss: 0\n  \
             schedule:\n    - {time_s: 1.1, bandwidth_pps: 100, delay_s: 0.04}\n",
            std::path::Path::new("step.yaml"),
        )
        .unwrap();
        let timeline = PathTimeline::from_link_config(&scenario.config().link).unwrap();
        let second = 1_000_000_000;
        let flow = FlowOutcome {
            sent: 20,
            acked: 18,
            lost: 2,
            duration_s: 0.2,
            started_ns: second,
            origin_ns: second,
            mis: vec![mi(0.0, 10.0, 0.0, 0.04), mi(0.1, 8.0, 2.0, 0.08)],
            ..FlowOutcome::default()
        };
        let m = flow_metrics(
            &flow,
            &timeline,
            0,
            MetricsVersion::default(),
            [0.4, 0.3, 0.3],
        );
        // 18 packets where the path could carry 200 x 0.1 + 100 x 0.1 = 30.
        assert!((m.utilization - 0.6).abs() < 1e-9, "{}", m.utilization);
        // Each MI against the base RTT in force when it ends: the first ends at 1.1 s, when
        // the 80 ms path has begun, so its ratio is 0.04 / 0.08; the second's 0.08 / 0.08.
        assert!((m.rtt_ratio - 0.75).abs() < 1e-12, "{}", m.rtt_ratio);
        assert_eq!(seconds_between(second, 0), -1.0);
    }
}
