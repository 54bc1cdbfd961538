//! Learned flows drawn per episode (`learned_flows:`): the expansion and its round trip, the
//! count of flows each episode holds, flows that arrive and leave, their MI phases, and refusals.

use mocc_gym::{Env, Scenario, ScenarioConfig, SlotPhase};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

const FLOWS: &str = "
link: {bandwidth_pps: {min: 300, max: 900}, delay_s: 0.02, queue_pkts: 60}
learned_flows:
  count: {min: 2, max: 6}
  start_time_s: {min: 0, max: 3}
  duration_s: {min: 2, max: 5}
senders:
  - {controller: cubic, probability: 0.5}
episode_mis: 60
reward: mocc
monitor_interval: {min_packets: 10}
";

fn scenario(yaml: &str) -> Scenario {
    Scenario::from_yaml_str(yaml, Path::new("flows.yaml")).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn learned_flows_expand_into_senders_and_read_back_the_same() {
    let s = scenario(FLOWS);
    let cfg = s.config();
    assert_eq!(cfg.senders.len(), 7, "6 learned flows and the Cubic flow");
    assert!(cfg.learned_flows.is_none(), "expanded");
    let count = cfg.flow_count.expect("flow_count");
    assert_eq!((count.count.min, count.count.max), (2, 6));
    assert!((0..6).all(|i| cfg.is_learned_flow(i)) && !cfg.is_learned_flow(6));
    assert_eq!(
        cfg.senders[0].start_time_s.max(),
        0.0,
        "the first flow starts at 0"
    );
    assert_eq!(cfg.senders[3].start_time_s.max(), 3.0);
    assert_eq!(cfg.observed_senders(), (0..6).collect::<Vec<_>>());
    // What a checkpoint stores reads back to the same scenario.
    let text = serde_json::to_string(cfg).unwrap();
    let again: ScenarioConfig = serde_json::from_str(&text).unwrap();
    let again = Scenario::new(again, None).unwrap();
    assert_eq!(again.config(), cfg);
}

/// The learned flows that take part in the episode `env` just reset into.
fn taking_part(env: &Env) -> usize {
    (0..env.slot_count())
        .filter(|&k| env.slot_phase(k) != SlotPhase::Absent)
        .count()
}

#[test]
fn each_episode_draws_how_many_flows_take_part() {
    let s = Arc::new(scenario(FLOWS));
    let mut env = Env::new(s.clone(), 3, 0);
    let mut seen = BTreeSet::new();
    for episode in 0..200 {
        env.reset(Some(episode));
        let n = taking_part(&env);
        assert!((2..=6).contains(&n), "episode {episode}: {n} flows");
        // The flows that take part are the first n.
        assert!((0..n).all(|k| env.slot_phase(k) != SlotPhase::Absent));
        seen.insert(n);
    }
    assert_eq!(seen, (2..=6).collect(), "every count in the range occurs");
    // The same seed draws the same episode.
    let mut a = Env::new(s.clone(), 11, 4);
    let mut b = Env::new(s, 11, 4);
    for _ in 0..50 {
        let sa = a.step(mocc_gym::Action::Delta(0.3));
        let sb = b.step(mocc_gym::Action::Delta(0.3));
        assert_eq!(
            sa.info.fields().map(f64::to_bits),
            sb.info.fields().map(f64::to_bits)
        );
    }
}

#[test]
fn flows_arrive_and_leave_within_an_episode() {
    let s = Arc::new(scenario(FLOWS));
    let mut env = Env::new(s, 5, 1);
    let mut left = 0;
    let mut waited = 0;
    for episode in 0..20 {
        env.reset(Some(100 + episode));
        waited += (1..env.slot_count())
            .filter(|&k| env.slot_phase(k) == SlotPhase::Waiting)
            .count();
        let actions = vec![mocc_gym::Action::Delta(0.0); env.slot_count()];
        for _ in 0..400 {
            if env.episode_over() {
                break;
            }
            env.step_slots(&actions);
        }
        // Every flow stays 2-5 s: all of them have left by the episode's end.
        left += (0..env.slot_count())
            .filter(|&k| env.slot_phase(k) == SlotPhase::Done)
            .count();
    }
    assert!(waited > 0, "later flows wait for their start");
    assert!(left > 0, "flows leave");
}

#[test]
fn flows_that_start_together_do_not_decide_in_lockstep() {
    let together = "
link: {bandwidth_pps: 500, delay_s: 0.03, queue_pkts: 50}
learned_flows: {count: {min: 4, max: 4}}
episode_mis: 100
";
    // How many of the four flows started at 0 are ready to decide when a reset returns.
    let ready = |yaml: &str, seed: u64| {
        let env = Env::new(Arc::new(scenario(yaml)), seed, 0);
        (0..4)
            .filter(|&k| env.slot_phase(k) == SlotPhase::Ready)
            .count()
    };
    let lockstep = together.replace(
        "count: {min: 4, max: 4}}",
        "count: {min: 4, max: 4}, mi_phase: false}",
    );
    for seed in 0..10 {
        // Without the phase their warm-up MIs end together and all four decide at once.
        assert_eq!(ready(&lockstep, seed), 4, "seed {seed}");
        // With it the first to finish decides alone.
        assert_eq!(ready(together, seed), 1, "seed {seed}");
    }
}

#[test]
fn bad_learned_flows_are_refused_naming_the_field() {
    for (yaml, message) in [
        ("learned_flows: {count: {min: 0, max: 3}}", "learned_flows.count: must satisfy 1 <= min <= max <= 64"),
        ("learned_flows: {count: {min: 4, max: 3}}", "learned_flows.count"),
        ("learned_flows: {count: {min: 1, max: 65}}", "learned_flows.count"),
        (
            "learned_flows: {count: {min: 1, max: 2}}\nsenders: [{controller: agent}, {controller: cubic}]",
            "senders[0].controller: with learned_flows, senders lists only the other senders",
        ),
        ("learned_flows: {count: {min: 1, max: 2}, start_time_s: -1}", "learned_flows.start_time_s"),
        ("learned_flows: {count: {min: 1, max: 2}, duration_s: 0}", "learned_flows.duration_s"),
        ("learned_flows: {count: {min: 1, max: 2}, colour: red}", "unknown field `colour`"),
        ("flow_count: {count: {min: 1, max: 3}}\nsenders: [{controller: agent}, {controller: cubic}]", "flow_count.count.max: the first 3 senders must be learned"),
        ("senders: [{controller: agent, duration_s: 3, stop_time_s: 5}]", "senders[0].duration_s: give stop_time_s or duration_s, not both"),
    ] {
        let e = Scenario::from_yaml_str(yaml, Path::new("bad.yaml"))
            .err()
            .unwrap_or_else(|| panic!("accepted: {yaml}"))
            .to_string();
        assert!(e.contains(message), "{yaml}: {e}");
    }
}

/// Two learned flows on an uncongested 1,000 pkt/s link at 200 and 400 pkt/s; the second
/// leaves at 3 s.
const TWO: &str = "
link: {bandwidth_pps: 1000, delay_s: 0.02, queue_pkts: 100, loss: 0}
senders:
  - {controller: agent, start_rate: {pps: 200}}
  - {controller: agent, start_rate: {pps: 400}, stop_time_s: 3}
episode_mis: 1000
";

#[test]
fn the_global_state_of_a_two_flow_link_by_hand() {
    use mocc_gym::{global_state_len, Action};
    let mut env = Env::new(Arc::new(scenario(TWO)), 1, 0);
    assert_eq!(env.global_state_len(), global_state_len(2));
    assert_eq!(global_state_len(2), 3 + 2 * 5);
    let actions = [Action::Rate(200.0), Action::Rate(400.0)];
    while env.network().now_s() < 2.0 {
        env.step_slots(&actions);
    }
    let mut g = vec![9.0f32; env.global_state_len()];
    env.slot_global_state(1, &mut g);
    // Link: no queue, both learned flows on it, 600 of 1,000 pkt/s paced.
    assert!(g[0] < 0.05, "{g:?}");
    assert_eq!(g[1], 1.0);
    assert!((g[2] - 0.6).abs() < 1e-6, "{g:?}");
    // The deciding flow first: flow 1 at 400 pkt/s, RTT at its base, no loss, delivering 0.4.
    assert_eq!(&g[3..5], &[1.0, 0.4]);
    assert!((g[5] - 1.0).abs() < 0.05, "{g:?}");
    assert_eq!(g[6], 0.0);
    assert!((g[7] - 0.4).abs() < 0.05, "{g:?}");
    // Then flow 0 at 200 pkt/s.
    assert_eq!(&g[8..10], &[1.0, 0.2]);
    assert!((g[12] - 0.2).abs() < 0.05, "{g:?}");
    // After the second flow left, its entry is masked out and one learned flow is counted.
    while env.network().now_s() < 4.0 {
        env.step_slots(&actions);
    }
    env.slot_global_state(0, &mut g);
    assert_eq!(g[1], 0.5);
    assert!((g[2] - 0.2).abs() < 1e-6, "{g:?}");
    assert_eq!(&g[3..5], &[1.0, 0.2]);
    assert_eq!(&g[8..13], &[0.0; 5], "the departed flow is masked");
}

#[test]
fn a_batch_gathers_global_states_for_ready_lanes_and_at_trajectory_ends() {
    use mocc_gym::VecEnv;
    let s = Arc::new(scenario(FLOWS));
    let plain = VecEnv::new(s.clone(), 2, 3, 1).unwrap();
    assert_eq!(plain.global_state_len(), 0);
    assert!(plain.global_states().is_empty());
    let mut v = VecEnv::new(s, 2, 3, 1).unwrap().with_global_state();
    let g = v.global_state_len();
    assert_eq!(g, 3 + 6 * 5);
    let mut ended = 0;
    for t in 0..400 {
        for &lane in v.ready_lanes() {
            let row = &v.global_states()[lane * g..(lane + 1) * g];
            assert_eq!(row[3], 1.0, "step {t}: the deciding lane is present");
        }
        let actions = vec![0.1f32; v.ready_lanes().len()];
        let step = v.step(&actions).unwrap();
        for lane in 0..step.completed.len() {
            if step.completed[lane] && (step.truncated[lane] || step.terminated[lane]) {
                ended += 1;
            }
        }
    }
    assert!(ended > 0);
    assert!(v.final_global_states().iter().any(|&x| x != 0.0));
}
