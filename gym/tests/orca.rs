//! Orca's hybrid in the gym (issue 63): a learned sender whose actions scale the window of the
//! Cubic it runs. Without scaling it is Cubic, packet for packet; actions that shrink or grow
//! the window move its rate the way they say; rules that mix window scaling with the rate
//! rule's parts are refused by name.

use mocc_gym::{
    Action, ClassicCc, ClassicKind, Env, Link, LinkParams, Network, Pacing, Scenario, Sender,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::path::Path;
use std::sync::Arc;

/// One learned sender with Orca's rule on a constant link without random loss.
const ORCA: &str = "link: {bandwidth_pps: 500, delay_s: 0.02, queue_pkts: 100, loss: 0}\n\
                    senders: [{controller: agent}]\n\
                    episode_mis: 400\n\
                    action: {delta_scale: 2.0, max_rate_pps: 2000, window_scale: {}}\n";

fn orca_env() -> Env {
    let s = Scenario::from_yaml_str(ORCA, Path::new("orca.yaml")).expect("Orca's scenario");
    let mut env = Env::new(Arc::new(s), 5, 0);
    env.reset(None);
    env
}

/// The window of the Cubic under the env's learned sender.
fn cwnd(env: &Env) -> f64 {
    match env.network().senders()[0].classic() {
        Some(ClassicCc::Cubic(c)) => c.cwnd(),
        other => panic!("Orca's sender runs Cubic, not {other:?}"),
    }
}

#[test]
fn without_scaling_the_sender_is_cubic_packet_for_packet() {
    let mut env = orca_env();
    let link = Link::fixed(LinkParams {
        bandwidth_pps: 500.0,
        delay_s: 0.02,
        queue_pkts: 100.0,
        loss: 0.0,
    });
    let mut cubic = Sender::new(10.0, Pacing::Continuous, 0.0);
    cubic.set_classic(ClassicCc::new(ClassicKind::Cubic));
    let mut alone = Network::new(link, vec![cubic]);
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for step in 0..200 {
        env.step(Action::Delta(0.0));
        alone.run_until(env.network().now_s(), &mut rng, |_, _| {});
        let (orca, plain) = (
            env.network().senders()[0].totals(),
            alone.senders()[0].totals(),
        );
        assert_eq!(orca, plain, "step {step} at {} s", env.network().now_s());
    }
    // The run saw Cubic's losses and back-offs, not only its slow start.
    assert!(alone.senders()[0].totals().lost > 0);
}

#[test]
fn shrinking_actions_empty_the_link_and_growing_ones_fill_its_buffer() {
    let run = |action: f64| {
        let mut env = orca_env();
        let mut last = Vec::new();
        for step in 0..150 {
            let s = env.step(Action::Delta(action));
            if step >= 100 {
                last.push(s.info);
            }
        }
        let n = last.len() as f64;
        let thr = last.iter().map(|i| i.throughput_pps).sum::<f64>() / n;
        let loss = last.iter().map(|i| i.loss).sum::<f64>() / n;
        (thr, loss, cwnd(&env))
    };
    // A quarter of the window at every decision: the window sits near its floor of 2 packets
    // and slow start regrows it to under 4 between decisions (half an RTT apart), which on a
    // 40 ms path carry about 100 packets/s, a fifth of the link (an MI's throughput counts
    // its acks over their own span, a little more or less than the MI).
    let (thr, loss, w) = run(-1.0);
    assert!(w < 4.0, "window {w}");
    assert!(thr < 0.25 * 500.0, "throughput {thr}");
    assert_eq!(loss, 0.0);
    // Four times the window at every decision: the link is full and its buffer overflows.
    let (thr, loss, w) = run(1.0);
    assert!(thr > 0.95 * 500.0, "throughput {thr}");
    assert!(loss > 0.0, "a full buffer drops packets: {loss}");
    // The growth stops at the window that paces at max_rate_pps (2000/s over a queued RTT of
    // at most 0.24 s), not beyond.
    assert!(w <= 2000.0 * 0.24 + 1.0, "window {w}");
}

#[test]
fn a_rate_action_keeps_the_window() {
    let mut kept = orca_env();
    let mut zero = orca_env();
    for _ in 0..100 {
        kept.step(Action::Rate(f64::NAN));
        zero.step(Action::Delta(0.0));
        assert_eq!(cwnd(&kept), cwnd(&zero));
    }
}

#[test]
fn window_scaling_with_a_rate_rule_part_is_refused_by_name() {
    let cases = [
        ("probe_rtt: {interval_s: 10}", "probe_rtt"),
        (
            "binomial_increase: {k: 0.5, reference_pps: 300}",
            "binomial_increase",
        ),
        ("startup: {}", "startup"),
    ];
    for (part, field) in cases {
        let yaml =
            format!("senders: [{{controller: agent}}]\naction: {{window_scale: {{}}, {part}}}\n");
        let e = Scenario::from_yaml_str(&yaml, Path::new("bad.yaml"))
            .expect_err(&yaml)
            .to_string();
        assert!(e.contains("bad.yaml") && e.contains(field), "{e}");
        assert!(e.contains("window_scale"), "{e}");
    }
    let yaml = "action: {window_scale: {max_exponent: 9}}\n";
    let e = Scenario::from_yaml_str(yaml, Path::new("bad.yaml"))
        .expect_err(yaml)
        .to_string();
    assert!(e.contains("window_scale.max_exponent"), "{e}");
    let yaml = "action: {window_scale: {}}\n\
                observation: {capacity_trains: {packets: 3, fraction: 0.9, window_s: 10}}\n";
    let e = Scenario::from_yaml_str(yaml, Path::new("bad.yaml"))
        .expect_err(yaml)
        .to_string();
    assert!(e.contains("observation.capacity_trains"), "{e}");
}
