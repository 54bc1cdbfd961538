//! `mocc bench quic`: how closely s2n-quic paces at the learned controller's rate, and what
//! the sender costs, on the emulated path at a given link rate. The export starts at the
//! link's rate, so every MI runs near it; a download of `seconds` at that rate is made and
//! every closed MI logged: the rate each MI was sent at over the policy's rate for it, the
//! delivered rate, and the sender thread's CPU time per 1500 bytes sent and as a share of a
//! core.

use crate::app::bulk::Bulk;
use crate::app::{self, App, AppTransport};
use crate::path::{mi_metrics, FlowSpan};
use crate::run::{net_error, RunError, RunPath};
use crate::timeline::PathTimeline;
use mocc_eval::results::RunMetrics;
use mocc_policy::MetricsVersion;
use mocc_policy::BYTES_PER_PACKET;
use mocc_quic::transfer::QuicCc;
use mocc_quic::{LearnedEndpoint, MiLog};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

/// One link rate's measurement.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PacingRow {
    /// The link's rate (Mbit/s).
    pub link_mbit: f64,
    /// MIs closed.
    pub mis: usize,
    /// The rate each MI was sent at over the policy's rate for it: 10th percentile.
    pub ratio_p10: f64,
    /// Median.
    pub ratio_median: f64,
    /// 90th percentile.
    pub ratio_p90: f64,
    /// Median of the policy's rates (Mbit/s).
    pub policy_mbit: f64,
    /// Bytes over the download's time (Mbit/s).
    pub goodput_mbit: f64,
    /// Packets acknowledged over what the link could carry, from the first MI to the last
    /// (as `mocc net run` and `mocc eval` measure it).
    pub utilization: f64,
    /// Mean over MIs of their RTT over the base RTT (as `mocc net run` measures it).
    pub rtt_ratio: f64,
    /// Sender thread CPU per 1500 bytes sent (us).
    pub cpu_us_per_packet: f64,
    /// Sender thread CPU over the download's time: the share of one core.
    pub core_share: f64,
}

/// The emulated link of rate `mbit`: 10 ms one way, a queue of two bandwidth-delay products
/// (at least 20 packets).
pub fn bench_link(mbit: f64) -> String {
    let pps = mbit * 1e6 / (8.0 * BYTES_PER_PACKET);
    let queue = (2.0 * pps * 0.04).max(20.0).round();
    format!("bw_pps={pps:.1},delay_s=0.01,queue_pkts={queue}")
}

/// Measures the export in `dir` over QUIC on a link of `mbit` for about `seconds`.
pub fn bench_pacing(dir: &Path, mbit: f64, seconds: f64) -> Result<PacingRow, RunError> {
    let path = RunPath::link(&bench_link(mbit))?;
    let link = path.timeline.initial();
    let log: MiLog = Arc::new(Mutex::new(Vec::new()));
    let endpoint = LearnedEndpoint::load(dir, app::BULK_OBJECTIVE, link.bandwidth_pps)
        .map_err(|e| RunError::Invalid(format!("{}: {e}", dir.display())))?
        .with_log(log.clone());
    let bytes = (mbit * 1e6 / 8.0 * seconds) as usize;
    let download = App::Bulk(Bulk { bytes });
    let topology =
        mocc_net::Topology::create(&link).map_err(net_error("cannot build the emulated path"))?;
    let measured = app::run_app(
        &topology,
        &AppTransport::Quic(QuicCc::Learned(endpoint)),
        &download,
        &path.timeline,
    );
    topology
        .close()
        .map_err(net_error("cannot remove the emulated path"))?;
    let measured = measured?;
    let app::AppRun::Bulk(run) = measured.run else {
        return Err(RunError::Invalid(
            "the download measured no bulk run".into(),
        ));
    };
    let mis = log.lock().unwrap_or_else(PoisonError::into_inner).clone();
    let mut ratios = mocc_quic::sent_over_policy(&mis);
    ratios.sort_by(f64::total_cmp);
    let at = |q: f64| crate::app::rtc::percentile(&ratios, q);
    let policy_pps: Vec<f64> = mis.iter().map(|m| m.rate_pps).collect();
    let packets = mis.iter().map(|m| m.mi.bytes_sent).sum::<f64>() / BYTES_PER_PACKET;
    let metrics = quic_metrics(&mis, &path.timeline);
    Ok(PacingRow {
        link_mbit: mbit,
        mis: mis.len(),
        ratio_p10: at(0.1),
        ratio_median: at(0.5),
        ratio_p90: at(0.9),
        policy_mbit: mocc_eval::results::median(policy_pps) * BYTES_PER_PACKET * 8.0 / 1e6,
        goodput_mbit: run.goodput_mbit(),
        utilization: metrics.utilization,
        rtt_ratio: metrics.rtt_ratio,
        cpu_us_per_packet: measured.sender_cpu_s / packets.max(1.0) * 1e6,
        core_share: measured.sender_cpu_s / run.completion_s,
    })
}

/// The evaluation's metrics of a QUIC connection's MIs, over the span they cover.
fn quic_metrics(mis: &[mocc_policy::ClosedMi], timeline: &PathTimeline) -> RunMetrics {
    let first = mis.first().map_or(0.0, |m| m.mi.send_start_s);
    let last = mis.last().map_or(0.0, |m| m.mi.send_end_s);
    let span = FlowSpan {
        origin_s: 0.0,
        started_s: first,
        duration_s: last - first,
        acked_pkts: mis.iter().map(|m| m.mi.bytes_acked).sum::<f64>() / BYTES_PER_PACKET,
    };
    mi_metrics(
        mis.iter().map(|m| (&m.mi, m.rate_pps)),
        &span,
        timeline,
        MetricsVersion::default(),
        app::BULK_OBJECTIVE,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_links_hold_two_bandwidth_delay_products() {
        // 10 Mbit/s: 833.3 packets/s; 40 ms round trip, twice: 66.7 packets.
        assert_eq!(bench_link(10.0), "bw_pps=833.3,delay_s=0.01,queue_pkts=67");
        assert_eq!(bench_link(2.0), "bw_pps=166.7,delay_s=0.01,queue_pkts=20");
        for mbit in [2.0, 10.0, 50.0] {
            RunPath::link(&bench_link(mbit)).unwrap();
        }
    }
}
