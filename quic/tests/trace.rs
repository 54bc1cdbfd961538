//! The adapter against the ledger it wraps: a recorded trace of packet events fed to
//! `LearnedRate` as byte counts gives the rates and MIs `MiLedger<PolicyDriver>` gives fed the
//! same events directly, bit for bit; datagrams of other sizes count as 1500-byte packets;
//! objective changes take effect at the next event; pacing follows the rate.

use mocc_policy::{ClosedMi, Controller, MiLedger, Policy, PolicyDriver, BYTES_PER_PACKET};
use mocc_quic::{LearnedRate, MiLog, ObjectiveHandle};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

fn policy(name: &str) -> Arc<Policy> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../checkpoints")
        .join(name);
    Arc::new(Policy::load(dir).expect("export"))
}

#[derive(Debug, Clone, Copy)]
enum Event {
    Sent(f64),
    Acked(f64, f64),
    Lost(f64),
}

/// Packets per second the recorded path serves: a flow paced faster queues (so a startup
/// ends), as on a real bottleneck.
const TRACE_CAPACITY_PPS: f64 = 500.0;

/// A flow's events on a path of `rtt_s` with `loss` random loss behind a bottleneck of
/// [`TRACE_CAPACITY_PPS`], sent at the rates the ledger gives (so the trace is the one this
/// policy would see), in time order.
fn record_trace(policy: &Arc<Policy>, w: [f64; 3], rtt_s: f64, loss: f64, n: usize) -> Vec<Event> {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let controller = Controller::new(policy.clone(), w).expect("objective");
    let mut ledger = MiLedger::new(PolicyDriver::new(controller, 200.0));
    ledger.start(0.0, rtt_s / 2.0);
    let (mut t, mut events, mut pending) = (0.0, Vec::new(), Vec::<(f64, f64, bool)>::new());
    let mut served_until = 0.0f64;
    for _ in 0..n {
        t += 1.0 / ledger.rate_pps();
        // Feedback due before this send comes first.
        pending.sort_by(|a, b| a.0.total_cmp(&b.0));
        while pending.first().is_some_and(|p| p.0 <= t) {
            let (at, sample, lost) = pending.remove(0);
            if lost {
                ledger.on_lost(at, 1);
                events.push(Event::Lost(at));
            } else {
                ledger.on_acked(at, sample);
                events.push(Event::Acked(at, sample));
            }
        }
        ledger.on_sent(t);
        events.push(Event::Sent(t));
        served_until = served_until.max(t) + 1.0 / TRACE_CAPACITY_PPS;
        let sample = (served_until - t) + rtt_s * (1.0 + 0.2 * rng.random::<f64>());
        pending.push((t + sample, sample, rng.random::<f64>() < loss));
    }
    events
}

fn replay_ledger(
    policy: &Arc<Policy>,
    w: [f64; 3],
    rtt_s: f64,
    trace: &[Event],
) -> (Vec<f64>, Vec<ClosedMi>) {
    let controller = Controller::new(policy.clone(), w).expect("objective");
    let mut ledger = MiLedger::new(PolicyDriver::new(controller, 200.0));
    ledger.start(0.0, rtt_s / 2.0);
    let mut rates = Vec::new();
    let mut closed = Vec::new();
    for e in trace {
        let mi = match *e {
            Event::Sent(t) => ledger.on_sent(t),
            Event::Acked(t, rtt) => ledger.on_acked(t, rtt),
            Event::Lost(t) => ledger.on_lost(t, 1),
        };
        closed.extend(mi);
        rates.push(ledger.rate_pps());
    }
    (rates, closed)
}

fn replay_adapter(
    policy: &Arc<Policy>,
    w: [f64; 3],
    rtt_s: f64,
    trace: &[Event],
    changes: ObjectiveHandle,
) -> (Vec<f64>, Vec<ClosedMi>) {
    let log: MiLog = Arc::new(Mutex::new(Vec::new()));
    let mut rate =
        LearnedRate::new(policy.clone(), w, 200.0, changes, Some(log.clone())).expect("objective");
    rate.start(0.0, rtt_s / 2.0);
    let packet = BYTES_PER_PACKET as usize;
    let rates = trace
        .iter()
        .map(|e| {
            match *e {
                Event::Sent(t) => rate.on_sent(t, packet),
                Event::Acked(t, rtt) => rate.on_acked(t, packet, rtt),
                Event::Lost(t) => rate.on_lost(t, packet),
            }
            rate.rate_pps()
        })
        .collect();
    let closed = log.lock().expect("log").clone();
    (rates, closed)
}

#[test]
fn a_recorded_trace_gives_the_ledgers_rates_bit_for_bit() {
    for (name, w) in [
        ("mocc-pair", [0.6, 0.3, 0.1]),
        ("mocc-omega36", [0.2, 0.7, 0.1]),
        ("aurora", [0.6, 0.3, 0.1]),
    ] {
        let p = policy(name);
        let trace = record_trace(&p, w, 0.04, 0.02, 4000);
        let (direct, direct_mis) = replay_ledger(&p, w, 0.04, &trace);
        let (adapted, adapted_mis) = replay_adapter(&p, w, 0.04, &trace, ObjectiveHandle::new());
        assert_eq!(direct, adapted, "{name}");
        assert_eq!(direct_mis, adapted_mis, "{name}");
        assert!(direct_mis.len() > 50, "{name}: {} MIs", direct_mis.len());
        let distinct: std::collections::BTreeSet<u64> =
            direct.iter().map(|r| r.to_bits()).collect();
        assert!(distinct.len() > 20, "{name}: the policy changed its rate");
    }
}

#[test]
fn smaller_datagrams_count_as_whole_policy_packets() {
    // Five 1200-byte datagrams are four 1500-byte packets: the ledger sees a packet exactly
    // when the bytes carried so far make a whole one (not at the 1st datagram, at the 2nd...).
    let p = policy("aurora");
    let w = [0.6, 0.3, 0.1];
    let mut adapter =
        LearnedRate::new(p.clone(), w, 300.0, ObjectiveHandle::new(), None).expect("w");
    let controller = Controller::new(p, w).expect("w");
    let mut ledger = MiLedger::new(PolicyDriver::new(controller, 300.0));
    adapter.start(0.0, 0.02);
    ledger.start(0.0, 0.02);
    let mut carried = 0usize;
    for k in 1..=3000 {
        let t = k as f64 * 0.003;
        adapter.on_sent(t, 1200);
        carried += 1200;
        while carried >= 1500 {
            carried -= 1500;
            ledger.on_sent(t);
        }
        if k > 10 {
            let at = t + 0.0001;
            adapter.on_acked(at, 1200, 0.03);
            // Acks of the datagrams sent ten sends ago, counted the same way.
            if (k - 10) * 1200 / 1500 > (k - 11) * 1200 / 1500 {
                ledger.on_acked(at, 0.03);
            }
        }
        assert_eq!(adapter.rate_pps(), ledger.rate_pps(), "send {k}");
    }
}

#[test]
fn an_objective_change_takes_effect_at_the_next_event() {
    let p = policy("mocc-omega36");
    let (w0, w1) = ([0.8, 0.1, 0.1], [0.1, 0.8, 0.1]);
    let trace = record_trace(&p, w0, 0.05, 0.0, 3000);
    let half = trace.len() / 2;
    let changes = ObjectiveHandle::new();
    let log: MiLog = Arc::new(Mutex::new(Vec::new()));
    let mut adapter =
        LearnedRate::new(p.clone(), w0, 200.0, changes.clone(), Some(log.clone())).expect("w");
    let controller = Controller::new(p, w0).expect("w");
    let mut ledger = MiLedger::new(PolicyDriver::new(controller, 200.0));
    adapter.start(0.0, 0.025);
    ledger.start(0.0, 0.025);
    for (i, e) in trace.iter().enumerate() {
        if i == half {
            changes.set(w1).expect("valid");
            ledger
                .driver_mut()
                .controller_mut()
                .set_objective(w1)
                .expect("valid");
        }
        match *e {
            Event::Sent(t) => {
                adapter.on_sent(t, 1500);
                ledger.on_sent(t);
            }
            Event::Acked(t, rtt) => {
                adapter.on_acked(t, 1500, rtt);
                ledger.on_acked(t, rtt);
            }
            Event::Lost(t) => {
                adapter.on_lost(t, 1500);
                ledger.on_lost(t, 1);
            }
        }
        assert_eq!(adapter.rate_pps(), ledger.rate_pps(), "event {i}");
    }
    assert_eq!(adapter.controller().objective(), w1);
    assert!(changes.set([0.5, 0.5, 0.5]).is_err());
}

#[test]
fn pacing_spaces_datagrams_at_the_rate_and_catches_up_only_a_little() {
    let p = policy("aurora");
    let mut rate =
        LearnedRate::new(p, [0.6, 0.3, 0.1], 400.0, ObjectiveHandle::new(), None).expect("w");
    rate.start(1.0, 0.02);
    assert_eq!(rate.earliest_departure_s(), 1.0);
    rate.on_sent(1.0, 1500);
    let gap = 1500.0 / rate.pacing_rate_bytes_per_s();
    assert!((rate.earliest_departure_s() - (1.0 + gap)).abs() < 1e-12);
    assert!((gap - 1.0 / 400.0).abs() < 1e-12, "400 packets/s");
    // Sent 0.5 ms late: the schedule keeps its slot (catch-up), no gap is lost.
    let due = rate.earliest_departure_s();
    rate.on_sent(due + 0.0005, 1500);
    assert!((rate.earliest_departure_s() - (due + gap)).abs() < 1e-12);
    // After idle seconds, a burst of at most ten packets: this one (whose event closes the MI,
    // so the rate may change) and nine more, whose slots start 8 slots back.
    assert_eq!(mocc_quic::learned_rate::PACING_BURST_PACKETS, 10.0);
    rate.on_sent(5.0, 1500);
    let gap = 1500.0 / rate.pacing_rate_bytes_per_s();
    let next = rate.earliest_departure_s();
    assert!((next - (5.0 - 8.0 * gap)).abs() < 1e-9, "{next}");
    // Ten packets then leave back to back, the eleventh waits for its slot.
    for _ in 0..9 {
        assert!(rate.earliest_departure_s() <= 5.0 + 1e-9);
        rate.on_sent(5.0, 1500);
    }
    assert!((rate.earliest_departure_s() - (5.0 + gap)).abs() < 1e-9);
    // The window: two feedback delays at the rate, at least ten packets.
    assert_eq!(
        rate.window_bytes(0.0),
        mocc_quic::learned_rate::MIN_WINDOW_BYTES
    );
    let w = rate.window_bytes(1.0);
    assert!(
        (w - 2.0 * rate.pacing_rate_bytes_per_s()).abs() < 1e-6,
        "{w}"
    );
}

#[test]
fn the_first_round_trip_does_not_grow_the_rate() {
    // A connection that does not know its path's delay yet (QUIC's first round trip) sizes
    // its MIs by their packet floor: at 4,166 packets/s, ten MIs in 40 ms with nothing back.
    // The pair's startup holds the start rate through them, however many close.
    let log: MiLog = Arc::new(Mutex::new(Vec::new()));
    let mut rate = LearnedRate::new(
        policy("mocc-pair"),
        [0.8, 0.1, 0.1],
        4166.0,
        ObjectiveHandle::new(),
        Some(log.clone()),
    )
    .expect("objective");
    rate.start(0.0, 0.0);
    let mut t = 0.0;
    while t < 0.04 {
        rate.on_sent(t, 1472);
        t = rate.earliest_departure_s().max(t);
    }
    let closed = log.lock().expect("log").len();
    assert!(
        closed >= 5,
        "only {closed} MIs closed: the test would test nothing"
    );
    assert_eq!(rate.rate_pps(), 4166.0);
    // Its first acknowledgements (20 ms RTT, every packet delivered) let it grow.
    let sent_until = t;
    let mut acked_at = 0.02;
    while acked_at < sent_until + 0.02 {
        rate.on_acked(acked_at, 1472, 0.02);
        rate.on_sent(acked_at, 1472);
        acked_at += 1.0 / 4166.0;
    }
    assert!(rate.rate_pps() > 4166.0, "{}", rate.rate_pps());
}

#[test]
fn with_the_datagram_overhead_a_full_datagram_is_one_packet_on_the_wire() {
    // QUIC counts its packets' bytes; the bottleneck also carries 28 bytes of IPv4 and UDP
    // headers per datagram. With the overhead, 1472-byte datagrams are whole 1500-byte
    // packets: the adapter gives the rates of a ledger fed one packet per datagram.
    let p = policy("aurora");
    let w = [0.6, 0.3, 0.1];
    let overhead = mocc_quic::learned_rate::udp_overhead_bytes(false);
    assert_eq!(overhead, 28.0);
    assert_eq!(mocc_quic::learned_rate::udp_overhead_bytes(true), 48.0);
    let mut adapter = LearnedRate::new(p.clone(), w, 300.0, ObjectiveHandle::new(), None)
        .expect("w")
        .with_datagram_overhead(overhead);
    let controller = Controller::new(p, w).expect("w");
    let mut ledger = MiLedger::new(PolicyDriver::new(controller, 300.0));
    adapter.start(0.0, 0.02);
    ledger.start(0.0, 0.02);
    for k in 1..=2000 {
        let t = k as f64 * 0.003;
        adapter.on_sent(t, 1472);
        ledger.on_sent(t);
        if k > 10 {
            adapter.on_acked(t + 0.0001, 1472, 0.03);
            ledger.on_acked(t + 0.0001, 0.03);
        }
        assert_eq!(adapter.rate_pps(), ledger.rate_pps(), "send {k}");
    }
    // Pacing spaces 1472-byte datagrams at the policy's packet rate: the wire's 1500 bytes.
    let rate = adapter.rate_pps();
    assert!((adapter.pacing_rate_bytes_per_s() - rate * 1472.0).abs() < 1e-9);
    // An overhead no datagram can have is refused.
    let mut unchanged = LearnedRate::new(policy("aurora"), w, 300.0, ObjectiveHandle::new(), None)
        .expect("w")
        .with_datagram_overhead(-1.0);
    unchanged.start(0.0, 0.02);
    assert_eq!(unchanged.pacing_rate_bytes_per_s(), 300.0 * 1500.0);
}
