//! Unit tests of [`LatencyBaseline`](super::LatencyBaseline) in each mode.

use super::{BaselineKind, CapacityTrains, LatencyBaseline};
use crate::mi::MetricsVersion;
use crate::mi::NO_BASELINE_LATENCY_S;
use crate::mi::{test_interval as mi, MonitorInterval, BYTES_PER_PACKET};

const A: MetricsVersion = MetricsVersion::Aurora;
const D: MetricsVersion = MetricsVersion::Delivered;

#[test]
fn connection_min_ignores_empty_intervals() {
    let mut b = LatencyBaseline::new(BaselineKind::ConnectionMin, D);
    assert_eq!(b.current(), NO_BASELINE_LATENCY_S);
    assert_eq!(
        LatencyBaseline::new(BaselineKind::ConnectionMin, A).current(),
        0.0
    );
    assert_eq!(b.observe(&mi(0.0, 1.0, 1.0, 1.0, &[0.3])).baseline_s, 0.3);
    assert_eq!(b.observe(&mi(1.0, 2.0, 1.0, 0.0, &[])).baseline_s, 0.3);
    assert_eq!(b.observe(&mi(2.0, 3.0, 1.0, 1.0, &[0.2])).baseline_s, 0.2);
    assert_eq!(b.observe(&mi(3.0, 4.0, 1.0, 1.0, &[0.5])).baseline_s, 0.2);
}

#[test]
fn windowed_min_forgets_old_minimum() {
    let mut b = LatencyBaseline::new(BaselineKind::WindowedMin { seconds: 2.0 }, A);
    assert_eq!(b.observe(&mi(0.0, 1.0, 1.0, 1.0, &[0.1])).baseline_s, 0.1);
    assert_eq!(b.observe(&mi(1.0, 2.0, 1.0, 1.0, &[0.4])).baseline_s, 0.1);
    // At t = 3.5 the sample from t = 1 is older than 2 s.
    assert_eq!(b.observe(&mi(2.0, 3.5, 1.0, 1.0, &[0.5])).baseline_s, 0.4);
    // A gap with no samples keeps the newest one.
    assert_eq!(b.observe(&mi(3.5, 10.0, 1.0, 0.0, &[])).baseline_s, 0.5);
}

/// A restart (a probe's baseline) waits out MIs without RTT samples, in every mode: the
/// baseline stands until an MI with samples sets it, higher or lower.
#[test]
fn a_restart_waits_for_an_mi_with_rtt_samples() {
    let modes = [
        BaselineKind::ConnectionMin,
        BaselineKind::WindowedMin { seconds: 10.0 },
        BaselineKind::DrainAware {
            seconds: 10.0,
            drain_fraction: 0.5,
        },
    ];
    for mode in modes {
        let mut b = LatencyBaseline::new(mode, D);
        b.observe(&mi(0.0, 1.0, 10.0, 10.0, &[0.04]));
        b.restart();
        assert_eq!(b.current(), 0.04, "{mode:?}: until an MI");
        b.observe(&mi(1.0, 2.0, 10.0, 0.0, &[]));
        assert_eq!(b.current(), 0.04, "{mode:?}: after an MI without samples");
        b.observe(&mi(2.0, 3.0, 10.0, 10.0, &[0.09]));
        assert_eq!(
            b.current(),
            0.09,
            "{mode:?}: set by the next MI with samples"
        );
        b.observe(&mi(3.0, 4.0, 10.0, 10.0, &[0.1]));
        assert_eq!(b.current(), 0.09, "{mode:?}: once");
    }
}

/// The recent minimum spans the last 5 s in every mode, whatever the baseline does.
#[test]
fn the_recent_minimum_spans_the_last_five_seconds_whatever_the_baseline_does() {
    let mut untracked = drain_aware(3600.0);
    let mut b = drain_aware(3600.0).tracking_recent();
    assert_eq!(b.estimate().recent_min_latency_s, 0.0, "before any sample");
    untracked.observe(&mi(0.0, 1.0, 100.0, 100.0, &[0.04]));
    assert_eq!(
        untracked.estimate().recent_min_latency_s,
        0.0,
        "not tracked"
    );
    // 40 ms at 1 s, then a queue of 60 ms more from 2 s on: the baseline keeps 40 ms, and
    // so does the recent minimum until the 40 ms sample is over 5 s old.
    b.observe(&mi(0.0, 1.0, 100.0, 100.0, &[0.04]));
    for k in 1..=5 {
        let at = f64::from(k);
        let e = b.observe(&mi(at, at + 1.0, 100.0, 100.0, &[0.1]));
        assert_eq!((e.baseline_s, e.recent_min_latency_s), (0.04, 0.04), "{k}");
    }
    // At 6.5 s the 40 ms sample (1 s) is 5.5 s old: 100 ms is the recent minimum.
    let e = b.observe(&mi(6.0, 6.5, 100.0, 100.0, &[0.1]));
    assert_eq!((e.baseline_s, e.recent_min_latency_s), (0.04, 0.1));
    // A restart moves the baseline, not the recent minimum; an MI without samples keeps
    // the newest sample; a reset forgets it.
    b.restart();
    let e = b.observe(&mi(6.5, 7.0, 100.0, 100.0, &[0.12]));
    assert_eq!((e.baseline_s, e.recent_min_latency_s), (0.12, 0.1));
    let e = b.observe(&mi(7.0, 20.0, 100.0, 0.0, &[]));
    assert_eq!(e.recent_min_latency_s, 0.12);
    // The connection's lowest stays 40 ms through the restart and the gap; a reset forgets
    // it too, and an untracked baseline never had it.
    assert_eq!(e.lowest_latency_s, 0.04);
    assert_eq!(untracked.estimate().lowest_latency_s, 0.0);
    b.reset();
    assert_eq!(b.estimate().recent_min_latency_s, 0.0);
    assert_eq!(b.estimate().lowest_latency_s, 0.0);
    let e = b.observe(&mi(0.0, 1.0, 100.0, 100.0, &[0.07]));
    assert_eq!((e.recent_min_latency_s, e.lowest_latency_s), (0.07, 0.07));
    let e = b.observe(&mi(1.0, 2.0, 100.0, 100.0, &[0.05]));
    assert_eq!(e.lowest_latency_s, 0.05);
    // In connection_min mode too.
    let mut c = LatencyBaseline::new(BaselineKind::ConnectionMin, D).tracking_recent();
    c.observe(&mi(0.0, 1.0, 10.0, 10.0, &[0.04]));
    let e = c.observe(&mi(1.0, 6.5, 10.0, 10.0, &[0.08]));
    assert_eq!((e.baseline_s, e.recent_min_latency_s), (0.04, 0.08));
}

fn drain_aware(seconds: f64) -> LatencyBaseline {
    LatencyBaseline::new(
        BaselineKind::DrainAware {
            seconds,
            drain_fraction: 0.5,
        },
        D,
    )
}

/// The baseline after feeding `mis` in order.
fn fed(b: &mut LatencyBaseline, mis: &[MonitorInterval]) -> f64 {
    mis.iter().map(|m| b.observe(m).baseline_s).last().unwrap()
}

#[test]
fn drained_mi_restarts_the_window_at_a_higher_base_rtt() {
    let mut b = drain_aware(10.0);
    // 1 s MIs at 100 pkt/s over a 40 ms path: delivery 100 pkt/s, baseline 40 ms.
    assert_eq!(fed(&mut b, &[mi(0.0, 1.0, 100.0, 100.0, &[0.04; 8])]), 0.04);
    assert_eq!(b.peak_delivery_pps(), 100.0);
    // The base RTT steps to 60 ms. At full rate a plain windowed min keeps 40 ms.
    assert_eq!(fed(&mut b, &[mi(1.0, 2.0, 100.0, 100.0, &[0.06; 8])]), 0.04);
    // 60 pkt/s is above half of 100: not drained, still 40 ms.
    assert_eq!(fed(&mut b, &[mi(2.0, 3.0, 60.0, 60.0, &[0.06; 8])]), 0.04);
    // 50 pkt/s at a flat 60 ms: drained, the 40 ms path is gone.
    assert_eq!(fed(&mut b, &[mi(3.0, 4.0, 50.0, 50.0, &[0.06; 8])]), 0.06);
    // Lower samples afterwards lower it as a windowed min does.
    assert_eq!(fed(&mut b, &[mi(4.0, 5.0, 50.0, 50.0, &[0.055; 8])]), 0.055);
    assert_eq!(
        fed(&mut b, &[mi(5.0, 6.0, 100.0, 100.0, &[0.07; 8])]),
        0.055
    );
}

/// A drain-aware baseline at 40 ms that saw 100 pkt/s delivered, then one MI at 20 pkt/s
/// with mean latency `previous`.
fn after_back_off(previous: f64) -> LatencyBaseline {
    let mut b = drain_aware(10.0);
    b.observe(&mi(0.0, 1.0, 100.0, 100.0, &[0.04; 8]));
    b.observe(&mi(1.0, 1.1, 2.0, 2.0, &[previous; 4]));
    b
}

#[test]
fn each_drain_check_alone_keeps_a_queue_from_passing() {
    // Falling within the MI (200 -> 100 ms) though its mean equals the MI before: draining.
    let mut b = after_back_off(0.15);
    let falling = [0.2, 0.2, 0.1, 0.1];
    assert_eq!(fed(&mut b, &[mi(1.1, 1.2, 2.0, 2.0, &falling)]), 0.04);
    // Flat within the MI, 1 ms below the MI before (over 2 % of the 40 ms baseline, though
    // under 2 % of the queue-inflated 100 ms): a slow drain.
    let mut b = after_back_off(0.101);
    assert_eq!(fed(&mut b, &[mi(1.1, 1.2, 2.0, 2.0, &[0.1; 4])]), 0.04);
    // Flat, but 10 % lost: a sender overflowing a full queue.
    let mut b = after_back_off(0.1);
    let lossy = MonitorInterval {
        bytes_lost: 0.2 * BYTES_PER_PACKET,
        ..mi(1.1, 1.2, 2.0, 1.8, &[0.1; 4])
    };
    assert_eq!(fed(&mut b, &[lossy]), 0.04);
    // All flat and loss-free: drained.
    let mut b = after_back_off(0.1);
    assert_eq!(fed(&mut b, &[mi(1.1, 1.2, 2.0, 2.0, &[0.1; 4])]), 0.1);
}

#[test]
fn a_drained_mi_restarts_the_window_only_when_it_may() {
    // The drained MI of the test above, held back: the baseline stays at 40 ms, and the
    // same back-off restarts at its next drained MI once restarts are allowed.
    let mut b = after_back_off(0.1);
    let drained = mi(1.1, 1.2, 2.0, 2.0, &[0.1; 4]);
    assert_eq!(b.observe_with(&drained, false).baseline_s, 0.04);
    let next = mi(1.2, 1.3, 2.0, 2.0, &[0.1; 4]);
    assert_eq!(b.observe_with(&next, true).baseline_s, 0.1);
    // Lower samples still lower it when restarts are held back.
    let lower = mi(1.3, 1.4, 2.0, 2.0, &[0.09; 4]);
    assert_eq!(b.observe_with(&lower, false).baseline_s, 0.09);
}

#[test]
fn an_rtt_creeping_up_is_not_followed_mi_by_mi() {
    // Drained at 60 ms, then the RTT rises 0.6 ms per MI (under the 1.2 ms tolerance of the
    // 60 ms baseline each time) while the sender stays low: one restart per back-off, so
    // the baseline stays at 60 ms and latency ratio sees the rise.
    let mut b = drain_aware(10.0);
    b.observe(&mi(0.0, 1.0, 100.0, 100.0, &[0.04; 8]));
    b.observe(&mi(1.0, 1.1, 2.0, 2.0, &[0.06; 4]));
    assert_eq!(fed(&mut b, &[mi(1.1, 1.2, 2.0, 2.0, &[0.06; 4])]), 0.06);
    let creeping: Vec<_> = (1..=20)
        .map(|k| {
            let t = 1.2 + 0.1 * f64::from(k);
            mi(t - 0.1, t, 2.0, 2.0, &[0.06 + 0.0006 * f64::from(k); 4])
        })
        .collect();
    assert_eq!(fed(&mut b, &creeping), 0.06);
    // Back above half the peak; a later back-off drains afresh.
    b.observe(&mi(3.2, 3.3, 8.0, 8.0, &[0.08; 4]));
    b.observe(&mi(3.3, 3.4, 2.0, 2.0, &[0.08; 4]));
    assert_eq!(fed(&mut b, &[mi(3.4, 3.5, 2.0, 2.0, &[0.08; 4])]), 0.08);
}

#[test]
fn a_capacity_drop_with_the_sender_near_the_new_capacity_keeps_the_queue_visible() {
    // 800 pkt/s on a 40 ms path, then capacity 400 pkt/s: the sender at 380 pkt/s (under
    // half the 800 pkt/s peak) drains a 100 ms queue at 20 pkt/s, 2.5 ms per 50 ms MI.
    let mut b = drain_aware(5.0);
    b.observe(&mi(0.0, 1.0, 800.0, 800.0, &[0.04; 8]));
    for k in 0..40 {
        let t = 1.0 + 0.05 * f64::from(k);
        let queue_s = 0.1 - 0.0025 * f64::from(k);
        let rtts = [0.04 + queue_s + 0.00125, 0.04 + queue_s - 0.00125];
        let baseline = fed(&mut b, &[mi(t, t + 0.05, 19.0, 20.0, &rtts)]);
        assert_eq!(baseline, 0.04, "queue {queue_s}");
    }
}

#[test]
fn delivery_maximum_leaves_the_window() {
    let mut b = drain_aware(2.0);
    b.observe(&mi(0.0, 1.0, 100.0, 100.0, &[0.04; 4]));
    b.observe(&mi(1.0, 2.0, 30.0, 30.0, &[0.05, 0.05, 0.06, 0.06]));
    b.observe(&mi(2.0, 3.0, 40.0, 40.0, &[0.05, 0.05, 0.06, 0.06]));
    assert_eq!(b.peak_delivery_pps(), 100.0);
    // At t = 3.5 the 100 pkt/s MI (t = 1) is older than 2 s; 40 beats 30.
    b.observe(&mi(3.0, 3.5, 10.0, 10.0, &[0.05, 0.05, 0.06, 0.06]));
    assert_eq!(b.peak_delivery_pps(), 40.0);
    b.reset();
    assert_eq!(b.peak_delivery_pps(), 0.0);
    assert_eq!(b.current(), NO_BASELINE_LATENCY_S);
}

#[test]
fn every_mode_keeps_the_peak_delivery_of_its_window() {
    let mis = [
        mi(0.0, 1.0, 100.0, 100.0, &[0.04; 4]),
        mi(1.0, 2.0, 30.0, 30.0, &[0.04; 4]),
        mi(2.0, 3.0, 20.0, 20.0, &[0.04; 4]),
    ];
    let modes = [
        (BaselineKind::ConnectionMin, 100.0),
        (BaselineKind::WindowedMin { seconds: 1.5 }, 30.0),
        (
            BaselineKind::DrainAware {
                seconds: 10.0,
                drain_fraction: 0.5,
            },
            100.0,
        ),
    ];
    for (mode, peak) in modes {
        let mut b = LatencyBaseline::new(mode, A);
        for m in &mis {
            b.observe(m);
        }
        let e = b.estimate();
        assert_eq!(e.peak_delivery_pps, peak, "{mode:?}");
        assert_eq!(e.baseline_s, 0.04, "{mode:?}");
    }
}

#[test]
fn the_ratio_exponent_counts_once_the_trains_measured_a_rate() {
    let trains = CapacityTrains {
        packets: 3,
        fraction: 0.95,
        window_s: 2.0,
        ratio_exponent: 0.5,
    };
    let mut b = LatencyBaseline::new(BaselineKind::ConnectionMin, A).with_capacity(Some(trains));
    // No train yet (or a transport that sends none): the flow's own peak, read as measured.
    let e = b.observe(&mi(0.0, 1.0, 100.0, 100.0, &[0.04; 4]));
    assert_eq!((e.peak_delivery_pps, e.peak_ratio_exponent), (100.0, 1.0));
    // A train measured 1,000 pkt/s: the peak is at least 950, read on the exponent.
    let with_train = MonitorInterval {
        train_pps: Some(1000.0),
        ..mi(1.0, 2.0, 100.0, 100.0, &[0.04; 4])
    };
    let e = b.observe(&with_train);
    assert_eq!((e.peak_delivery_pps, e.peak_ratio_exponent), (950.0, 0.5));
    // Without trains in the observation the exponent is 1 whatever happens.
    let mut plain = LatencyBaseline::new(BaselineKind::ConnectionMin, A);
    assert_eq!(plain.observe(&with_train).peak_ratio_exponent, 1.0);
}

#[test]
fn a_baseline_saved_before_the_drain_aware_fields_still_loads() {
    let mut b = LatencyBaseline::new(BaselineKind::WindowedMin { seconds: 2.0 }, A);
    b.observe(&mi(0.0, 1.0, 10.0, 10.0, &[0.1]));
    let mut json = serde_json::to_value(&b).unwrap();
    let fields = json.as_object_mut().unwrap();
    for added in [
        "deliveries",
        "conn_peak_pps",
        "last_latency_s",
        "restarted_in_back_off",
    ] {
        assert!(fields.remove(added).is_some(), "{added}");
    }
    // The code before kept every sample of the window, oldest first.
    fields.insert(
        "window".into(),
        serde_json::json!([[0.5, 0.05], [1.0, 0.04]]),
    );
    let old: LatencyBaseline = serde_json::from_value(json).unwrap();
    assert_eq!(old.current(), 0.04);
    assert_eq!(old.peak_delivery_pps(), 0.0);
}
