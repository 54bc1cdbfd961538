//! Unit tests of the link: the fluid queue, schedules, outages, traces and the path's hints.

use super::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn params(bw: f64, delay: f64, queue: f64, loss: f64) -> LinkParams {
    LinkParams {
        bandwidth_pps: bw,
        delay_s: delay,
        queue_pkts: queue,
        loss,
    }
}

#[test]
fn fluid_queue_hand_computed() {
    // 100 pkt/s, queue 2, delay 0.05: packets at t=0, 0, 0 -> latencies 0.05, 0.06, drop.
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut link = Link::fixed(params(100.0, 0.05, 2.0, 0.0));
    let a = link.enter(0.0, &mut rng);
    assert_eq!((a.latency_s, a.dropped), (0.05, false));
    let b = link.enter(0.0, &mut rng);
    assert!((b.latency_s - 0.06).abs() < 1e-12 && !b.dropped);
    let c = link.enter(0.0, &mut rng);
    assert!(c.dropped, "third packet exceeds queue/bw = 0.02 s");
    // At t = 0.015 the queue holds 0.005 s.
    assert!((link.queue_delay_s(0.015) - 0.005).abs() < 1e-12);
    let d = link.enter(0.015, &mut rng);
    assert!((d.latency_s - 0.055).abs() < 1e-12 && !d.dropped);
}

#[test]
fn schedule_changes_bandwidth_and_keeps_backlog() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let entries = [ScheduleEntry {
        time_s: 1.0,
        bandwidth_pps: Some(50.0),
        delay_s: Some(0.1),
        loss: None,
    }];
    let mut link = Link::fixed(params(100.0, 0.05, 10.0, 0.0)).with_schedule(&entries, None);
    for _ in 0..4 {
        link.enter(0.99, &mut rng);
    }
    // 4 packets = 0.04 s at 100 pkt/s; at t=1.0, 0.03 s left = 3 packets = 0.06 s at 50.
    let a = link.enter(1.0, &mut rng);
    assert!((a.latency_s - (0.1 + 0.06)).abs() < 1e-9, "{a:?}");
    assert_eq!(link.params().bandwidth_pps, 50.0);
    assert_eq!(link.params_at(0.5).delay_s, 0.05);
    assert!((link.capacity_pps(0.5, 1.5) - 75.0).abs() < 1e-9);
}

#[test]
fn periodic_schedule_and_outage() {
    let entries = [ScheduleEntry {
        time_s: 2.0,
        bandwidth_pps: Some(10.0),
        delay_s: None,
        loss: None,
    }];
    let link = Link::fixed(params(100.0, 0.05, 10.0, 0.0))
        .with_schedule(&entries, Some(3.0))
        .with_outages(Arc::from(vec![OutageConfig {
            start_s: 1.0,
            duration_s: 0.5,
            period_s: Some(15.0),
        }]));
    assert_eq!(link.params_at(2.5).bandwidth_pps, 10.0);
    assert_eq!(link.params_at(3.5).bandwidth_pps, 100.0);
    assert_eq!(link.params_at(5.5).bandwidth_pps, 10.0);
    assert!(link.is_down(1.2) && !link.is_down(1.6) && link.is_down(16.1));
    // [0, 3]: bw 100 for 2 s, 10 for 1 s, and down over [1, 1.5] while at 100: 200 + 10
    // - 50 packets in 3 s.
    assert!((link.capacity_pps(0.0, 3.0) - 160.0 / 3.0).abs() < 1e-9);
    // [1.25, 2.5]: 0.75 s of 100 and 0.5 s of 10, less the 0.25 s down at 100: 55 packets.
    assert!((link.capacity_pps(1.25, 2.5) - 55.0 / 1.25).abs() < 1e-9);
    // Steps at 2 and every 3 s (the schedule restarts), the outage's edges every 15 s.
    assert_eq!(
        link.change_times(17.0),
        vec![1.0, 1.5, 2.0, 3.0, 5.0, 6.0, 8.0, 9.0, 11.0, 12.0, 14.0, 15.0, 16.0, 16.5]
    );
    // Reconfigurations a companion announces: the steps (2, 3, 5, ...) and outage starts
    // (1, 16), not the outages' ends, not time 0.
    let at = |t: f64| link.last_reconfiguration_at(t);
    assert_eq!(at(0.5), None);
    assert_eq!(at(1.2), Some(1.0));
    assert_eq!(at(1.7), Some(1.0));
    assert_eq!(at(2.0), Some(2.0));
    assert_eq!(at(4.9), Some(3.0));
    assert_eq!(at(15.9), Some(15.0));
    assert_eq!(at(16.2), Some(16.0));
    // Handover hints: down within the guard of a send time.
    assert!(link.down_near(0.995, 0.01) && !link.down_near(0.98, 0.01));
    assert!(link.down_near(1.505, 0.01) && !link.down_near(1.52, 0.01));
    let plain = Link::fixed(params(100.0, 0.05, 10.0, 0.0));
    assert_eq!(plain.last_reconfiguration_at(100.0), None);
    assert!(!plain.down_near(1.0, 1.0));
}

#[test]
fn trace_service_queues_at_opportunities() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let trace = Arc::new(Trace::from_millis(&[10, 20, 30, 40]).unwrap());
    let mut link = Link::fixed(params(1.0, 0.01, 2.0, 0.0)).with_trace(trace);
    let a = link.enter(0.0, &mut rng);
    assert!((a.latency_s - 0.02).abs() < 1e-12 && !a.dropped);
    let b = link.enter(0.0, &mut rng);
    assert!((b.latency_s - 0.03).abs() < 1e-12 && !b.dropped);
    assert!(link.enter(0.0, &mut rng).dropped, "queue of 2 is full");
    // After both left (t = 0.025), the next opportunity is at 30 ms.
    let c = link.enter(0.025, &mut rng);
    assert!((c.latency_s - (0.01 + 0.005)).abs() < 1e-12 && !c.dropped);
    // Wraps: the 5th opportunity is 40 + 10 ms.
    let d = link.enter(0.031, &mut rng);
    assert!((d.latency_s - (0.01 + 0.009)).abs() < 1e-12);
    let e = link.enter(0.041, &mut rng);
    assert!((e.latency_s - (0.01 + 0.009)).abs() < 1e-12, "{e:?}");
}
