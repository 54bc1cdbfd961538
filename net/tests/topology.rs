//! End-to-end checks of a real emulated path in namespaces. They need root and what
//! `preflight` checks (plus `ping`). Elsewhere they skip with a message, or fail with it when
//! MOCC_REQUIRE_NET=1. They run one at a time, and a measurement
//! that misses its bounds is taken again on a fresh path (`common::on_a_quiet_attempt`).

mod common;

use std::time::Duration;

use common::{ensure, network_ready, on_a_quiet_attempt, path, serial};
use mocc_net::{run_udp_flow, FlowSpec, Host, Topology};

/// RTTs (ms) of `count` pings from the sender to the receiver, sorted.
fn ping_rtts_ms(topology: &Topology, count: u32) -> Vec<f64> {
    let receiver = topology.receiver_addr().to_string();
    let count = count.to_string();
    let output = topology
        .exec(
            Host::Sender,
            "ping",
            &["-n", "-c", &count, "-i", "0.05", &receiver],
        )
        .expect("ping from the sender namespace");
    let mut rtts: Vec<f64> = output
        .lines()
        .filter_map(|line| line.split("time=").nth(1))
        .filter_map(|rest| rest.split_whitespace().next())
        .filter_map(|ms| ms.parse().ok())
        .collect();
    rtts.sort_by(f64::total_cmp);
    rtts
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

#[test]
fn ping_rtt_is_twice_the_one_way_delay() {
    if !network_ready(&[("ping", "iputils-ping")]) {
        return;
    }
    let _serial = serial();
    on_a_quiet_attempt("ping RTT", || {
        let topology = Topology::create(&path(10.0, 0.025, 100)).expect("topology");
        let rtts = ping_rtts_ms(&topology, 20);
        assert_eq!(rtts.len(), 20, "replies: {rtts:?}");
        let median = quantile(&rtts, 0.5);
        eprintln!(
            "ping RTT for 2 x 25 ms: min {:.3} median {median:.3} p90 {:.3} max {:.3} ms; {:?}",
            rtts[0],
            quantile(&rtts, 0.9),
            rtts[rtts.len() - 1],
            topology.delay_line_stats()
        );
        assert!(topology.delay_line_failure().is_none());
        ensure!(
            (median - 50.0).abs() < 1.0,
            "median RTT {median} ms, expected 50 +- 1"
        );
        Ok(())
    });
}

#[test]
fn constant_rate_udp_overload_is_cut_to_the_bottleneck() {
    if !network_ready(&[]) {
        return;
    }
    let _serial = serial();
    on_a_quiet_attempt("UDP overload", overload_is_cut_to_the_bottleneck);
}

/// One attempt of `constant_rate_udp_overload_is_cut_to_the_bottleneck`.
fn overload_is_cut_to_the_bottleneck() -> Result<(), String> {
    let spec = path(10.0, 0.010, 100);
    let topology = Topology::create(&spec).expect("topology");
    let offered = 1.2;
    let flow = FlowSpec {
        rate_pps: offered * spec.bandwidth_pps,
        packet_bytes: 1500,
        duration: Duration::from_secs(3),
    };
    let report = run_udp_flow(&topology, Host::Sender, Host::Receiver, &flow).expect("UDP flow");
    let delivered = report.delivered_pps();
    let loss = report.loss();
    // Over a finite run the queue's content is delivered too.
    let secs = flow.duration.as_secs_f64();
    let expected_received = spec.bandwidth_pps * secs + f64::from(spec.queue_pkts);
    let expected_loss = 1.0 - expected_received / report.sent as f64;
    let full_queue_delay = f64::from(spec.queue_pkts) / spec.bandwidth_pps;
    let p99 = report.delay_quantile(0.99).expect("arrivals").as_secs_f64();
    eprintln!(
        "UDP at {:.0} pps into {:.1} pps / {} pkts: sent {} received {} delivered {delivered:.1} pps, \
         loss {loss:.4} (steady state {:.4}, with the queue's content {expected_loss:.4}), \
         one-way delay median {:?} p99 {:?} (full queue {full_queue_delay:.4} s); {:?}",
        flow.rate_pps,
        spec.bandwidth_pps,
        spec.queue_pkts,
        report.sent,
        report.received,
        1.0 - 1.0 / offered,
        report.delay_quantile(0.5),
        report.delay_quantile(0.99),
        topology.delay_line_stats(),
    );
    let rate_error = (delivered - spec.bandwidth_pps).abs() / spec.bandwidth_pps;
    ensure!(
        rate_error < 0.05,
        "delivered {delivered} pps vs {}",
        spec.bandwidth_pps
    );
    ensure!((loss - (1.0 - 1.0 / offered)).abs() < 0.05, "loss {loss}");
    ensure!(
        (loss - expected_loss).abs() < 0.02,
        "loss {loss} vs {expected_loss}"
    );
    // A queue counted in real packets: a full one delays by queue / rate.
    ensure!(
        (p99 / full_queue_delay - 1.0).abs() < 0.15,
        "p99 delay {p99} s"
    );
    Ok(())
}

#[test]
fn delay_line_is_exact_at_10k_packets_per_second() {
    if !network_ready(&[]) {
        return;
    }
    let _serial = serial();
    on_a_quiet_attempt("delay line at 10k pkt/s", delay_line_is_exact);
}

/// One attempt of `delay_line_is_exact_at_10k_packets_per_second`.
fn delay_line_is_exact() -> Result<(), String> {
    let topology = Topology::create(&path(10.0, 0.010, 100)).expect("topology");
    // Receiver -> sender crosses only the delay line (no bottleneck on the return path).
    let flow = FlowSpec {
        rate_pps: 10_000.0,
        packet_bytes: 200,
        duration: Duration::from_secs(1),
    };
    let report = run_udp_flow(&topology, Host::Receiver, Host::Sender, &flow).expect("UDP flow");
    let target = topology.spec().round_trip_delay();
    let error_us = |q: f64| {
        let delay = report.delay_quantile(q).expect("arrivals");
        (delay.as_secs_f64() - target.as_secs_f64()) * 1e6
    };
    let stats = topology.delay_line_stats();
    eprintln!(
        "delay line at {} pps, target {target:?}: received {}/{}; one-way minus target p50 {:.0} \
         p99 {:.0} max {:.0} us; {stats:?}",
        flow.rate_pps,
        report.received,
        report.sent,
        error_us(0.5),
        error_us(0.99),
        error_us(1.0),
    );
    assert_eq!(report.received, report.sent, "the return path lost packets");
    assert!(
        error_us(0.0) > -5.0,
        "a packet came back early: {:.0} us",
        error_us(0.0)
    );
    ensure!(
        error_us(0.5) < 200.0,
        "median error {:.0} us",
        error_us(0.5)
    );
    // The median checks the delay line's precision; the tail is the scheduler's on a
    // loaded host (1.8 ms p99 once on 2 cores running CI), so p99 only guards against a
    // stalled or mis-scaled line. Tail lateness is measured by `mocc net run`, not here.
    ensure!(
        error_us(0.99) < 20_000.0,
        "p99 error {:.0} us",
        error_us(0.99)
    );
    Ok(())
}

#[test]
fn path_changes_take_effect() {
    if !network_ready(&[("ping", "iputils-ping")]) {
        return;
    }
    let _serial = serial();
    on_a_quiet_attempt("path changes", path_changes_are_applied);
}

/// One attempt of `path_changes_take_effect`.
fn path_changes_are_applied() -> Result<(), String> {
    let topology = Topology::create(&path(10.0, 0.010, 100)).expect("topology");

    topology.set_delay(0.005).expect("set_delay");
    let rtts = ping_rtts_ms(&topology, 10);
    let median = quantile(&rtts, 0.5);
    ensure!(
        (median - 10.0).abs() < 1.0,
        "median RTT {median} ms after set_delay(5 ms)"
    );

    let doubled = 2.0 * topology.spec().bandwidth_pps;
    topology.set_bandwidth(doubled).expect("set_bandwidth");
    let qdiscs = topology
        .exec(Host::Router, "tc", &["qdisc", "show", "dev", "to-rcv"])
        .expect("tc qdisc show");
    assert!(
        qdiscs.contains("pfifo 10:") && qdiscs.contains("limit 100p"),
        "{qdiscs}"
    );
    let overload = FlowSpec {
        rate_pps: 1.2 * doubled,
        packet_bytes: 1500,
        duration: Duration::from_secs(1),
    };
    let report = run_udp_flow(&topology, Host::Sender, Host::Receiver, &overload).expect("flow");
    let delivered = report.delivered_pps();
    ensure!(
        (delivered / doubled - 1.0).abs() < 0.05,
        "delivered {delivered} pps vs {doubled}; {:?}",
        topology.delay_line_stats()
    );

    topology.set_loss(0.5).expect("set_loss");
    let light = FlowSpec {
        rate_pps: 0.5 * doubled,
        packet_bytes: 1500,
        duration: Duration::from_millis(500),
    };
    let report = run_udp_flow(&topology, Host::Sender, Host::Receiver, &light).expect("flow");
    eprintln!(
        "after changes: RTT median {median} ms, delivered {delivered:.1} pps of {doubled:.1}, \
         loss {:.3} of 0.5 over {} packets",
        report.loss(),
        report.sent
    );
    ensure!(
        (report.loss() - 0.5).abs() < 0.1,
        "loss {} with set_loss(0.5)",
        report.loss()
    );
    Ok(())
}
