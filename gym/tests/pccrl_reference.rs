//! Agreement with PCC-RL's own simulator (Aurora, as published: 400-MI episodes, no latency
//! noise), on deterministic cases (loss 0). The reference CSVs in `tests/data/` hold the
//! per-MI values PCC-RL's `network_sim.py` + `sender_obs.py` produced for 200 MIs after its
//! 2-MI reset: a sender at a fixed rate on a fixed link, and one starting at 150 pkt/s applying
//! action +1 every MI. Times, durations, rates, throughput and loss must agree bit for bit;
//! RTT-derived values up to float summation order; features up to f32 rounding.

use mocc_gym::{Action, Env, Scenario, ScenarioConfig};
use std::path::Path;
use std::sync::Arc;

const COLUMNS: [&str; 10] = [
    "time_s",
    "duration_s",
    "send_pps",
    "thr_pps",
    "mean_rtt_s",
    "loss",
    "reward",
    "sent_latency_inflation",
    "latency_ratio",
    "send_ratio",
];

fn reference(name: &str) -> Vec<Vec<f64>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    let text = std::fs::read_to_string(&path).expect("reference CSV");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(header[1..], COLUMNS);
    lines
        .map(|l| l.split(',').skip(1).map(|v| v.parse().unwrap()).collect())
        .collect()
}

fn run(env: &mut Env, action: Action, steps: usize) -> Vec<Vec<f64>> {
    (0..steps)
        .map(|_| {
            let s = env.step(action);
            let obs = env.observation();
            let row = &obs[obs.len() - 3..];
            let i = s.info;
            vec![
                i.time_s,
                i.duration_s,
                i.send_pps,
                i.metric_thr_pps,
                i.mean_rtt_s,
                i.loss,
                s.reward,
                f64::from(row[0]),
                f64::from(row[1]),
                f64::from(row[2]),
            ]
        })
        .collect()
}

fn assert_agrees(ours: &[Vec<f64>], theirs: &[Vec<f64>], case: &str) {
    assert_eq!(ours.len(), theirs.len(), "{case}");
    for (mi, (a, b)) in ours.iter().zip(theirs).enumerate() {
        for (c, name) in COLUMNS.iter().enumerate() {
            let tol = match c {
                0..=3 | 5 => 0.0,
                4 | 6 => 1e-12 * (1.0 + b[c].abs()),
                _ => 1e-6 * (1.0 + b[c].abs()),
            };
            assert!(
                (a[c] - b[c]).abs() <= tol,
                "{case}: MI {} column {name}: ours {} PCC-RL {}",
                mi + 1,
                a[c],
                b[c]
            );
        }
    }
}

fn fixed_rate_case(bw: f64, delay: f64, queue: f64, rate: f64) {
    let config = ScenarioConfig::fixed_link(bw, delay, queue, 0.0);
    let scenario = Scenario::new(config, None)
        .unwrap()
        .with_agent_start_rate(rate)
        .unwrap();
    let mut env = Env::new(Arc::new(scenario), 0, 0);
    let theirs = reference(&format!("pccrl_{bw}_{delay}_{queue}_{rate}.csv"));
    let ours = run(&mut env, Action::Rate(rate), theirs.len());
    assert_agrees(&ours, &theirs, &format!("{bw} {delay} {queue} {rate}"));
}

#[test]
fn fixed_rate_over_capacity_small_queue() {
    fixed_rate_case(100.0, 0.05, 2.0, 150.0);
}

#[test]
fn fixed_rate_over_capacity_long_path() {
    fixed_rate_case(300.0, 0.2, 50.0, 450.0);
}

#[test]
fn fixed_rate_under_capacity() {
    fixed_rate_case(137.0, 0.31, 7.0, 90.0);
}

#[test]
fn constant_action_rate_rule() {
    let yaml = "link: {bandwidth_pps: 200, delay_s: 0.05, queue_pkts: 20, loss: 0}\n\
                senders: [{controller: agent, start_rate: {pps: 150}}]\n";
    let scenario = Scenario::from_yaml_str(yaml, Path::new("action.yaml")).unwrap();
    let mut env = Env::new(Arc::new(scenario), 1, 0);
    let theirs = reference("pccrl_action_1.0.csv");
    let ours = run(&mut env, Action::Delta(1.0), theirs.len());
    assert_agrees(&ours, &theirs, "action +1");
}
