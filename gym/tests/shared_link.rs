//! Several learned senders on one link: lanes that become ready at their own times, packet
//! conservation, determinism for any thread count, departures, and random path changes.

use mocc_gym::{Scenario, VecEnv};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::Path;
use std::sync::Arc;

const SHARED: &str = "
link:
  bandwidth_pps: {min: 300, max: 900}
  delay_s: {min: 0.01, max: 0.05}
  queue_pkts: {min: 10, max: 80}
  loss: 0.001
  changes: {every_s: {min: 1, max: 3}, bandwidth_factor: {min: 0.5, max: 1.5}, delay_factor: {min: 0.5, max: 2}, outage_probability: 0.5, outage_s: {min: 0.05, max: 0.2}}
  jitter_s: {min: 0, max: 0.001}
  ack_aggregation_s: 0.0005
mi_jitter: 0.05
senders:
  - controller: agent
  - controller: agent
    start_time_s: {min: 0.2, max: 1.5}
  - controller: agent
    probability: 0.5
    start_time_s: 0.5
    stop_time_s: {min: 2, max: 4}
  - controller: cubic
    probability: 0.5
episode_mis: 80
reward: mocc
reward_terms: {fair_share: 0.3, stability: 0.1}
monitor_interval: {min_packets: 10}
";

fn scenario(yaml: &str) -> Arc<Scenario> {
    Arc::new(
        Scenario::from_yaml_str(yaml, Path::new("shared.yaml")).unwrap_or_else(|e| panic!("{e}")),
    )
}

/// Steps `envs` envs for `steps` steps with random deltas for the ready lanes; returns every
/// completed lane's (step, lane, reward) and checks the lane protocol on the way.
fn drive(threads: usize, envs: usize, steps: usize) -> Vec<(usize, usize, f32)> {
    let mut v = VecEnv::new(scenario(SHARED), envs, 9, threads).unwrap();
    assert_eq!(v.slots_per_env(), 3);
    let lanes = v.lanes();
    let mut open = vec![false; lanes];
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let mut out = Vec::new();
    let mut partial_steps = 0;
    for t in 0..steps {
        let ready = v.ready_lanes().to_vec();
        assert!(!ready.is_empty(), "step {t}: no lane ready");
        if ready.len() < lanes {
            partial_steps += 1;
        }
        for &l in &ready {
            assert!(!open[l], "lane {l} is ready with a decision still open");
            open[l] = true;
        }
        let actions: Vec<f32> = ready.iter().map(|_| rng.random_range(-2.0..2.0)).collect();
        let step = v.step(&actions).unwrap();
        for (l, lane_open) in open.iter_mut().enumerate() {
            if step.completed[l] {
                assert!(
                    *lane_open,
                    "step {t}: lane {l} completed an MI it did not start"
                );
                *lane_open = false;
                assert!(step.rewards[l].is_finite());
                out.push((t, l, step.rewards[l]));
            }
        }
        for env in v.envs() {
            for s in env.network().senders() {
                let n = s.totals();
                assert_eq!(n.sent, n.acked + n.lost + s.in_flight() as u64);
            }
        }
    }
    assert!(partial_steps > steps / 2, "lanes move at their own times");
    out
}

#[test]
fn lanes_act_at_their_own_times_and_conserve_packets() {
    let completions = drive(2, 3, 1500);
    let mut per_lane = [0usize; 9];
    for &(_, l, _) in &completions {
        per_lane[l] += 1;
    }
    assert!(per_lane.iter().all(|&n| n > 50), "{per_lane:?}");
    // Lanes of one env complete different numbers of MIs: they are not in lockstep.
    assert_ne!(per_lane[0], per_lane[1]);
}

#[test]
fn a_multi_flow_batch_is_the_same_for_any_thread_count() {
    assert_eq!(drive(1, 3, 600), drive(2, 3, 600));
}

#[test]
fn a_departing_flow_ends_its_trajectory_and_stops_sending() {
    let yaml = SHARED.replace(
        "probability: 0.5\n    start_time_s: 0.5",
        "start_time_s: 0.5",
    );
    let mut v = VecEnv::new(scenario(&yaml), 1, 3, 1).unwrap();
    let mut ended_at = None;
    for _ in 0..3000 {
        let n = v.ready_lanes().len();
        let step = v.step(&vec![0.0; n]).unwrap();
        if step.completed[2] && step.truncated[2] {
            ended_at = Some(step.infos[2].time_s);
            break;
        }
    }
    let t = ended_at.expect("the third flow leaves between 2 and 4 s");
    assert!((2.0..4.5).contains(&t), "left at {t}");
    let env = &v.envs()[0];
    let sent = env.network().senders()[2].totals().sent;
    // Another few steps: the departed sender sends nothing more.
    for _ in 0..50 {
        let n = v.ready_lanes().len();
        v.step(&vec![0.0; n]).unwrap();
        if v.envs()[0].network().now_s() < t {
            break; // the episode ended and restarted
        }
        assert_eq!(v.envs()[0].network().senders()[2].totals().sent, sent);
        assert!(!v.ready_lanes().contains(&2));
    }
}

#[test]
fn path_changes_are_drawn_within_their_ranges() {
    let s = scenario(SHARED);
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let params = s.sample_link(&mut rng);
    let link = s.draw_link(params, &mut rng);
    let mut changes = 0;
    let mut t = 0.0;
    let mut last = link.params_at(0.0);
    assert_eq!(last.bandwidth_pps, params.bandwidth_pps);
    let mut down = 0.0;
    let mut served = 0.0;
    while t < 120.0 {
        t += 0.001;
        let p = link.params_at(t - 0.0005);
        if !link.is_down(t - 0.0005) {
            served += p.bandwidth_pps * 0.001;
        }
        if p != last {
            changes += 1;
            let bw = p.bandwidth_pps / params.bandwidth_pps;
            let d = p.delay_s / params.delay_s;
            assert!(
                (0.5..=1.5).contains(&bw) && (0.5..=2.0).contains(&d),
                "{p:?}"
            );
            last = p;
        }
        if link.is_down(t) {
            down += 0.001;
        }
    }
    // A change every 1-3 s: 40-120 changes in 120 s; about half with a 50-200 ms outage.
    assert!((40..=120).contains(&changes), "{changes} changes");
    assert!(down > 0.5 && down < 12.0, "{down} s down");
    // The capacity is the time-integrated bandwidth with outages counted as zero (a
    // midpoint sum on a 1 ms grid).
    let capacity = link.capacity_pps(0.0, 120.0);
    assert!(
        (capacity * 120.0 / served - 1.0).abs() < 2e-3,
        "{capacity} vs {}",
        served / 120.0
    );
}

#[test]
fn step_driving_decides_for_every_learned_sender() {
    let yaml = "
link: {bandwidth_pps: 500, delay_s: 0.02, queue_pkts: 50, loss: 0}
senders:
  - {controller: agent, start_rate: {pps: 100}}
  - {controller: agent, start_rate: {pps: 100}, start_time_s: 0.3}
monitor_interval: {min_packets: 10}
";
    let mut env = mocc_gym::Env::new(scenario(yaml), 0, 0);
    let mut calls = [0usize; 2];
    for _ in 0..60 {
        let step = env.step_driving(|_, k| {
            calls[k] += 1;
            mocc_gym::Action::Delta(if k == 1 { 1.0 } else { 0.0 })
        });
        assert!(step.info.time_s > 0.0);
    }
    assert_eq!(calls[0], 60, "one decision of the first sender per step");
    assert!(calls[1] > 10, "{calls:?}");
    let rates: Vec<f64> = env
        .network()
        .senders()
        .iter()
        .map(|s| s.rate_pps())
        .collect();
    assert_eq!(rates[0], 100.0);
    assert!(rates[1] > 100.0 * 1.025f64.powi(9), "{rates:?}");
}

/// The MOCC reward of `info` by hand, dividing delivery by `capacity_pps`.
fn mocc_by_hand(info: &mocc_gym::StepInfo, capacity_pps: f64, w: [f64; 3]) -> f64 {
    let thr = (info.throughput_pps / capacity_pps).clamp(0.0, 1.0);
    let lat = if info.mean_rtt_s > 0.0 {
        (info.base_rtt_s / info.mean_rtt_s).clamp(0.0, 1.0)
    } else {
        0.0
    };
    w[0] * thr + w[1] * lat + w[2] * (1.0 - info.loss).clamp(0.0, 1.0)
}

/// Asserts that lane `lane`'s MI reward is the MOCC reward by hand with the capacity shared by
/// `flows` flows.
fn assert_reward_by_hand(info: &mocc_gym::StepInfo, flows: f64, w: [f64; 3], lane: &str) {
    let expect = mocc_by_hand(info, info.capacity_pps / flows, w);
    assert!(
        (info.reward - expect).abs() < 1e-9,
        "{lane} at {} s ({flows} flows): reward {} != {expect}",
        info.time_s,
        info.reward
    );
}

/// Two learned flows for the whole run on a fixed link; `capacity` is the `reward_capacity`.
fn two_flows(capacity: &str) -> String {
    format!(
        "link: {{bandwidth_pps: 400, delay_s: 0.02, queue_pkts: 30}}
senders: [{{controller: agent}}, {{controller: agent}}]
reward: mocc
reward_capacity: {capacity}
monitor_interval: {{min_packets: 10}}
"
    )
}

#[test]
fn the_fair_share_capacity_divides_throughput_by_the_flows_on_the_link() {
    for (capacity, flows) in [("fair_share", 2.0), ("link", 1.0)] {
        let mut v = VecEnv::new(scenario(&two_flows(capacity)), 1, 5, 1).unwrap();
        let objectives = [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3]];
        v.set_objective(0, objectives[0]);
        v.set_objective(1, objectives[1]);
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let mut checked = 0;
        let mut above_link_share = 0;
        for _ in 0..400 {
            let n = v.ready_lanes().len();
            let actions: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0..1.5)).collect();
            let step = v.step(&actions).unwrap();
            for (l, &objective) in objectives.iter().enumerate() {
                if !step.completed[l] {
                    continue;
                }
                let info = step.infos[l];
                assert_reward_by_hand(&info, flows, objective, &format!("{capacity}: lane {l}"));
                checked += 1;
                if info.throughput_pps > info.capacity_pps / 2.0 {
                    above_link_share += 1;
                }
            }
        }
        assert!(checked > 300, "{capacity}: {checked} MIs checked");
        // Some MIs deliver more than half the link, where the two capacities differ most.
        assert!(
            above_link_share > 0,
            "{capacity}: no flow above half the link"
        );
    }
}

#[test]
fn the_fair_share_counts_every_sender_started_and_not_stopped() {
    // A learned flow from 0 s, a second one from 2 s, Cubic throughout, a constant sender that
    // stops at 4 s and a Cubic one that never takes part: 3 flows before 2 s, 4 until 4 s,
    // then 3. The learned flows hold 80 pkt/s, under C/5 = 120, where every count from 1 to 5
    // gives another reward.
    let yaml = "link: {bandwidth_pps: 600, delay_s: 0.02, queue_pkts: 40}
senders:
  - {controller: agent, start_rate: {pps: 80}}
  - {controller: agent, start_time_s: 2, start_rate: {pps: 80}}
  - controller: cubic
  - {controller: constant, start_rate: {pps: 50}, stop_time_s: 4}
  - {controller: cubic, probability: 0}
episode_mis: 100000
reward: mocc
reward_capacity: fair_share
monitor_interval: {min_packets: 10}
";
    let expected_flows = |t: f64| if (2.0..4.0).contains(&t) { 4.0 } else { 3.0 };
    let mut v = VecEnv::new(scenario(yaml), 1, 3, 1).unwrap();
    let w = [0.5, 0.3, 0.2];
    v.set_objective(0, w);
    v.set_objective(1, w);
    let mut seen = [false; 3];
    for _ in 0..3000 {
        let n = v.ready_lanes().len();
        let step = v.step(&vec![0.0; n]).unwrap();
        for l in 0..2 {
            if !step.completed[l] {
                continue;
            }
            let info = step.infos[l];
            let flows = expected_flows(info.time_s);
            assert_reward_by_hand(&info, flows, w, &format!("lane {l}"));
            if info.throughput_pps > 0.0 && info.throughput_pps < info.capacity_pps / 5.0 {
                seen[match info.time_s {
                    t if t < 2.0 => 0,
                    t if t < 4.0 => 1,
                    _ => 2,
                }] = true;
            }
        }
        if v.envs()[0].network().now_s() > 6.0 {
            break;
        }
    }
    assert_eq!(
        seen, [true; 3],
        "MIs delivering under C/5 before 2 s, between 2 and 4 s and after 4 s"
    );
}

#[test]
fn a_scenario_with_the_fair_share_capacity_round_trips() {
    let s = scenario(&two_flows("fair_share"));
    let json = serde_json::to_string(s.config()).unwrap();
    assert!(
        json.contains("\"reward_capacity\":\"fair_share\""),
        "{json}"
    );
    let back: mocc_gym::ScenarioConfig = serde_json::from_str(&json).unwrap();
    assert_eq!(&back, s.config());
    // The default is left out, so configs written before the field stay byte-identical.
    let link = serde_json::to_string(scenario(&two_flows("link")).config()).unwrap();
    assert!(!link.contains("reward_capacity"), "{link}");
}

#[test]
fn the_fair_share_capacity_is_the_link_for_a_lone_flow() {
    let lone = |capacity: &str| {
        two_flows(capacity).replace(
            "[{controller: agent}, {controller: agent}]",
            "[{controller: agent}]",
        )
    };
    let run = |yaml: String| {
        let mut v = VecEnv::new(scenario(&yaml), 2, 8, 1).unwrap();
        let mut rewards = Vec::new();
        for t in 0..300 {
            let step = v.step(&[(t % 5) as f32 - 2.0, 0.5]).unwrap();
            rewards.extend_from_slice(step.rewards);
        }
        rewards
    };
    assert_eq!(run(lone("fair_share")), run(lone("link")));
}

/// `link.cross_traffic_loss` replaces the random loss, path changes included, exactly in the
/// episodes a Cubic flow takes part in; the others keep `loss`.
#[test]
fn cross_traffic_episodes_draw_their_own_loss() {
    let s = scenario(
        "
link:
  bandwidth_pps: 400
  delay_s: 0.02
  queue_pkts: 40
  loss: {min: 0.03, max: 0.05}
  cross_traffic_loss: {min: 0, max: 0.001}
  changes: {probability: 1, every_s: {min: 1, max: 3}, bandwidth_factor: {min: 0.5, max: 1.5}}
senders:
  - controller: agent
  - {controller: cubic, probability: 0.5}
",
    );
    let mut env = mocc_gym::Env::new(s, 3, 0);
    let (mut beside, mut alone) = (0, 0);
    for episode in 0..200 {
        env.reset(None);
        let cubic = env.flows_on_link(1.0) == 2;
        let loss = env.episode_params().loss;
        let expected = if cubic { 0.0..=0.001 } else { 0.03..=0.05 };
        assert!(
            expected.contains(&loss),
            "episode {episode}: loss {loss}, Cubic {cubic}"
        );
        let link = env.network().link();
        for t in [0.0, 2.5, 7.0, 30.0] {
            assert_eq!(link.params_at(t).loss, loss, "episode {episode} at {t} s");
        }
        if cubic {
            beside += 1;
        } else {
            alone += 1;
        }
    }
    assert!(
        beside > 60 && alone > 60,
        "{beside} beside Cubic, {alone} alone"
    );
}
