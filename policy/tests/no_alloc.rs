//! A controller's decisions allocate nothing once it exists.

mod common;
mod support {
    pub mod counting_alloc;
}

use support::counting_alloc::allocations_during;

use mocc_policy::{
    BaselineKind, Controller, MonitorInterval, Policy, RttSummary, BYTES_PER_PACKET,
};
use std::path::Path;

/// 64 MIs of 30 ms with varying counts, losses and RTTs.
fn intervals() -> Vec<MonitorInterval> {
    (0..64)
        .map(|k| {
            let t = k as f64 * 0.03;
            MonitorInterval {
                bytes_sent: (10 + k % 7) as f64 * BYTES_PER_PACKET,
                bytes_acked: (9 + k % 5) as f64 * BYTES_PER_PACKET,
                bytes_lost: (k % 3) as f64 * BYTES_PER_PACKET,
                send_start_s: t,
                send_end_s: t + 0.03,
                recv_start_s: t + 0.06,
                recv_end_s: t + 0.09,
                rtt: RttSummary::from_samples(&[0.06, 0.061 + 0.001 * (k % 4) as f64]),
                ack_span: None,
                train_pps: None,
            }
        })
        .collect()
}

/// A controller over a random policy with the given latency baseline.
fn controller(preference: bool, baseline: BaselineKind) -> Controller {
    controller_reading(preference, baseline, None)
}

/// [`controller`], reading `features` in place of the random policy's (as many).
fn controller_reading(
    preference: bool,
    baseline: BaselineKind,
    features: Option<&[&str]>,
) -> Controller {
    let (mut spec, tensors) = common::random_policy(preference, 9);
    spec.observation.config.latency_baseline = baseline;
    if let Some(names) = features {
        spec.observation.config.features =
            mocc_policy::FeatureSet::from_names(names).expect("known features");
    }
    let policy = Policy::from_parts(spec, &tensors, Path::new("mem"), Path::new("mem"))
        .expect("valid policy");
    Controller::new(policy, [0.5, 0.3, 0.2]).unwrap()
}

/// Allocations during a connection over `mis`, an objective change and the same MIs again.
fn connection_allocations(c: &mut Controller, mis: &[MonitorInterval]) -> u64 {
    let mut last = 0.0;
    let n = allocations_during(|| {
        c.reset(100.0);
        for mi in mis {
            last = c.on_monitor_interval(mi);
        }
        c.set_objective([0.2, 0.6, 0.2]).unwrap();
        for mi in mis {
            last = c.on_monitor_interval(mi);
        }
    });
    assert!(last > 0.0);
    n
}

#[test]
fn decisions_do_not_allocate() {
    for preference in [false, true] {
        let mut c = controller(preference, BaselineKind::ConnectionMin);
        let n = connection_allocations(&mut c, &intervals());
        assert_eq!(n, 0, "preference {preference}: {n} allocations");
    }
}

/// 64 MIs of 30 ms at full rate, then 64 at a fifth of it with a flat RTT (a back-off that
/// drains), times continuing from `start_s`.
fn full_rate_then_back_off(start_s: f64) -> Vec<MonitorInterval> {
    (0..128)
        .map(|k| {
            let t = start_s + k as f64 * 0.03;
            let packets = if k < 64 { 10.0 + (k % 3) as f64 } else { 2.0 };
            MonitorInterval {
                bytes_sent: packets * BYTES_PER_PACKET,
                bytes_acked: packets * BYTES_PER_PACKET,
                bytes_lost: 0.0,
                send_start_s: t,
                send_end_s: t + 0.03,
                recv_start_s: t,
                recv_end_s: t + 0.03,
                rtt: RttSummary::from_samples(&[0.06, 0.06]),
                ack_span: None,
                train_pps: None,
            }
        })
        .collect()
}

/// Two connections over `mis_from(start_s)`: the first grows the controller's windows, the
/// second, with its own times, is counted. Returns its allocations and the controller.
fn second_connection_allocations(
    mut c: Controller,
    mis_from: impl Fn(f64) -> Vec<MonitorInterval>,
) -> (u64, Controller) {
    c.reset(100.0);
    for mi in &mis_from(0.0) {
        c.on_monitor_interval(mi);
    }
    let mis = mis_from(20.0);
    let mut last = 0.0;
    let n = allocations_during(|| {
        c.reset(100.0);
        for mi in &mis {
            last = c.on_monitor_interval(mi);
        }
    });
    assert!(last > 0.0);
    (n, c)
}

#[test]
fn windowed_baselines_allocate_nothing_once_a_reset_kept_their_capacity() {
    let windowed = [
        BaselineKind::WindowedMin { seconds: 0.5 },
        BaselineKind::DrainAware {
            seconds: 0.5,
            drain_fraction: 0.5,
        },
    ];
    for baseline in windowed {
        // The first connection grows the windows (0.5 s of 30 ms MIs, expiring as time goes
        // on) and restarts the drain-aware one in its back-off.
        let (n, _) =
            second_connection_allocations(controller(false, baseline), full_rate_then_back_off);
        assert_eq!(n, 0, "{baseline:?}: {n} allocations");
    }
}

/// 200 MIs of 30 ms whose RTT rises by 0.1 ms each, times continuing from `start_s`: every
/// sample of the last 5 s stays in a minimum window, and the oldest expire.
fn rising_rtt(start_s: f64) -> Vec<MonitorInterval> {
    (0..200)
        .map(|k| {
            let t = start_s + k as f64 * 0.03;
            MonitorInterval {
                bytes_sent: 10.0 * BYTES_PER_PACKET,
                bytes_acked: 10.0 * BYTES_PER_PACKET,
                bytes_lost: 0.0,
                send_start_s: t,
                send_end_s: t + 0.03,
                recv_start_s: t,
                recv_end_s: t + 0.03,
                rtt: RttSummary::from_samples(&[0.06 + 1e-4 * k as f64]),
                ack_span: None,
                train_pps: None,
            }
        })
        .collect()
}

#[test]
fn the_recent_minimum_allocates_nothing_once_a_reset_kept_its_capacity() {
    let features = [
        "sent latency inflation",
        "latency ratio",
        "recent min ratio",
    ];
    let c = controller_reading(false, BaselineKind::ConnectionMin, Some(&features));
    let (n, c) = second_connection_allocations(c, rising_rtt);
    assert_eq!(n, 0, "{n} allocations");
    // After 6 s the recent minimum is the RTT of 5 s before the last MI, above the 60 ms
    // baseline: the window is kept and read.
    let recent_min_ratio = *c.observation().last().unwrap();
    assert!(recent_min_ratio > 1.05, "{recent_min_ratio}");
}
