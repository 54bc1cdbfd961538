//! Classic controllers behave as their designs say on fixed networks (the checks of the
//! evaluation issue): a deep buffer, and random loss.

use mocc_gym::{
    Action, ClassicKind, ControllerConfig, Env, Range, Scenario, ScenarioConfig, StartRate,
};
use std::sync::Arc;

/// Means over the run's MIs after the first `skip_s` seconds: (utilization, RTT / base RTT,
/// loss).
fn run(
    kind: ClassicKind,
    bw: f64,
    delay: f64,
    queue: f64,
    loss: f64,
    seconds: f64,
) -> (f64, f64, f64) {
    let mut cfg = ScenarioConfig::fixed_link(bw, delay, queue, loss);
    cfg.senders[0].controller = ControllerConfig::from_classic(kind);
    cfg.senders[0].start_rate = StartRate::Pps(Range::Fixed(10.0));
    cfg.episode_mis = 1_000_000;
    let scenario = Arc::new(Scenario::new(cfg, None).expect("scenario"));
    let mut env = Env::new(scenario, 1, 0);
    let (mut util, mut ratio, mut lost, mut n, mut rn) = (0.0, 0.0, 0.0, 0.0, 0.0);
    let skip_s = 5.0;
    loop {
        let info = env.step(Action::Delta(0.0)).info;
        if info.time_s > seconds {
            break;
        }
        if info.time_s < skip_s {
            continue;
        }
        util += info.utilization;
        lost += info.loss;
        n += 1.0;
        if info.mean_rtt_s > 0.0 {
            ratio += info.mean_rtt_s / info.base_rtt_s;
            rn += 1.0;
        }
    }
    (util / n, ratio / rn, lost / n)
}

/// 500 pkt/s (6 Mbit/s), 40 ms RTT (BDP 20 packets), a 500-packet buffer (25 BDP).
fn deep(kind: ClassicKind) -> (f64, f64, f64) {
    run(kind, 500.0, 0.02, 500.0, 0.0, 30.0)
}

/// 500 pkt/s, 100 ms RTT, a 100-packet buffer, 2% random loss.
fn lossy(kind: ClassicKind) -> (f64, f64, f64) {
    run(kind, 500.0, 0.05, 100.0, 0.02, 30.0)
}

#[test]
fn cubic_fills_a_deep_buffer() {
    let (util, rtt_ratio, _) = deep(ClassicKind::Cubic);
    assert!(util > 0.98, "utilization {util}");
    // A full 500-packet queue adds 1 s to a 40 ms RTT.
    assert!(rtt_ratio > 10.0, "RTT ratio {rtt_ratio}");
}

#[test]
fn vegas_and_copa_keep_a_small_standing_queue() {
    for kind in [ClassicKind::Vegas, ClassicKind::Copa] {
        let (util, rtt_ratio, loss) = deep(kind);
        assert!(util > 0.9, "{kind:?}: utilization {util}");
        assert!(rtt_ratio < 1.5, "{kind:?}: RTT ratio {rtt_ratio}");
        assert_eq!(loss, 0.0, "{kind:?}");
    }
}

#[test]
fn bbr_fills_the_pipe_with_a_bounded_queue() {
    let (util, rtt_ratio, _) = deep(ClassicKind::Bbr);
    assert!(util > 0.95, "utilization {util}");
    // cwnd_gain 2 bounds the queue to about one BDP: RTT at most ~2x the base.
    assert!(rtt_ratio < 2.0, "RTT ratio {rtt_ratio}");
}

#[test]
fn cubic_collapses_under_random_loss_and_bbr_does_not() {
    let (cubic, _, cubic_loss) = lossy(ClassicKind::Cubic);
    let (bbr, _, _) = lossy(ClassicKind::Bbr);
    // Mathis et al.: 1.22 / (RTT sqrt(p)) = 86 pkt/s of 500.
    assert!(cubic < 0.35, "Cubic utilization {cubic}");
    assert!(
        (cubic_loss - 0.02).abs() < 0.005,
        "the loss is the link's: {cubic_loss}"
    );
    assert!(bbr > 0.9, "BBR utilization {bbr}");
}

#[test]
fn classic_senders_share_a_bottleneck_with_cross_traffic_deterministically() {
    let scenario = |yaml: &str| {
        Arc::new(Scenario::from_yaml_str(yaml, std::path::Path::new("x.yaml")).unwrap())
    };
    let yaml = "link: {bandwidth_pps: 400, delay_s: 0.03, queue_pkts: 60, loss: 0}\n\
                senders:\n  - {controller: bbr}\n  \
                - {controller: {on_off: {on_s: 0.6, off_s: 0.3, cc: cubic}}}\n";
    let s = scenario(yaml);
    let run = || {
        let mut env = Env::new(s.clone(), 3, 0);
        (0..300)
            .map(|_| env.step(Action::Delta(0.0)).info.throughput_pps)
            .collect::<Vec<_>>()
    };
    let a = run();
    assert_eq!(a, run());
    let mean = a.iter().sum::<f64>() / a.len() as f64;
    assert!(mean > 50.0 && mean < 400.0, "BBR shares the link: {mean}");
}

#[test]
fn vivace_learns_a_high_rate_with_almost_no_queue() {
    // Its utility penalizes a rising RTT, so it settles just below the point where the queue
    // starts to grow.
    for (bw, delay, queue) in [
        (500.0, 0.02, 500.0),
        (100.0, 0.05, 20.0),
        (800.0, 0.03, 50.0),
    ] {
        let (util, rtt_ratio, loss) = run(ClassicKind::Vivace, bw, delay, queue, 0.0, 60.0);
        assert!(util > 0.9, "{bw} pkt/s: utilization {util}");
        assert!(rtt_ratio < 1.1, "{bw} pkt/s: RTT ratio {rtt_ratio}");
        assert_eq!(loss, 0.0);
    }
}
