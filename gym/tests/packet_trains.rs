//! Packet trains (`link.trains_above_pps`), the cheaper model of fast links: a sender paced
//! above the rate sends trains of back-to-back packets, each simulated as one. On the same
//! paths the train model delivers, queues and loses what the packet-level one does, within a
//! train's granularity, for a fraction of the events; slower senders and classic ones send
//! single packets.

use mocc_gym::{Action, ControllerConfig, Env, Range, Scenario, ScenarioConfig, SenderConfig};
use mocc_gym::{StartRate, Step};
use std::path::Path;
use std::sync::Arc;

/// 1 Gbit/s of 1500-byte packets.
const GBIT_PPS: f64 = 83_333.0;

/// One agent from `start_pps` on a fixed link, trains above `trains` packets/s (none: off).
fn config(
    bw: f64,
    delay: f64,
    queue: f64,
    loss: f64,
    start_pps: f64,
    trains: Option<f64>,
) -> ScenarioConfig {
    let mut cfg = ScenarioConfig::fixed_link(bw, delay, queue, loss);
    cfg.senders = vec![SenderConfig {
        controller: ControllerConfig::Agent,
        start_rate: StartRate::Pps(Range::Fixed(start_pps)),
        ..SenderConfig::default()
    }];
    cfg.action.max_rate_pps = 200_000.0;
    cfg.episode_mis = 1_000_000;
    cfg.link.trains_above_pps = trains;
    cfg
}

fn env_of(cfg: ScenarioConfig, seed: u64) -> Env {
    Env::new(
        Arc::new(Scenario::new(cfg, None).expect("scenario")),
        seed,
        0,
    )
}

/// Steps with `action` until `until_s`; returns every step.
fn run(env: &mut Env, action: Action, until_s: f64) -> Vec<Step> {
    let mut out = Vec::new();
    while env.network().now_s() < until_s {
        out.push(env.step(action));
    }
    out
}

/// Delivered packets per second, mean RTT (weighted by time) and loss over the steps after
/// `from_s`.
fn summary(steps: &[Step], from_s: f64) -> (f64, f64, f64) {
    let (mut acked, mut dur, mut rtt, mut sent, mut lost) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for s in steps
        .iter()
        .filter(|s| s.info.time_s - s.info.duration_s >= from_s)
    {
        let i = s.info;
        acked += i.throughput_pps * i.duration_s;
        sent += i.send_pps * i.duration_s;
        lost += i.loss * i.send_pps * i.duration_s;
        rtt += i.mean_rtt_s * i.duration_s;
        dur += i.duration_s;
    }
    (acked / dur, rtt / dur, lost / sent.max(1.0))
}

#[test]
fn a_gigabit_path_in_trains_delivers_and_queues_as_packet_by_packet() {
    // A sender above the link (the queue fills and drops, the link runs full; trains of
    // floor(100,000 / 5,000) = 20 packets) and below it, with and without random loss
    // (trains of 11). 1 Gbit/s, 20 ms one way, a 1-BDP buffer.
    for (rate, loss) in [
        (1.2 * GBIT_PPS, 0.0),
        (0.7 * GBIT_PPS, 0.0),
        (0.7 * GBIT_PPS, 0.01),
    ] {
        let results: Vec<((f64, f64, f64), u64)> = [None, Some(5000.0)]
            .iter()
            .map(|&trains| {
                let mut e = env_of(config(GBIT_PPS, 0.02, 3333.0, loss, rate, trains), 3);
                let steps = run(&mut e, Action::Rate(rate), 3.0);
                (summary(&steps, 1.0), e.network().counters().events)
            })
            .collect();
        let ((thr, rtt, lost), events) = results[0];
        let ((thr_t, rtt_t, lost_t), events_t) = results[1];
        assert!((thr_t / thr - 1.0).abs() < 0.01, "{rate}: {thr} vs {thr_t}");
        // RTT within a train's service time (20 / 83,333 s = 0.24 ms) and 1%.
        assert!(
            (rtt_t - rtt).abs() < 0.0004 + 0.01 * rtt,
            "{rate}: {rtt} vs {rtt_t}"
        );
        assert!(
            (lost_t - lost).abs() < 0.01,
            "{rate}: loss {lost} vs {lost_t}"
        );
        // The saving: about a train's length fewer events.
        assert!(events_t * 10 < events, "{events_t} vs {events}");
    }
}

#[test]
fn slow_and_classic_senders_send_single_packets_bit_for_bit_as_before() {
    // A sender below the threshold sends single packets: the run is the packet-level run,
    // bit for bit.
    let below: Vec<Vec<u64>> = [None, Some(5000.0)]
        .iter()
        .map(|&trains| {
            let mut e = env_of(config(GBIT_PPS, 0.02, 3333.0, 0.01, 3000.0, trains), 5);
            run(&mut e, Action::Rate(4000.0), 2.0)
                .iter()
                .map(|s| s.info.throughput_pps.to_bits())
                .collect()
        })
        .collect();
    assert_eq!(below[0], below[1]);
    // Trains grow with the rate, up to a quarter of the queue.
    let e = env_of(config(GBIT_PPS, 0.02, 3333.0, 0.0, 1000.0, Some(5000.0)), 5);
    let link = e.network().link();
    assert_eq!(
        [4000.0, 9999.0, 10_000.0, 83_333.0].map(|r| link.train_for(r)),
        [1, 1, 2, 16]
    );
    let e = env_of(config(GBIT_PPS, 0.02, 20.0, 0.0, 1000.0, Some(5000.0)), 5);
    assert_eq!(e.network().link().train_for(GBIT_PPS), 5);
    // A Cubic flow beside a fast learned one keeps its packets single (its window counts
    // them): its delivery matches the packet-level run's within a few percent.
    let cubic_thr: Vec<f64> = [None, Some(5000.0)]
        .iter()
        .map(|&trains| {
            let mut cfg = config(GBIT_PPS, 0.02, 3333.0, 0.0, 40_000.0, trains);
            cfg.senders.push(SenderConfig {
                controller: ControllerConfig::Cubic,
                ..SenderConfig::default()
            });
            let mut e = env_of(cfg, 5);
            run(&mut e, Action::Rate(40_000.0), 3.0);
            let t = e.network().senders()[1].totals();
            t.acked as f64 / 3.0
        })
        .collect();
    assert!(cubic_thr[0] > 10_000.0, "{cubic_thr:?}");
    assert!(
        (cubic_thr[1] / cubic_thr[0] - 1.0).abs() < 0.05,
        "{cubic_thr:?}"
    );
}

#[test]
fn the_threshold_is_checked_by_field() {
    let yaml = "link: {bandwidth_pps: 1000, delay_s: 0.01, queue_pkts: 10, loss: 0, \
                trains_above_pps: 10}\n";
    let err = Scenario::from_yaml_str(yaml, Path::new("trains.yaml"))
        .expect_err("a threshold below the minimum")
        .to_string();
    assert!(err.contains("link.trains_above_pps"), "{err}");
    let ok = "link: {bandwidth_pps: 1000, delay_s: 0.01, queue_pkts: 10, loss: 0, \
              trains_above_pps: 5000}\n";
    assert!(Scenario::from_yaml_str(ok, Path::new("trains.yaml")).is_ok());
}
