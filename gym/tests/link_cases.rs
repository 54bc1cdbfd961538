//! Hand-computed cases of Aurora's fixed link: 100 pkt/s, a 2-packet queue, 0.05 s one-way
//! delay, no random loss (plus an exactly representable power-of-two variant).
//!
//! The model (see `link.rs`): a packet entering at `t` reads the current queue delay `c`; its
//! forward latency is `delay + c` (read before its own `1/bw` is added); it is tail-dropped when
//! `c + 1/bw > queue/bw`, else the queue delay becomes `c + 1/bw`; the queue drains at one second
//! per second. The return path adds `delay`.

use mocc_gym::{Action, Env, Link, LinkParams, Network, Pacing, Scenario, ScenarioConfig, Sender};
use mocc_policy::{MonitorInterval, RttSummary, BYTES_PER_PACKET};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;

const BW: f64 = 100.0;
const QUEUE: f64 = 2.0;
const DELAY: f64 = 0.05;

fn aurora_link() -> Link {
    Link::fixed(LinkParams {
        bandwidth_pps: BW,
        delay_s: DELAY,
        queue_pkts: QUEUE,
        loss: 0.0,
    })
}

fn pkts(bytes: f64) -> f64 {
    bytes / BYTES_PER_PACKET
}

/// Runs one sender at `rate` to 20 s and returns the MI measured between the first events at
/// or after 10 s and 20 s.
fn measure(rate: f64) -> MonitorInterval {
    let mut net = Network::new(
        aurora_link(),
        vec![Sender::new(rate, Pacing::Continuous, 0.0)],
    );
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    net.run_until(10.0, &mut rng, |_, _| {});
    let t0 = net.now_s();
    assert!(t0 >= 10.0, "run_until stops at the event crossing its end");
    net.senders_mut()[0].close_mi(t0);
    net.run_until(20.0, &mut rng, |_, _| {});
    let t1 = net.now_s();
    let mi = net.senders_mut()[0].close_mi(t1);
    assert_eq!(mi.send_start_s, t0);
    assert_eq!(mi.send_end_s, t1);
    mi
}

fn throughput(mi: &MonitorInterval) -> f64 {
    pkts(mi.bytes_acked) / (mi.send_end_s - mi.send_start_s)
}

#[test]
fn throughput_is_min_of_rate_and_bandwidth() {
    for rate in [50.0, 100.0, 150.0, 200.0] {
        let mi = measure(rate);
        let expected = f64::min(rate, BW);
        let thr = throughput(&mi);
        assert!(
            (thr - expected).abs() <= 0.02 * expected,
            "rate {rate}: throughput {thr}, expected {expected}"
        );
        // The sending rate over the window is the pacing rate.
        let send = pkts(mi.bytes_sent) / (mi.send_end_s - mi.send_start_s);
        assert!(
            (send - rate).abs() <= 0.01 * rate,
            "rate {rate}: send {send}"
        );
    }
}

#[test]
fn loss_ratio_is_the_excess_over_capacity() {
    // Below or at capacity nothing is dropped; above it, the queue never empties so exactly
    // `bw` packets/s are admitted and the rest, (rate - bw) / rate, is dropped.
    for (rate, expected) in [(50.0, 0.0), (100.0, 0.0), (150.0, 1.0 / 3.0), (200.0, 0.5)] {
        let mi = measure(rate);
        let loss = mi.loss_ratio();
        if expected == 0.0 {
            assert_eq!(mi.bytes_lost, 0.0, "rate {rate}: lost {}", mi.bytes_lost);
        } else {
            assert!(
                (loss - expected).abs() < 0.01,
                "rate {rate}: loss {loss}, expected {expected}"
            );
        }
    }
}

#[test]
fn mean_rtt_bounds() {
    let base = 2.0 * DELAY;
    // Under capacity each packet finds the queue drained: the RTT is the propagation RTT.
    let mi = measure(50.0);
    assert!((mi.rtt.mean_s - base).abs() < 1e-12, "{:?}", mi.rtt);
    let mi = measure(100.0);
    assert!((mi.rtt.mean_s - base).abs() < 1e-9, "{:?}", mi.rtt);
    // Over capacity an admitted packet reads c <= queue/bw - 1/bw = 0.01 s (read before its own
    // 1/bw is added) and, since the queue never empties, c >= 1/bw - 1/rate.
    for rate in [150.0, 200.0] {
        let mi = measure(rate);
        let m = mi.rtt.mean_s;
        assert!(
            m > base && m <= base + QUEUE / BW,
            "brief's bound, rate {rate}: {m}"
        );
        let lo = base + 1.0 / BW - 1.0 / rate;
        let hi = base + (QUEUE - 1.0) / BW;
        assert!(
            m >= lo - 1e-9 && m <= hi + 1e-9,
            "rate {rate}: mean RTT {m} outside [{lo}, {hi}]"
        );
    }
}

/// The RTT samples of a summary when it holds at most two (else the two half means, which lie
/// within the samples' range).
fn samples(r: &RttSummary) -> Vec<f64> {
    match r.count {
        0 => vec![],
        1 => vec![r.mean_s],
        _ => vec![r.first_half_mean_s, r.second_half_mean_s, r.mean_s],
    }
}

/// Steps `net` one event time at a time from 10 s to 20 s, returning every MI.
fn per_event_mis(rate: f64) -> Vec<MonitorInterval> {
    let mut net = Network::new(
        aurora_link(),
        vec![Sender::new(rate, Pacing::Continuous, 0.0)],
    );
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    net.run_until(10.0, &mut rng, |_, _| {});
    let now = net.now_s();
    net.senders_mut()[0].close_mi(now);
    let mut out = Vec::new();
    while net.now_s() < 20.0 {
        let before = net.now_s();
        net.run_until(before + 1e-9, &mut rng, |_, _| {});
        let now = net.now_s();
        assert!(now >= before);
        out.push(net.senders_mut()[0].close_mi(now));
    }
    out
}

#[test]
fn every_rtt_sample_under_capacity_is_exactly_twice_the_delay() {
    let mis = per_event_mis(50.0);
    let mut n = 0;
    for mi in &mis {
        assert!(
            mi.rtt.count <= 1,
            "one ack per event time at 50 pkt/s: {mi:?}"
        );
        for s in samples(&mi.rtt) {
            assert_eq!(s, 2.0 * DELAY, "{mi:?}");
            n += 1;
        }
        assert_eq!(mi.bytes_lost, 0.0);
    }
    assert!((495..=505).contains(&n), "{n} samples in 10 s at 50 pkt/s");
}

#[test]
fn every_rtt_sample_over_capacity_is_within_the_queue_bounds() {
    for rate in [150.0, 200.0] {
        let lo = 2.0 * DELAY + 1.0 / BW - 1.0 / rate;
        let hi = 2.0 * DELAY + (QUEUE - 1.0) / BW;
        let mut n = 0;
        for mi in per_event_mis(rate) {
            for s in samples(&mi.rtt) {
                assert!(
                    s >= lo - 1e-9 && s <= hi + 1e-9,
                    "rate {rate}: sample {s} outside [{lo}, {hi}]"
                );
                n += 1;
            }
        }
        assert!((990..=1010).contains(&n), "rate {rate}: {n} acks in 10 s");
    }
}

#[test]
fn fluid_queue_reads_latency_before_adding_own_service_time() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut link = aurora_link();
    assert!((link.max_queue_delay_s() - 0.02).abs() < 1e-15);
    // Empty queue: latency is the propagation delay alone, the queue then holds 1/bw.
    let a = link.enter(0.0, &mut rng);
    assert_eq!(a.latency_s, DELAY);
    assert!(!a.dropped);
    assert!((link.queue_delay_s(0.0) - 0.01).abs() < 1e-15);
    // 4 ms later 6 ms remain: latency 0.056, queue 0.016.
    let b = link.enter(0.004, &mut rng);
    assert!((b.latency_s - 0.056).abs() < 1e-12 && !b.dropped, "{b:?}");
    assert!((link.queue_delay_s(0.004) - 0.016).abs() < 1e-12);
    // At 5 ms, c = 0.015: 0.015 + 0.01 > 0.02 -> dropped; the latency it would have seen is
    // still reported as delay + c, and the queue is unchanged.
    let c = link.enter(0.005, &mut rng);
    assert!(c.dropped, "{c:?}");
    assert!((c.latency_s - 0.065).abs() < 1e-12, "{c:?}");
    assert!((link.queue_delay_s(0.005) - 0.015).abs() < 1e-12);
    // At 10.5 ms, c = 0.0095: 0.0195 <= 0.02 -> admitted, latency 0.0595.
    let d = link.enter(0.0105, &mut rng);
    assert!(!d.dropped && (d.latency_s - 0.0595).abs() < 1e-12, "{d:?}");
    assert!((link.queue_delay_s(0.0105) - 0.0195).abs() < 1e-12);
    // The queue drains at one second per second and never goes negative.
    assert!((link.queue_delay_s(0.0205) - 0.0095).abs() < 1e-12);
    assert_eq!(link.queue_delay_s(1.0), 0.0);
    let e = link.enter(1.0, &mut rng);
    assert_eq!(e.latency_s, DELAY);
}

#[test]
fn tail_drop_is_strictly_greater_than_capacity() {
    // Powers of two make every quantity exact: bw 4 -> 1/bw = 0.25, queue/bw = 0.5.
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut link = Link::fixed(LinkParams {
        bandwidth_pps: 4.0,
        delay_s: 0.125,
        queue_pkts: 2.0,
        loss: 0.0,
    });
    let a = link.enter(0.0, &mut rng);
    assert_eq!((a.latency_s, a.dropped), (0.125, false));
    // c = 0.25: 0.25 + 0.25 = 0.5 is not > 0.5 -> admitted.
    let b = link.enter(0.0, &mut rng);
    assert_eq!((b.latency_s, b.dropped), (0.375, false));
    // c = 0.5: 0.75 > 0.5 -> dropped.
    let c = link.enter(0.0, &mut rng);
    assert_eq!((c.latency_s, c.dropped), (0.625, true));
    // At 0.25, c = 0.25: exactly at the limit again -> admitted.
    let d = link.enter(0.25, &mut rng);
    assert_eq!((d.latency_s, d.dropped), (0.375, false));
    assert_eq!(link.queue_delay_s(0.25), 0.5);
}

#[test]
fn random_loss_one_drops_everything_and_leaves_queue_empty() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut link = Link::fixed(LinkParams {
        bandwidth_pps: BW,
        delay_s: DELAY,
        queue_pkts: QUEUE,
        loss: 1.0,
    });
    for k in 0..100 {
        let t = k as f64 * 0.001;
        let a = link.enter(t, &mut rng);
        assert!(a.dropped);
        assert_eq!(a.latency_s, DELAY, "a randomly lost packet never queued");
        assert_eq!(link.queue_delay_s(t), 0.0);
    }
}

/// bw 64 pkt/s, queue 2, delay 1/16 s, sender 128 pkt/s: every time is a multiple of 1/128 s,
/// so the whole run is exact. Times below are in units of 1/128 s.
///
/// Packet k is sent at k (k >= 1). One-way delay 8, service time 1/bw = 2, queue/bw = 4; the
/// queue delay drains 1 per unit. k=1: c=0, forward latency 8, queue 2; k=2: c=1, latency 9,
/// queue 3; k=3: c=2, 2+2 = 4 is not > 4 -> admitted, latency 10, queue 4; then every even k
/// finds c=3 (3+2 > 4) and is dropped, its latency still delay + c = 11, and every odd k finds
/// c=2 and is admitted with latency 10. The return path adds 8.
///
/// Receiver arrivals (k + forward latency): k=1: 9, k=2: 11, k=3: 13, even k >= 4: k+11, odd
/// k >= 5: k+10. Ack/loss arrivals (k + RTT): k=1: 17 (RTT 16), k=2: 19 (17), k=3: 21 (18),
/// even k >= 4 (lost, "RTT" 19): k+19, odd k >= 5 (acked, RTT 18): k+18. So every receiver
/// and ack/loss arrival is at an odd time; from 15 on two receiver arrivals share each odd
/// time (even k = T-11, odd k = T-10), and from 23 on the ack of odd k = T-18 and the loss of
/// even k = T-19 share it too. Aurora's order at equal times: receiver arrivals, then acks by
/// lower RTT (the ack, RTT 18, before the loss, 19), then the send.
fn power_of_two_net() -> Network {
    let link = Link::fixed(LinkParams {
        bandwidth_pps: 64.0,
        delay_s: 0.0625,
        queue_pkts: 2.0,
        loss: 0.0,
    });
    Network::new(link, vec![Sender::new(128.0, Pacing::Continuous, 0.0)])
}

#[test]
fn power_of_two_run_is_hand_computed_exactly() {
    let mut net = power_of_two_net();
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    // End at 1280.5, between event times. The last event before it is the send of k=1280 (even
    // times hold only sends); the crossing event is the first event at 1281: a receiver arrival
    // (of k=1270 or k=1271), which precedes the ack of k=1263 and the loss of k=1262 there.
    net.run_until(10.0 + 1.0 / 256.0, &mut rng, |_, _| {});
    assert_eq!(net.now_s(), 1281.0 / 128.0);
    let s = &net.senders()[0];
    let t = s.totals();
    // Sends k = 1..=1280.
    assert_eq!(t.sent, 1280);
    // Acked by 1279: k = 1, 2, 3 and odd k with k+18 <= 1279, i.e. k in [5, 1261] (629).
    assert_eq!(t.acked, 3 + 629);
    // Lost by 1279: even k with k+19 <= 1279, i.e. k in [4, 1260] (629); the loss of k=1262
    // at 1281 comes after the crossing receiver arrival and is not processed.
    assert_eq!(t.lost, 629);
    // In flight: the acks of odd k in [1263, 1279] (9) and losses of even k in [1262, 1280]
    // (10).
    assert_eq!(s.in_flight(), 1280 - 632 - 629);
    assert_eq!(s.in_flight(), 19);
    // Events: 1280 sends, 632 + 629 ack/loss arrivals and the receiver arrivals up to 1279
    // (k = 1, 2, 3, even k + 11 <= 1279 -> k in [4, 1268]: 633, odd k + 10 <= 1279 -> k in
    // [5, 1269]: 633) plus the crossing one at 1281: 3 + 633 + 633 + 1 = 1270.
    let c = net.counters();
    assert_eq!(c.packets, 1280);
    assert_eq!(c.events, 1280 + (632 + 629) + 1270);
    let now = net.now_s();
    let mi = net.senders_mut()[0].close_mi(now);
    assert_eq!(pkts(mi.bytes_sent), 1280.0);
    assert_eq!(pkts(mi.bytes_acked), 632.0);
    assert_eq!(pkts(mi.bytes_lost), 629.0);
    assert_eq!(mi.rtt.count, 632);
    let (r1, r2, r3) = (16.0 / 128.0, 17.0 / 128.0, 18.0 / 128.0);
    let mean = (r1 + r2 + 630.0 * r3) / 632.0;
    assert!((mi.rtt.mean_s - mean).abs() < 1e-15, "{:?}", mi.rtt);
    // Halves of 316 samples each.
    let first = (r1 + r2 + 314.0 * r3) / 316.0;
    assert!((mi.rtt.first_half_mean_s - first).abs() < 1e-15);
    assert!((mi.rtt.second_half_mean_s - r3).abs() < 1e-15);

    // One more event time: the rest of 1281 (the other receiver arrival, the ack of k=1263, the
    // loss of k=1262, the send of k=1281), then the crossing send of k=1282 at 1282.
    net.run_until(now + 1.0 / 256.0, &mut rng, |_, _| {});
    let now = net.now_s();
    assert_eq!(now, 1282.0 / 128.0);
    let mi = net.senders_mut()[0].close_mi(now);
    assert_eq!(
        (
            pkts(mi.bytes_sent),
            pkts(mi.bytes_acked),
            pkts(mi.bytes_lost)
        ),
        (2.0, 1.0, 1.0)
    );
    assert_eq!(mi.rtt.mean_s, r3);
    assert_eq!(net.counters().events, 3811 + 5);
}

#[test]
fn power_of_two_rtt_sequence_in_order() {
    let mut net = power_of_two_net();
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    // (time of the MI's end, RTT) of each ack, and (time, count) of each loss report.
    let mut acks = Vec::new();
    let mut lost = Vec::new();
    // Each call ends at now + 1/512, between event times 1/128 apart, so it processes the
    // events left at the current time plus the first event of the next one. From 9 on the
    // first event of an odd time is a receiver arrival (before 9 odd times hold only a send),
    // and even times hold only a send, so the acks and losses of odd time T all fall in the
    // MI that ends with the send at T+1.
    while net.now_s() < 1.0 {
        let before = net.now_s();
        net.run_until(before + 1.0 / 512.0, &mut rng, |_, _| {});
        let now = net.now_s();
        let mi = net.senders_mut()[0].close_mi(now);
        assert!(mi.rtt.count <= 1, "at most one ack per event time: {mi:?}");
        if mi.rtt.count == 1 {
            acks.push((now * 128.0, mi.rtt.mean_s));
        }
        if mi.bytes_lost > 0.0 {
            lost.push((now * 128.0, pkts(mi.bytes_lost)));
        }
    }
    // Acks at 17, 19, 21 (RTT 16, 17, 18) are reported at 18, 20, 22; then the ack of odd
    // k >= 5 at k+18 is reported at k+19, every 2 units, always with RTT 18.
    assert_eq!(
        &acks[..3],
        &[
            (18.0, 16.0 / 128.0),
            (20.0, 17.0 / 128.0),
            (22.0, 18.0 / 128.0)
        ]
    );
    for (j, &(t, r)) in acks[3..].iter().enumerate() {
        assert_eq!((t, r), (24.0 + 2.0 * j as f64, 18.0 / 128.0), "{acks:?}");
    }
    // The first loss (k=4) arrives at 4 + 19 = 23 and is reported at 24, in the same MI as
    // the ack of k=5; then one every 2 units, always alongside an ack.
    assert_eq!(lost[0], (24.0, 1.0));
    for w in lost.windows(2) {
        assert_eq!(w[1].0 - w[0].0, 2.0, "{lost:?}");
        assert_eq!(w[1].1, 1.0);
    }
    assert_eq!(
        &acks[3..].iter().map(|a| a.0).collect::<Vec<_>>(),
        &lost.iter().map(|l| l.0).collect::<Vec<_>>()
    );
    // The loop stops at the first MI ending at or after 128: the send of k=128 ends the MI
    // that reports the arrivals at 127 (the ack of k=109, the loss of k=108).
    assert_eq!(net.now_s(), 1.0);
    assert_eq!(*acks.last().unwrap(), (128.0, 18.0 / 128.0));
    assert_eq!(*lost.last().unwrap(), (128.0, 1.0));
    assert_eq!(acks.len(), 3 + 53);
    assert_eq!(lost.len(), 53);
}

fn aurora_env(seed: u64) -> Env {
    let cfg = ScenarioConfig::fixed_link(BW, DELAY, QUEUE, 0.0);
    let s = Scenario::new(cfg, None).expect("valid fixed link");
    Env::new(Arc::new(s), seed, 0)
}

#[test]
fn env_mi_lengths_follow_aurora() {
    for seed in 0..5 {
        let mut env = aurora_env(seed);
        let p = env.episode_params();
        assert_eq!(
            (p.bandwidth_pps, p.delay_s, p.queue_pkts, p.loss),
            (BW, DELAY, QUEUE, 0.0)
        );
        let r0 = env.network().senders()[0].rate_pps();
        // Aurora's start rate: U(0.3, 1.5) x bandwidth.
        assert!((30.0..=150.0).contains(&r0), "start rate {r0}");
        // Two warm-up MIs of 3 x delay each already ran.
        let t_start = env.network().now_s();
        assert!(
            t_start >= 2.0 * 3.0 * DELAY - 1e-12,
            "warm-up ended at {t_start}"
        );
        let rate = 50.0;
        let s1 = env.step(Action::Rate(rate));
        let gap = f64::max(1.0 / rate, 1.0 / r0);
        let d1 = s1.info.duration_s;
        assert!(
            d1 >= 3.0 * DELAY - 1e-12 && d1 < 3.0 * DELAY + gap + 1e-12,
            "seed {seed}: first MI {d1}"
        );
        assert!((s1.info.time_s - (t_start + d1)).abs() < 1e-12);
        assert_eq!(s1.info.time_s, env.network().now_s());
        assert_eq!(s1.info.rate_pps, rate);
        // Acks of the first MI come from packets that saw a queue of at most 0.01 s.
        let m1 = s1.info.mean_rtt_s;
        assert!(
            (2.0 * DELAY - 1e-12..=2.0 * DELAY + 0.01 + 1e-12).contains(&m1),
            "seed {seed}: mean RTT {m1}"
        );
        let s2 = env.step(Action::Rate(rate));
        let d2 = s2.info.duration_s;
        assert!(
            d2 >= 0.5 * m1 - 1e-12 && d2 < 0.5 * m1 + 1.0 / rate + 1e-12,
            "seed {seed}: second MI {d2}, previous mean RTT {m1}"
        );
        assert!((s2.info.time_s - s1.info.time_s - d2).abs() < 1e-12);
        assert!(!s1.truncated && !s1.terminated);
    }
}

#[test]
fn env_steady_state_matches_the_link_model() {
    let mut env = aurora_env(7);
    // Let the start rate's queue drain.
    for _ in 0..20 {
        env.step(Action::Rate(50.0));
    }
    let (mut acked, mut dur) = (0.0, 0.0);
    for _ in 0..100 {
        let s = env.step(Action::Rate(50.0));
        let i = s.info;
        assert_eq!(i.capacity_pps, BW);
        assert_eq!(i.base_rtt_s, 2.0 * DELAY);
        assert_eq!(i.loss, 0.0);
        if i.mean_rtt_s > 0.0 {
            assert!((i.mean_rtt_s - 0.1).abs() < 1e-12, "{i:?}");
            // Then the MI lasts half an RTT (plus the wait for the crossing event).
            assert!(i.duration_s >= 0.05 - 1e-12);
        }
        // `throughput_pps` is the delivered rate, acked / duration. The default `aurora`
        // metrics' recv rate counts one packet fewer: 8 * (bytes_acked - 1500) / dur in bits,
        // i.e. (acked - 1) / dur packets/s = throughput_pps - 1 / dur (negative when nothing
        // was acknowledged).
        assert!(i.duration_s > 0.0, "{i:?}");
        let acked_pkts = (i.throughput_pps * i.duration_s).round();
        assert!(
            (i.throughput_pps - acked_pkts / i.duration_s).abs() < 1e-9,
            "{i:?}"
        );
        let metric = (acked_pkts - 1.0) / i.duration_s;
        assert!((i.metric_thr_pps - metric).abs() < 1e-9, "{i:?}");
        // Aurora's reward from the MI's own statistics, with the metric throughput.
        let r = 0.001 * (10.0 * i.metric_thr_pps - 1000.0 * i.mean_rtt_s - 2000.0 * i.loss);
        assert!((s.reward - r).abs() < 1e-12 && s.reward == i.reward);
        // The utilization is the delivered rate over the capacity.
        assert!((i.utilization - i.throughput_pps / BW).abs() < 1e-12);
        acked += i.throughput_pps * i.duration_s;
        dur += i.duration_s;
    }
    let thr = acked / dur;
    assert!((thr - 50.0).abs() < 2.0, "throughput {thr}");

    let (mut acked, mut lost, mut dur) = (0.0, 0.0, 0.0);
    for _ in 0..20 {
        env.step(Action::Rate(200.0));
    }
    for _ in 0..200 {
        let s = env.step(Action::Rate(200.0));
        let i = s.info;
        let a = i.throughput_pps * i.duration_s;
        acked += a;
        // loss = lost / (lost + acked)  ->  lost = loss * acked / (1 - loss).
        if i.loss < 1.0 {
            lost += i.loss * a / (1.0 - i.loss);
        }
        dur += i.duration_s;
        if i.mean_rtt_s > 0.0 {
            assert!(
                i.mean_rtt_s >= 0.105 - 1e-9 && i.mean_rtt_s <= 0.11 + 1e-9,
                "{i:?}"
            );
        }
    }
    let thr = acked / dur;
    assert!((thr - 100.0).abs() < 3.0, "throughput {thr}");
    let loss = lost / (lost + acked);
    assert!((loss - 0.5).abs() < 0.02, "loss {loss}");
}
