//! Tests of the multi-flow runs.

use super::*;
use std::path::Path;

#[test]
fn jain_index_hand_values() {
    assert_eq!(jain_index(&[1.0, 1.0, 1.0]), 1.0);
    // (1 + 3)^2 / (2 * (1 + 9)) = 16 / 20.
    assert!((jain_index(&[1.0, 3.0]) - 0.8).abs() < 1e-12);
    // One flow gets everything: 1 / n.
    assert!((jain_index(&[5.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
    assert_eq!(jain_index(&[]), 1.0);
}

#[test]
fn windows_after_the_last_start_count() {
    let r = FlowRates {
        window_s: 1.0,
        rates: vec![vec![10.0, 10.0, 5.0, 5.0], vec![0.0, 0.0, 5.0, 15.0]],
        rtts: Vec::new(),
        starts: vec![0.0, 2.0],
        stops: vec![None, None],
        ..FlowRates::default()
    };
    let j = r.jain_per_window();
    assert_eq!(j.len(), 2);
    assert_eq!(j[0], 1.0);
    assert!((j[1] - 0.8).abs() < 1e-12);
    assert_eq!(r.mean_rate(1, 2.0), 10.0);
}

#[test]
fn the_coexisting_windows_end_at_the_first_stop() {
    let r = FlowRates {
        window_s: 1.0,
        rates: vec![
            vec![4.0; 6],
            vec![0.0, 0.0, 2.0, 6.0, 6.0, 0.0],
            vec![3.0; 6],
        ],
        rtts: Vec::new(),
        capacity_pps: vec![9.0; 6],
        starts: vec![0.0, 2.0, 1.0],
        stops: vec![None, Some(5.0), Some(5.5)],
        ..FlowRates::default()
    };
    // Windows [2, 3), [3, 4), [4, 5): all three run; at 5 the second has stopped.
    assert_eq!(r.coexisting_windows(), 2..5);
    assert_eq!(r.jain_per_window().len(), 3);
    assert!((r.mean_rate_coexisting(1) - 14.0 / 3.0).abs() < 1e-12);
    assert!((r.utilization_in(2) - 1.0).abs() < 1e-12);
    // A start a rounding error past a window's edge still starts on it (100 / 3 * 3).
    let r = FlowRates {
        starts: vec![0.0, 100.0 / 3.0 * 3.0],
        stops: vec![None, None],
        rates: vec![vec![1.0; 101], vec![1.0; 101]],
        ..r
    };
    assert_eq!(r.coexisting_windows(), 100..101);
    // Flows that never all run: no window.
    let r = FlowRates {
        starts: vec![0.0, 3.0],
        stops: vec![Some(2.5), None],
        rates: vec![vec![1.0; 6], vec![1.0; 6]],
        ..r
    };
    assert!(r.coexisting_windows().is_empty());
    assert_eq!(r.mean_rate_coexisting(0), 0.0);
}

#[test]
fn a_flow_sends_nothing_after_its_stop() {
    let net = FlowNetwork {
        bw_pps: 1000.0,
        delay_s: 0.02,
        queue_pkts: 100.0,
        loss: 0.0,
    };
    let p = constant("const:200");
    let flow = |start_s, stop_s| Flow {
        driver: &p,
        objective: [0.34, 0.33, 0.33],
        start_s,
        stop_s,
        extra_rtt_s: 0.0,
        record_mis: false,
    };
    let r = run_flows(&net, &[flow(0.0, Some(3.0)), flow(1.0, None)], 6.0, 1.0, 0).unwrap();
    // 200 pkt/s each while they run (the first second's first packets are still in flight).
    assert!(
        r.rates[0][1..3].iter().all(|&x| (x - 200.0).abs() <= 1.0),
        "{:?}",
        r.rates[0]
    );
    assert!(
        r.rates[0][4..].iter().all(|&x| x == 0.0),
        "{:?}",
        r.rates[0]
    );
    assert!(
        r.rates[1][2..].iter().all(|&x| (x - 200.0).abs() <= 1.0),
        "{:?}",
        r.rates[1]
    );
    assert_eq!(r.coexisting_windows(), 1..3);
}

/// A fairness run's learned flow, on a real simulated link, paces every MI (probe MIs at a
/// quarter of the agent's rate) at the rate, and for the time, a deployed `Controller` fed
/// the same MIs chooses.
#[test]
fn a_learned_flow_paces_and_probes_as_its_controller() {
    let dir = std::env::temp_dir().join(format!("mocc-flow-probes-{}", std::process::id()));
    let policy = crate::test_exports::probing_export(&dir);
    let p = LoadedPolicy::load(&dir).unwrap();
    let net = FlowNetwork {
        bw_pps: 600.0,
        delay_s: 0.03,
        queue_pkts: 40.0,
        loss: 0.0,
    };
    let objective = [0.6, 0.3, 0.1];
    let flow = Flow {
        driver: &p,
        objective,
        start_s: 0.0,
        stop_s: None,
        extra_rtt_s: 0.01,
        record_mis: false,
    };
    let (sender, state) = start_flow(&flow, net.bw_pps, net.delay_s);
    let mut state = state.expect("a learned flow");
    let mut controller = mocc_policy::Controller::new(policy, objective).unwrap();
    let first = controller.start(0.5 * net.bw_pps, net.delay_s + 0.5 * flow.extra_rtt_s);
    assert_eq!(sender.rate_pps(), first);
    let (link, mut rng) = bottleneck(&net.link_config(), std::slice::from_ref(&flow), 0).unwrap();
    let mut network = Network::new(link, vec![sender]);
    network.set_mi_end(0, state.clock.next_duration_s(first));
    let (mut mis, mut probe_mis) = (0, 0);
    network.run_until(20.0, &mut rng, |net, i| {
        let now = net.now_s();
        let mi = net.senders_mut()[i].close_mi(now);
        let paced = state.pace_next_mi(&flow, &mi, net, i);
        let record = state.record(now, mi, paced);
        let next = net.senders()[i].rate_pps();
        assert_eq!(paced, next, "MI {mis}");
        assert_eq!(next, controller.on_monitor_interval(&mi), "MI {mis}");
        assert_eq!(state.clock.probing(), controller.probing(), "MI {mis}");
        // The record says what the controller did with the MI.
        assert_eq!((record.closed_s, record.mi), (now, mi), "MI {mis}");
        assert_eq!(record.next_rate_pps, next, "MI {mis}");
        assert_eq!(record.loop_paced, controller.probing(), "MI {mis}");
        assert_eq!(record.mode, controller.mode(), "MI {mis}");
        assert_eq!(
            record.baseline_s,
            controller.sender_loop().clock().history().baseline_s(),
            "MI {mis}"
        );
        if controller.probing() {
            assert_eq!(next, 0.25 * controller.agent_rate_pps(), "MI {mis}");
            probe_mis += 1;
        }
        let duration = state.clock.next_duration_s(next);
        assert_eq!(duration, controller.mi_duration_s(), "MI {mis}");
        mis += 1;
    });
    // 20 s of MIs of about half an RTT (~40 ms), a probe of 4 MIs every 0.5 s or so.
    assert!(mis > 200, "{mis} MIs");
    assert!(probe_mis > 40, "{probe_mis} probe MIs");
    let _ = std::fs::remove_dir_all(dir);
}

/// A run keeps the MIs of the learned flows that ask, in the order they closed, and they
/// account for what the flow delivered.
#[test]
fn a_run_records_the_mis_of_the_flows_that_ask() {
    let dir = std::env::temp_dir().join(format!("mocc-flow-mis-{}", std::process::id()));
    crate::test_exports::probing_export(&dir);
    let p = LoadedPolicy::load(&dir).unwrap();
    let cubic = constant("cubic");
    let net = FlowNetwork {
        bw_pps: 600.0,
        delay_s: 0.03,
        queue_pkts: 40.0,
        loss: 0.0,
    };
    let flow = |driver, record_mis| Flow {
        driver,
        objective: [0.6, 0.3, 0.1],
        start_s: 0.0,
        stop_s: None,
        extra_rtt_s: 0.0,
        record_mis,
    };
    let flows = [flow(&p, true), flow(&p, false), flow(&cubic, true)];
    let r = run_flows(&net, &flows, 5.0, 1.0, 0).unwrap();
    assert!(r.mis[1].is_empty() && r.mis[2].is_empty());
    let mis = &r.mis[0];
    assert!(mis.len() > 50, "{} MIs", mis.len());
    assert!(mis.windows(2).all(|w| w[0].closed_s < w[1].closed_s));
    assert!(mis.iter().all(|m| m.mi.send_end_s == m.closed_s));
    // Every acknowledged packet is in a recorded MI but those of the MI still open at the end.
    let per_packet = mocc_policy::BYTES_PER_PACKET;
    let recorded: f64 = mis.iter().map(|m| m.mi.bytes_acked / per_packet).sum();
    let largest = mis
        .iter()
        .map(|m| m.mi.bytes_acked / per_packet)
        .fold(0.0, f64::max);
    let acked = r.totals[0].acked as f64;
    assert!(
        recorded <= acked && acked - recorded <= largest,
        "{recorded} of {acked} packets recorded (largest MI {largest})"
    );
    let _ = std::fs::remove_dir_all(dir);
}

fn constant(rate: &str) -> LoadedPolicy {
    LoadedPolicy::load(Path::new(rate)).unwrap()
}

#[test]
fn rtt_ratio_reads_the_queue_the_flows_hold() {
    // 100 pkt/s, 50 ms one way (base RTT 0.1 s), 10 packets. One flow at 40 pkt/s leaves
    // no queue: RTT = base. Two at 100 pkt/s hold it full: the link accepts a packet while
    // the queue ahead plus its own 1/bw fits in 10/bw, so at most 9 packets (0.09 s) are
    // ahead of it, and with twice the link's rate offered the queue never drains far.
    let net = FlowNetwork {
        bw_pps: 100.0,
        delay_s: 0.05,
        queue_pkts: 10.0,
        loss: 0.0,
    };
    for (rate, n, lo, hi) in [("const:40", 1, 1.0, 1.0), ("const:100", 2, 1.75, 1.9)] {
        let p = constant(rate);
        let flows: Vec<Flow<'_>> = (0..n)
            .map(|k| Flow {
                driver: &p,
                objective: [0.34, 0.33, 0.33],
                start_s: k as f64,
                stop_s: None,
                extra_rtt_s: 0.0,
                record_mis: false,
            })
            .collect();
        let r = run_flows(&net, &flows, 10.0, 1.0, 0).unwrap();
        assert_eq!(r.rtts.len(), n);
        assert!(r.rtts.iter().all(|w| w.len() == 10));
        if n == 2 {
            assert_eq!(r.rtts[1][0].samples, 0, "the second flow starts at 1 s");
        }
        let within = |x: f64| x >= lo - 1e-9 && x <= hi + 1e-9;
        let settled = r.rtt_ratio_from(5.0).unwrap();
        assert!(within(settled), "{rate}: {settled}");
        let last = r.rtt_ratio_in(9).unwrap();
        assert!(within(last), "{rate}: {last}");
    }
}

/// The shipped paired export, `checkpoints/mocc-pair`.
fn shipped_pair() -> LoadedPolicy {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../checkpoints/mocc-pair");
    LoadedPolicy::load(&dir).unwrap()
}

/// The shipped paired export (checkpoints/mocc-pair): beside Cubic on a 4 BDP buffer its
/// flow holds a share within the friendliness band, where its cooperative half alone
/// starves (0.07, docs/research/fine-tuned-beside-a-peer.md); two of its own flows keep the
/// queue short (they stay cooperative; the competitive half fills the buffer, RTT ratio near
/// 4).
#[test]
fn the_shipped_pair_holds_cubic_and_keeps_its_own_queue_short() {
    let pair = shipped_pair();
    let cubic = constant("cubic");
    let flow = |driver, start_s| Flow {
        driver,
        objective: [0.34, 0.33, 0.33],
        start_s,
        stop_s: None,
        extra_rtt_s: 0.0,
        record_mis: false,
    };
    let deep = FlowNetwork {
        bw_pps: 800.0,
        delay_s: 0.02,
        queue_pkts: 128.0,
        loss: 0.0,
    };
    let r = run_flows(&deep, &[flow(&pair, 0.0), flow(&cubic, 0.0)], 60.0, 1.0, 0).unwrap();
    let ratio = r.mean_rate(0, 0.0) / r.mean_rate(1, 0.0);
    assert!((0.5..=2.0).contains(&ratio), "beside Cubic: {ratio}");
    let shared = FlowNetwork {
        queue_pkts: 100.0,
        ..deep
    };
    let r = run_flows(&shared, &[flow(&pair, 0.0), flow(&pair, 5.0)], 30.0, 1.0, 0).unwrap();
    let rtt = r.rtt_ratio_from(10.0).unwrap();
    assert!(rtt < 1.5, "two flows: RTT ratio {rtt}");
    let jain = jain_index(&[r.mean_rate(0, 10.0), r.mean_rate(1, 10.0)]);
    assert!(jain > 0.9, "two flows: Jain's index {jain}");
}

/// Four staggered flows of the shipped pair keep the 800 pkt/s link full and share it
/// evenly at a short queue: what fine-tuning its cooperative half beside a learned peer
/// bought (the first shipped pair, its start, kept 0.87 of that link, and so did the same
/// fine-tune without the peer; docs/research/fine-tuned-beside-a-peer.md). The shipped pair
/// keeps 0.902 here, at the target of 0.9: a retrained pair that falls below it does
/// not fill the link as this one does.
#[test]
fn four_flows_of_the_shipped_pair_fill_the_link_evenly() {
    let pair = shipped_pair();
    let net = FlowNetwork {
        bw_pps: 800.0,
        delay_s: 0.02,
        queue_pkts: 100.0,
        loss: 0.0,
    };
    let flows: Vec<Flow> = (0..4)
        .map(|i| Flow {
            driver: &pair,
            objective: [0.34, 0.33, 0.33],
            start_s: 5.0 * i as f64,
            stop_s: None,
            extra_rtt_s: 0.0,
            record_mis: false,
        })
        .collect();
    let r = run_flows(&net, &flows, 60.0, 1.0, 0).unwrap();
    let rates: Vec<f64> = (0..4).map(|i| r.mean_rate(i, 20.0)).collect();
    let utilization = rates.iter().sum::<f64>() / net.bw_pps;
    assert!(utilization >= 0.9, "utilization {utilization}: {rates:?}");
    let jain = jain_index(&rates);
    assert!(jain >= 0.95, "Jain's index {jain}: {rates:?}");
    let rtt = r.rtt_ratio_from(20.0).unwrap();
    assert!(rtt < 1.5, "RTT ratio {rtt}");
}
