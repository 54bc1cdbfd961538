//! Measures how exact an emulated path is: ping RTTs for a few one-way delays, and the delay
//! line's one-way delay at a high packet rate (a UDP probe from the receiver to the sender,
//! which crosses only the delay line). Needs root; run with
//! `cargo run --release -p mocc-net --example measure_path`.

use std::time::Duration;

use mocc_net::{cleanup_stale, run_udp_flow, FlowSpec, Host, PathSpec, Topology};

type Error = Box<dyn std::error::Error>;

fn main() -> Result<(), Error> {
    let removed = cleanup_stale()?;
    if !removed.is_empty() {
        println!("removed stale namespaces: {removed:?}");
    }
    for delay_ms in [10.0, 25.0, 50.0] {
        measure_ping(delay_ms, 100)?;
    }
    for rate_pps in [1_000.0, 10_000.0, 20_000.0] {
        measure_delay_line(10.0, rate_pps)?;
    }
    Ok(())
}

fn path(delay_ms: f64) -> PathSpec {
    PathSpec {
        bandwidth_pps: 10e6 / 12_000.0,
        delay_s: delay_ms / 1e3,
        queue_pkts: 100,
        loss: 0.0,
    }
}

/// `count` pings at 20 per second; prints RTT quantiles against the expected 2 x delay.
fn measure_ping(delay_ms: f64, count: u32) -> Result<(), Error> {
    let topology = Topology::create(&path(delay_ms))?;
    let receiver = topology.receiver_addr().to_string();
    let output = topology.exec(
        Host::Sender,
        "ping",
        &["-n", "-c", &count.to_string(), "-i", "0.05", &receiver],
    )?;
    let mut rtts: Vec<f64> = output
        .lines()
        .filter_map(|line| {
            line.split("time=")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .collect();
    rtts.sort_by(f64::total_cmp);
    let summary = output
        .lines()
        .find(|l| l.starts_with("rtt"))
        .unwrap_or("no summary");
    println!(
        "ping, one-way {delay_ms} ms (RTT {} ms), {} replies: min {:.2} p10 {:.2} median {:.2} p90 {:.2} p99 {:.2} max {:.2} ms | {summary}",
        2.0 * delay_ms,
        rtts.len(),
        q(&rtts, 0.0),
        q(&rtts, 0.1),
        q(&rtts, 0.5),
        q(&rtts, 0.9),
        q(&rtts, 0.99),
        q(&rtts, 1.0),
    );
    println!("  delay line: {:?}", topology.delay_line_stats());
    topology.close()?;
    Ok(())
}

/// A 2 s UDP flow of 200-byte packets at `rate_pps` from the receiver to the sender: each
/// packet's one-way delay minus the round-trip delay is the delay line's error.
fn measure_delay_line(delay_ms: f64, rate_pps: f64) -> Result<(), Error> {
    let topology = Topology::create(&path(delay_ms))?;
    let flow = FlowSpec {
        rate_pps,
        packet_bytes: 200,
        duration: Duration::from_secs(2),
    };
    let report = run_udp_flow(&topology, Host::Receiver, Host::Sender, &flow)?;
    let target = topology.spec().round_trip_delay();
    let error_us = |quantile: f64| {
        report
            .delay_quantile(quantile)
            .map_or(f64::NAN, |d| (d.as_secs_f64() - target.as_secs_f64()) * 1e6)
    };
    println!(
        "delay line at {rate_pps} pps, target {target:?}: sent {} received {} | one-way minus target: min {:.0} p50 {:.0} p90 {:.0} p99 {:.0} p99.9 {:.0} max {:.0} us",
        report.sent,
        report.received,
        error_us(0.0),
        error_us(0.5),
        error_us(0.9),
        error_us(0.99),
        error_us(0.999),
        error_us(1.0),
    );
    println!("  delay line: {:?}", topology.delay_line_stats());
    topology.close()?;
    Ok(())
}

fn q(sorted: &[f64], quantile: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * quantile).round() as usize]
}
