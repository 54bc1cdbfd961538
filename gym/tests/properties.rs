//! Invariants over random fixed links, rate sequences and actions.

use mocc_gym::{
    Action, Env, Link, LinkParams, Network, Pacing, RewardKind, Scenario, ScenarioConfig, Sender,
    StepInfo,
};
use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;

fn link_params() -> impl Strategy<Value = LinkParams> {
    (20.0f64..1000.0, 0.005f64..0.5, 1u32..500, 0.0f64..0.2).prop_map(|(bw, delay, q, loss)| {
        LinkParams {
            bandwidth_pps: bw,
            delay_s: delay,
            queue_pkts: f64::from(q),
            loss,
        }
    })
}

fn fixed_link_config(p: &LinkParams) -> ScenarioConfig {
    ScenarioConfig::fixed_link(p.bandwidth_pps, p.delay_s, p.queue_pkts, p.loss)
}

fn info_fields(i: &StepInfo) -> [f64; 12] {
    i.fields()
}

fn check_network_step(net: &Network, prev_now: f64) -> Result<(), TestCaseError> {
    let now = net.now_s();
    prop_assert!(
        now >= prev_now,
        "time went backwards: {} < {}",
        now,
        prev_now
    );
    let link = net.link();
    let q = link.queue_delay_s(now);
    prop_assert!(q >= 0.0);
    prop_assert!(
        q <= link.max_queue_delay_s() + 1e-12,
        "queue delay {} above queue/bw {}",
        q,
        link.max_queue_delay_s()
    );
    for (i, s) in net.senders().iter().enumerate() {
        let t = s.totals();
        prop_assert_eq!(
            t.sent,
            t.acked + t.lost + s.in_flight() as u64,
            "sender {} not conserved: {:?}, in flight {}",
            i,
            t,
            s.in_flight()
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Several senders with random rates changed at random times on one random link.
    #[test]
    fn network_conserves_packets_and_bounds_the_queue(
        params in link_params(),
        starts in prop::collection::vec((10.0f64..2000.0, 0.0f64..1.0), 1..4),
        steps in prop::collection::vec((0usize..4, 10.0f64..2000.0, 0.001f64..0.3), 10..300),
        seed in any::<u64>(),
    ) {
        let senders: Vec<Sender> = starts
            .iter()
            .map(|&(rate, start)| Sender::new(rate, Pacing::Continuous, start))
            .collect();
        let n = senders.len();
        let mut net = Network::new(Link::fixed(params), senders);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut prev = net.now_s();
        let mut closed = vec![(0u64, 0u64, 0u64); n];
        for (who, rate, dt) in steps {
            let i = who % n;
            net.senders_mut()[i].set_rate_pps(rate);
            let end = net.now_s() + dt;
            net.run_until(end, &mut rng, |_, _| {});
            prop_assert!(net.now_s() >= end);
            check_network_step(&net, prev)?;
            prev = net.now_s();
            // The MI counts of every sender add up to its totals.
            let now = net.now_s();
            let mi = net.senders_mut()[i].close_mi(now);
            let c = &mut closed[i];
            c.0 += (mi.bytes_sent / 1500.0).round() as u64;
            c.1 += (mi.bytes_acked / 1500.0).round() as u64;
            c.2 += (mi.bytes_lost / 1500.0).round() as u64;
            prop_assert!(mi.rtt.count == (mi.bytes_acked / 1500.0).round() as u64);
            if mi.rtt.count > 0 {
                // RTT of an acked packet: propagation both ways plus at most a full queue less
                // its own service time.
                let base = 2.0 * params.delay_s;
                let hi = base + (params.queue_pkts - 1.0) / params.bandwidth_pps;
                prop_assert!(mi.rtt.mean_s >= base - 1e-9 && mi.rtt.mean_s <= hi + 1e-9,
                    "mean RTT {} outside [{}, {}]", mi.rtt.mean_s, base, hi);
            }
        }
        for (i, s) in net.senders().iter().enumerate() {
            let now = net.now_s();
            let mut s = s.clone();
            let mi = s.close_mi(now);
            let c = closed[i];
            let t = s.totals();
            prop_assert_eq!(c.0 + (mi.bytes_sent / 1500.0).round() as u64, t.sent);
            prop_assert_eq!(c.1 + (mi.bytes_acked / 1500.0).round() as u64, t.acked);
            prop_assert_eq!(c.2 + (mi.bytes_lost / 1500.0).round() as u64, t.lost);
        }
    }

    /// The env under random Aurora actions or raw rates with the MOCC reward.
    #[test]
    fn env_steps_are_finite_ordered_and_mocc_reward_bounded(
        params in link_params(),
        objective in (0.01f64..1.0, 0.01f64..1.0, 0.01f64..1.0),
        actions in prop::collection::vec(
            prop_oneof![
                (-20.0f64..20.0).prop_map(Action::Delta),
                (5.0f64..2000.0).prop_map(Action::Rate),
                Just(Action::Delta(f64::NAN)),
                Just(Action::Delta(f64::INFINITY)),
                Just(Action::Delta(f64::NEG_INFINITY)),
            ],
            50..250,
        ),
        seed in any::<u64>(),
    ) {
        let mut cfg = fixed_link_config(&params);
        cfg.reward = RewardKind::Mocc;
        cfg.episode_mis = 100;
        let scenario = Arc::new(Scenario::new(cfg, None).expect("valid scenario"));
        let mut env = Env::new(scenario, seed, 0);
        let sum = objective.0 + objective.1 + objective.2;
        env.set_objective([objective.0 / sum, objective.1 / sum, objective.2 / sum]);
        prop_assert!(env.observation().iter().all(|x| x.is_finite()));
        let mut prev = env.network().now_s();
        for (k, action) in actions.into_iter().enumerate() {
            let step = env.step(action);
            let i = step.info;
            prop_assert!(info_fields(&i).iter().all(|x| x.is_finite()), "step {}: {:?}", k, i);
            prop_assert!(env.observation().iter().all(|x| x.is_finite()), "step {}", k);
            prop_assert!(i.time_s >= prev, "step {}: time {} < {}", k, i.time_s, prev);
            prop_assert_eq!(i.time_s, env.network().now_s());
            prop_assert!(i.duration_s >= 0.0);
            prop_assert!((0.0..=1.0).contains(&i.loss));
            prop_assert!(
                (-1e-12..=1.0 + 1e-12).contains(&step.reward),
                "step {}: MOCC reward {} outside [0, 1]", k, step.reward
            );
            prop_assert_eq!(step.reward, i.reward);
            // Default (`aurora`) metrics: the metric throughput counts one acknowledged packet
            // fewer than the delivered rate, (acked - 1) / dur = throughput_pps - 1 / dur.
            prop_assert!(i.duration_s > 0.0, "step {}: {:?}", k, i);
            prop_assert!(
                (i.metric_thr_pps - (i.throughput_pps - 1.0 / i.duration_s)).abs()
                    <= 1e-9 * (1.0 + i.throughput_pps.abs() + 1.0 / i.duration_s),
                "step {}: {:?}", k, i
            );
            // The MOCC reward uses the delivered rate over the capacity (the utilization),
            // base RTT over mean RTT (0 without samples) and 1 - loss, each clamped to [0, 1].
            let w = env.objective();
            let lat = if i.mean_rtt_s > 0.0 {
                (i.base_rtt_s / i.mean_rtt_s).clamp(0.0, 1.0)
            } else {
                0.0
            };
            let expected = w[0] * i.utilization.clamp(0.0, 1.0) + w[1] * lat + w[2] * (1.0 - i.loss);
            prop_assert!(
                (step.reward - expected).abs() < 1e-12,
                "step {}: reward {} vs {}", k, step.reward, expected
            );
            check_network_step(env.network(), prev)?;
            prev = i.time_s;
            if step.truncated {
                prop_assert_eq!(env.steps(), 100);
                env.reset(None);
                prev = env.network().now_s();
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// With `monitor_interval.min_packets`, every MI lasts at least that many packets at its
    /// rate, whatever the rate and the RTT.
    #[test]
    fn mi_floor_holds_at_every_rate(
        params in link_params(),
        min_packets in 2.0f64..20.0,
        actions in prop::collection::vec(-20.0f64..20.0, 20..120),
        seed in any::<u64>(),
    ) {
        let mut cfg = fixed_link_config(&params);
        cfg.monitor_interval.min_packets = min_packets;
        let scenario = Arc::new(Scenario::new(cfg, None).expect("valid scenario"));
        let mut env = Env::new(scenario, seed, 0);
        for (k, a) in actions.into_iter().enumerate() {
            let i = env.step(Action::Delta(a)).info;
            let floor_s = min_packets / i.rate_pps;
            prop_assert!(
                i.duration_s >= floor_s * (1.0 - 1e-9),
                "step {}: MI {} s below {} packets at {} pkt/s", k, i.duration_s, min_packets, i.rate_pps
            );
        }
    }
}

/// The default (Aurora) scenario draws its link per episode; the same invariants hold there.
#[test]
fn aurora_default_scenario_invariants() {
    let scenario = Arc::new(Scenario::new(ScenarioConfig::default(), None).unwrap());
    let mut rng = ChaCha8Rng::seed_from_u64(99);
    for index in 0..4 {
        let mut env = Env::new(scenario.clone(), 1234, index);
        let p = env.episode_params();
        assert!((100.0..500.0).contains(&p.bandwidth_pps), "{p:?}");
        assert!((0.05..0.5).contains(&p.delay_s), "{p:?}");
        assert!(
            p.queue_pkts >= 1.0 && p.queue_pkts <= 1.0 + 8f64.exp(),
            "{p:?}"
        );
        assert_eq!(p.queue_pkts, p.queue_pkts.floor());
        assert!((0.0..0.05).contains(&p.loss), "{p:?}");
        let mut prev = env.network().now_s();
        for _ in 0..400 {
            let a = rand::Rng::random_range(&mut rng, -10.0..10.0);
            let step = env.step(Action::Delta(a));
            let i = step.info;
            assert!(info_fields(&i).iter().all(|x| x.is_finite()), "{i:?}");
            assert!(env.observation().iter().all(|x| x.is_finite()));
            assert!(i.time_s >= prev);
            prev = i.time_s;
            // The rule keeps the rate within [40, 1000].
            assert!((40.0..=1000.0).contains(&i.rate_pps), "{i:?}");
            let q = env.network().link().queue_delay_s(i.time_s);
            assert!(q <= env.network().link().max_queue_delay_s() + 1e-12);
        }
    }
}
