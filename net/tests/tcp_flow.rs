//! Kernel TCP flows over a real namespace path (root; skipped elsewhere unless
//! MOCC_REQUIRE_NET=1): Cubic fills the bottleneck and its queue, BBR fills the link with a
//! shorter queue, and the samples account for what was delivered.

mod common;

use common::ensure;

use mocc_net::transport::run_tcp_flow;
use mocc_net::{PathSpec, Topology};
use std::time::Duration;

const PATH: PathSpec = PathSpec {
    bandwidth_pps: 500.0,
    delay_s: 0.02,
    queue_pkts: 100,
    loss: 0.0,
};

#[test]
fn cubic_fills_the_link_and_its_queue_and_bbr_the_link() {
    let _serial = common::serial();
    if !common::network_ready(&[]) {
        return;
    }
    common::on_a_quiet_attempt("kernel Cubic and BBR", cubic_and_bbr_fill_the_link);
    let topology = Topology::create(&PATH).expect("topology");
    let e = run_tcp_flow(&topology, "no-such-cc", Duration::from_secs(1)).unwrap_err();
    assert!(e.to_string().contains("no-such-cc"), "{e}");
}

/// One attempt of `cubic_fills_the_link_and_its_queue_and_bbr_the_link`.
fn cubic_and_bbr_fill_the_link() -> Result<(), String> {
    let topology = Topology::create(&PATH).expect("topology");
    let cubic = run_tcp_flow(&topology, "cubic", Duration::from_secs(6)).expect("cubic");
    let bbr = run_tcp_flow(&topology, "bbr", Duration::from_secs(6)).expect("bbr");
    for (name, f) in [("cubic", &cubic), ("bbr", &bbr)] {
        let acked: u64 = f.mis.iter().map(|r| r.mi.rtt.count).sum();
        assert_eq!(acked, f.acked, "{name}");
        ensure!(f.mis.len() >= 55, "{name}: {} samples", f.mis.len());
        let utilization = f.delivered_pps() / PATH.bandwidth_pps;
        ensure!(
            utilization > 0.85 && utilization < 1.02,
            "{name}: utilization {utilization}"
        );
    }
    // Loss-based Cubic keeps the 100-packet queue (200 ms at 500 pkt/s) mostly full; BBR keeps
    // it far shorter.
    let late = |f: &mocc_net::transport::FlowOutcome| {
        f.mis[f.mis.len() / 2..]
            .iter()
            .map(|r| r.mi.rtt.mean_s)
            .sum::<f64>()
            / (f.mis.len() - f.mis.len() / 2) as f64
    };
    ensure!(late(&cubic) > 0.04 + 0.1, "cubic RTT {}", late(&cubic));
    ensure!(
        late(&bbr) < late(&cubic),
        "bbr {} vs cubic {}",
        late(&bbr),
        late(&cubic)
    );
    Ok(())
}
