//! Rewards that look at every flow on the link: the team-fairness and queue-delay terms against
//! hand-computed values, Astraea's team reward on a lone flow, and a snapshot taken between
//! team windows restoring bit for bit.

use mocc_gym::{Action, Env, Scenario, VecEnv};
use std::path::Path;
use std::sync::Arc;

fn scenario(yaml: &str) -> Arc<Scenario> {
    Arc::new(
        Scenario::from_yaml_str(yaml, Path::new("team.yaml")).unwrap_or_else(|e| panic!("{e}")),
    )
}

/// Two learned flows on an uncongested 10,000 pkt/s link, paced at 1,000 and 3,000 pkt/s (tens
/// of packets per MI, so that counting whole packets moves the rates little).
fn two_flows(terms: &str) -> String {
    format!(
        "link: {{bandwidth_pps: 10000, delay_s: 0.02, queue_pkts: 1000, loss: 0}}
senders:
  - {{controller: agent, start_rate: {{pps: 1000}}}}
  - {{controller: agent, start_rate: {{pps: 3000}}}}
episode_mis: 200
reward: mocc
objective: [0.4, 0.3, 0.3]
reward_terms: {terms}
"
    )
}

/// Each step's rewards of the two flows held at 1,000 and 3,000 pkt/s, after a settling second.
fn rewards(yaml: &str) -> Vec<(usize, f64)> {
    let mut env = Env::new(scenario(yaml), 1, 0);
    let actions = [Action::Rate(1000.0), Action::Rate(3000.0)];
    let mut out = Vec::new();
    for _ in 0..120 {
        env.step_slots(&actions);
        for k in 0..2 {
            if let Some(s) = env.slot_completion(k) {
                if s.info.time_s > 1.0 {
                    out.push((k, s.reward));
                }
            }
        }
    }
    out
}

#[test]
fn team_fairness_rewards_each_flow_for_the_links_jain_index() {
    // Jain's index of 1,000 and 3,000 pkt/s: 4000^2 / (2 (1000^2 + 3000^2)) = 0.8.
    let plain = rewards(&two_flows("{stability: 0.0001}"));
    let team = rewards(&two_flows("{stability: 0.0001, team_fairness: 0.5}"));
    assert_eq!(plain.len(), team.len());
    assert!(plain.len() > 20);
    for ((k, a), (k2, b)) in plain.iter().zip(&team) {
        assert_eq!(k, k2);
        // 0.5 x (0.8 - 1) = -0.1, the same for both flows (MI edges move a packet or two).
        assert!((b - a - (-0.1)).abs() < 0.01, "flow {k}: {a} -> {b}");
    }
}

#[test]
fn queue_delay_costs_what_the_queue_adds_to_the_base_rtt() {
    // Uncongested: no queue, nothing to pay.
    let plain = rewards(&two_flows("{stability: 0.0001}"));
    let queued = rewards(&two_flows("{stability: 0.0001, queue_delay: 1}"));
    for ((_, a), (_, b)) in plain.iter().zip(&queued) {
        assert!((b - a).abs() < 0.02, "{a} -> {b}");
    }
    // Twice the link's rate fills the buffer: the queue's delay costs up to the whole weight.
    let over = two_flows("{queue_delay: 1}").replace("pps: 3000", "pps: 19000");
    let mut env = Env::new(scenario(&over), 1, 0);
    let mut late = Vec::new();
    for _ in 0..200 {
        env.step_slots(&[Action::Rate(1000.0), Action::Rate(19000.0)]);
        if let Some(s) = env.slot_completion(1) {
            if s.info.time_s > 3.0 {
                late.push((s.reward, s.info.mean_rtt_s / s.info.base_rtt_s - 1.0));
            }
        }
    }
    assert!(!late.is_empty());
    for (r, queue) in late {
        assert!(
            queue > 1.0,
            "a full 100-packet buffer on 1,000 pkt/s adds 0.1 s to 0.04 s"
        );
        // The MOCC part is at most 1; the term takes the full weight of 1.
        assert!(r <= 0.0 + 1e-9, "{r}");
    }
}

#[test]
fn astraeas_reward_on_a_lone_flow_by_hand() {
    // One flow at 600 of 1,000 pkt/s, no queue and no loss: m1 = 0 (no latency), m2 = 0.6,
    // a steady window (std 0): m4 = 0.6; the rate changed (trigger) only at the first step.
    let yaml = "link: {bandwidth_pps: 1000, delay_s: 0.02, queue_pkts: 100, loss: 0}
senders: [{controller: agent, start_rate: {pps: 600}}]
episode_mis: 100
reward: astraea
";
    let mut env = Env::new(scenario(yaml), 2, 0);
    let mut late = Vec::new();
    for _ in 0..80 {
        let s = env.step(Action::Rate(600.0));
        if s.info.time_s > 1.0 {
            late.push(s.reward);
        }
    }
    let expect = 0.1 * 0.6 + 0.01 * 0.6;
    for r in late {
        assert!((r - expect).abs() < 0.003, "{r} against {expect}");
    }
}

#[test]
fn a_snapshot_with_team_windows_restores_bit_for_bit() {
    let yaml = "link: {bandwidth_pps: {min: 300, max: 900}, delay_s: 0.02, queue_pkts: 40}
learned_flows: {count: {min: 2, max: 4}, start_time_s: {min: 0, max: 2}}
senders: [{controller: cubic, probability: 0.5}]
episode_mis: 50
reward: mocc
reward_terms: {team_fairness: 0.3, queue_delay: 0.2, stability: 0.1}
";
    let s = scenario(yaml);
    let mut a = VecEnv::new(s.clone(), 2, 5, 1).unwrap();
    // A delta for each ready lane, from the step number and the lane.
    let act = |v: &VecEnv, t: usize| -> Vec<f32> {
        v.ready_lanes()
            .iter()
            .map(|&l| ((t * 3 + l) % 5) as f32 - 2.0)
            .collect()
    };
    for t in 0..60 {
        let actions = act(&a, t);
        a.step(&actions).unwrap();
    }
    let json = serde_json::to_string(&a.snapshot()).unwrap();
    let mut b = VecEnv::new(s, 2, 99, 2).unwrap();
    b.restore(serde_json::from_str(&json).unwrap()).unwrap();
    for t in 60..200 {
        let (aa, ab) = (act(&a, t), act(&b, t));
        assert_eq!(aa, ab, "step {t}: the same lanes are ready");
        let ra = a.step(&aa).unwrap().rewards.to_vec();
        let rb = b.step(&ab).unwrap().rewards.to_vec();
        assert_eq!(ra, rb, "step {t}");
    }
}
