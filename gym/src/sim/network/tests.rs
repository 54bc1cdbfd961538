//! Unit tests of the event loop: against the plain one-event-at-a-time loop, old snapshots,
//! and the packets a link delivers, queues and drops.

use super::*;
use crate::cc::ClassicCc;
use crate::link::LinkParams;
use crate::sim::Pacing;
use mocc_policy::BYTES_PER_PACKET;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

#[test]
fn snapshots_from_before_classic_controllers_still_load() {
    // A network mid-run, serialized, with the fields classic controllers added removed.
    let mut n = net(150.0, 0.05);
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    n.run_until(0.5, &mut rng, |_, _| {});
    let mut v = serde_json::to_value(&n).unwrap();
    let senders = v["senders"].as_array_mut().unwrap();
    for s in senders.iter_mut() {
        let s = s.as_object_mut().unwrap();
        for k in [
            "cc",
            "delivered",
            "delivered_time_s",
            "window_blocked",
            "last_send_s",
        ] {
            assert!(s.remove(k).is_some(), "{k}");
        }
    }
    let mut old: Network = serde_json::from_value(v).expect("old snapshot loads");
    let (mut a, mut b) = (rng.clone(), rng);
    n.run_until(2.0, &mut a, |_, _| {});
    old.run_until(2.0, &mut b, |_, _| {});
    assert_eq!(n.senders()[0].totals(), old.senders()[0].totals());
    assert_eq!(n.now_s(), old.now_s());
}

/// The plain event loop, every receiver arrival its own step, with the next event picked as
/// before receiver arrivals were skipped: the oracle for `run_until`.
fn run_until_one_event_at_a_time<R: Rng>(
    n: &mut Network,
    end_s: f64,
    rng: &mut R,
    mut on_mi_end: impl FnMut(&mut Network, usize),
) {
    while n.now_s < end_s {
        let mut next = (f64::INFINITY, usize::MAX, EventKind::Send);
        for (i, s) in n.senders.iter().enumerate() {
            let recv = s.at_receiver.front().copied().unwrap_or(f64::INFINITY);
            let ack = s.inflight.front().map_or(f64::INFINITY, |p| p.arrival_s);
            let (t, kind) = if recv <= ack && recv <= s.next_send_s && recv.is_finite() {
                (recv, EventKind::Receiver)
            } else if ack <= s.next_send_s && ack.is_finite() {
                (ack, EventKind::Ack)
            } else {
                (s.next_send_s, EventKind::Send)
            };
            if t < next.0 {
                next = (t, i, kind);
            }
        }
        let (t, i, kind) = next;
        if !t.is_finite() {
            n.now_s = n.now_s.max(end_s);
            break;
        }
        n.now_s = t;
        match kind {
            EventKind::Receiver => {
                n.senders[i].at_receiver.pop_front();
            }
            EventKind::Ack => n.senders[i].on_ack(t, &n.link),
            EventKind::Send => n.send(i, t, rng),
        }
        n.counters.events += 1;
        for j in 0..n.senders.len() {
            if n.now_s >= n.senders[j].mi_end_s {
                n.senders[j].mi_end_s = f64::INFINITY;
                on_mi_end(n, j);
            }
        }
    }
}

/// Three senders (one Cubic, one on/off) on a small noisy queue with aggregated acks, so
/// arrivals come out of order and at equal times; MIs of each sender's own length, some set
/// to end in the past.
fn busy_network() -> Network {
    let link = Link::fixed(LinkParams {
        bandwidth_pps: 300.0,
        delay_s: 0.02,
        queue_pkts: 6.0,
        loss: 0.02,
    })
    .with_latency_noise(0.3)
    .with_host_noise(0.0005, 0.002);
    let mut cubic = Sender::new(100.0, Pacing::Continuous, 0.3);
    cubic.set_classic(ClassicCc::new(crate::cc::ClassicKind::Cubic));
    // Without an MI clock, leaving at 4 s.
    let mut leaving = Sender::new(60.0, Pacing::Continuous, 0.5);
    leaving.set_stop(4.0);
    let senders = vec![
        Sender::new(180.0, Pacing::Continuous, 0.0),
        cubic,
        Sender::new(
            250.0,
            Pacing::OnOff {
                on_s: 0.4,
                off_s: 0.3,
            },
            0.1,
        ),
        leaving,
    ];
    let mut n = Network::new(link, senders);
    for i in 0..3 {
        n.set_mi_end(i, 0.05 * (i + 1) as f64);
    }
    n
}

#[test]
fn skipping_receiver_arrivals_changes_nothing() {
    let (mut lazy, mut eager) = (busy_network(), busy_network());
    let (mut rng_lazy, mut rng_eager) =
        (ChaCha8Rng::seed_from_u64(5), ChaCha8Rng::seed_from_u64(5));
    let mut log_lazy = Vec::new();
    let mut log_eager = Vec::new();
    let mi_end = |log: &mut Vec<(usize, f64, u64)>, n: &mut Network, i: usize| {
        let now = n.now_s();
        log.push((i, now, n.counters().events));
        let mi = n.senders[i].close_mi(now);
        // Every seventh MI ends "in the past": the next event closes it.
        let len = if log.len().is_multiple_of(7) {
            -0.001
        } else {
            0.01 + 0.5 * mi.rtt.mean_s
        };
        n.set_mi_end(i, now + len);
        n.senders[i].set_rate_pps(150.0 + 20.0 * (log.len() % 9) as f64);
    };
    let mut end = 0.0;
    while end < 6.0 {
        end += 0.037;
        lazy.run_until(end, &mut rng_lazy, |n, i| mi_end(&mut log_lazy, n, i));
        run_until_one_event_at_a_time(&mut eager, end, &mut rng_eager, |n, i| {
            mi_end(&mut log_eager, n, i)
        });
        assert_eq!(lazy, eager, "state after running until {end}");
    }
    assert_eq!(log_lazy, log_eager);
    assert!(log_lazy.len() > 300, "{} MIs", log_lazy.len());
    let lost: u64 = lazy.senders().iter().map(|s| s.totals().lost).sum();
    assert!(lost > 50, "the queue overflows ({lost} lost)");
    // Everyone leaves; running to the end drains what is in flight.
    for n in [&mut lazy, &mut eager] {
        for s in n.senders_mut() {
            s.set_stop(6.5);
        }
    }
    lazy.run_until(f64::INFINITY, &mut rng_lazy, |n, i| {
        mi_end(&mut log_lazy, n, i)
    });
    run_until_one_event_at_a_time(&mut eager, f64::INFINITY, &mut rng_eager, |n, i| {
        mi_end(&mut log_eager, n, i)
    });
    assert_eq!(lazy, eager);
    assert_eq!(log_lazy, log_eager);
    assert_eq!(lazy.now_s(), f64::INFINITY);
    assert!(lazy.senders().iter().all(|s| s.in_flight() == 0));
}

#[test]
fn skipped_receiver_arrivals_do_not_pile_up_without_a_bound() {
    // 3,000 pkt/s with no MI clock, run for 5 s in one call: 15,000 arrivals before the
    // bound, of which at most the limit (and what is in flight) are held.
    let link = Link::fixed(LinkParams {
        bandwidth_pps: 4000.0,
        delay_s: 0.01,
        queue_pkts: 50.0,
        loss: 0.0,
    });
    let make = || {
        Network::new(
            link.clone(),
            vec![Sender::new(3000.0, Pacing::Continuous, 0.0)],
        )
    };
    let (mut lazy, mut eager) = (make(), make());
    let (mut a, mut b) = (ChaCha8Rng::seed_from_u64(2), ChaCha8Rng::seed_from_u64(2));
    lazy.run_until(5.0, &mut a, |_, _| {});
    run_until_one_event_at_a_time(&mut eager, 5.0, &mut b, |_, _| {});
    assert_eq!(lazy, eager);
    let held = lazy.senders()[0].at_receiver.capacity();
    assert!(held <= 2 * PENDING_ARRIVALS_LIMIT, "capacity {held}");
    assert!(lazy.senders()[0].totals().sent > 14_000);
}

fn net(rate: f64, delay_s: f64) -> Network {
    let link = Link::fixed(LinkParams {
        bandwidth_pps: 100.0,
        delay_s,
        queue_pkts: 2.0,
        loss: 0.0,
    });
    Network::new(link, vec![Sender::new(rate, Pacing::Continuous, 0.0)])
}

#[test]
fn under_capacity_every_rtt_is_propagation() {
    // 50 pkt/s on a 100 pkt/s link: the queue empties between packets.
    let mut n = net(50.0, 0.055);
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    n.run_until(1.005, &mut rng, |_, _| {});
    let now = n.now_s();
    let mi = n.senders[0].close_mi(now);
    // Sends at 0.02k; acks 0.11 s later. Events up to 1.005 (sends k <= 50, acks k <= 44),
    // then the crossing event: the ack of packet 45 at 1.01.
    assert_eq!(mi.bytes_sent / BYTES_PER_PACKET, 50.0);
    assert_eq!(mi.bytes_acked / BYTES_PER_PACKET, 45.0);
    assert_eq!(mi.bytes_lost, 0.0);
    assert!((mi.rtt.mean_s - 0.11).abs() < 1e-12);
    assert!((n.now_s() - 1.01).abs() < 1e-9);
}

#[test]
fn over_capacity_drops_and_queues() {
    // 200 pkt/s into 100 pkt/s with a 2-packet queue: every other packet is dropped once
    // the queue is full; accepted ones wait ~1/bw.
    let mut n = net(200.0, 0.05);
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    n.run_until(2.0, &mut rng, |_, _| {});
    let now = n.now_s();
    let mi = n.senders[0].close_mi(now);
    let acked = mi.bytes_acked / BYTES_PER_PACKET;
    let lost = mi.bytes_lost / BYTES_PER_PACKET;
    let sent = mi.bytes_sent / BYTES_PER_PACKET;
    // 400 sends up to t = 2.0, plus possibly the crossing event.
    assert!((400.0..=401.0).contains(&sent), "sent {sent}");
    // Throughput is capped by the link: ~100 pkt/s.
    assert!((acked / 1.9 - 100.0).abs() < 3.0, "acked {acked}");
    assert!((lost / (acked + lost) - 0.5).abs() < 0.02, "lost {lost}");
    assert!(mi.rtt.mean_s > 0.1 && mi.rtt.mean_s <= 0.1 + 0.02 + 1e-12);
}

#[test]
fn a_capacity_train_measures_the_link_beside_a_busy_peer() {
    // A 1,000 pkt/s link shared by a learned sender at 300 pkt/s that sends 3 packets back to
    // back at each 0.1 s MI's start, and a constant 800 pkt/s sender: the queue grows (by
    // 100 packets a second, short of its 400), yet the train's packets leave it 1 ms apart,
    // the link's rate and not the sender's share.
    let link = Link::fixed(LinkParams {
        bandwidth_pps: 1000.0,
        delay_s: 0.02,
        queue_pkts: 400.0,
        loss: 0.0,
    });
    let mut learned = Sender::new(300.0, Pacing::Continuous, 0.0);
    learned.set_capacity_train(3);
    let peer = Sender::new(800.0, Pacing::Continuous, 0.0);
    let mut n = Network::new(link, vec![learned, peer]);
    n.set_mi_end(0, 0.1);
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let mut mis = Vec::new();
    n.run_until(3.0, &mut rng, |net, i| {
        if i == 0 {
            let now = net.now_s();
            mis.push(net.senders_mut()[0].close_mi(now));
            net.set_mi_end(0, now + 0.1);
        }
    });
    assert!(mis.len() >= 29, "{}", mis.len());
    // Trains are acknowledged about every 0.1 s (later as the queue grows): nearly every MI
    // after the first round trip holds one, each measuring the link exactly, and the two
    // packets that followed the first give no RTT sample.
    let timed: Vec<_> = mis[2..]
        .iter()
        .filter(|mi| mi.train_pps.is_some())
        .collect();
    assert!(
        timed.len() + 3 >= mis.len() - 2,
        "{} of {}",
        timed.len(),
        mis.len() - 2
    );
    for mi in timed {
        let pps = mi.train_pps.unwrap_or_default();
        assert!((pps - 1000.0).abs() < 1e-6, "{pps}");
        let acked = (mi.bytes_acked / BYTES_PER_PACKET) as u64;
        assert!(mi.rtt.count + 2 <= acked, "{mi:?}");
    }
    // The train counts toward the rate: 30 packets per 0.1 s MI, 3 of them at its start.
    let sent: f64 = mis.iter().map(|m| m.bytes_sent / BYTES_PER_PACKET).sum();
    let until = mis.last().map_or(0.0, |m| m.send_end_s);
    assert!((sent - 300.0 * until).abs() <= 3.0, "{sent} by {until}");
    // A sender without trains measures none.
    let mut plain = net(50.0, 0.01);
    plain.run_until(1.0, &mut rng, |_, _| {});
    let now = plain.now_s();
    assert_eq!(plain.senders_mut()[0].close_mi(now).train_pps, None);
}
