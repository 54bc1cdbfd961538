//! The `scenarios:` entries of a suite: each policy runs a scenario file (time-varying paths,
//! several flows, cross traffic) for a fixed number of simulated seconds, every learned sender
//! of the file driven by the policy. Utilization is the policy's flows' delivered packets over
//! the time-integrated capacity (outages count as zero); the RTT ratio is each MI's mean RTT
//! over the base RTT in force when it ends.

use crate::actor::LoadedPolicy;
use crate::results::{EvalError, EvalRow, RunMetrics, RunSums};
use crate::suite::{ScenarioRunSpec, Suite, SuiteNetwork};
use mocc_gym::{
    Action, ControllerConfig, Env, Range, Scenario, ScenarioConfig, ScenarioError, SlotPhase,
    StartRate,
};
use std::sync::Arc;

/// Runs every `scenarios:` entry of the suite for every objective and seed.
pub fn evaluate_scenarios(policy: &LoadedPolicy, suite: &Suite) -> Result<Vec<EvalRow>, EvalError> {
    let mut rows = Vec::new();
    for spec in &suite.scenarios {
        let scenario = Arc::new(policy_on_scenario(policy, spec)?);
        let seeds = spec.seeds.as_ref().unwrap_or(&suite.seeds);
        for w in suite.objectives_or_default() {
            for &seed in seeds {
                let sums = run_scenario(policy, &scenario, w, seed, spec.duration_s);
                rows.push(EvalRow::new(policy, spec.label(), w, seed, sums.metrics()));
            }
        }
    }
    Ok(rows)
}

/// The scenario file's network and senders with the policy's observation, action rule and MI
/// sizing; for a baseline, each learned sender becomes an observed sender of that scheme.
fn policy_on_scenario(
    policy: &LoadedPolicy,
    spec: &ScenarioRunSpec,
) -> Result<Scenario, ScenarioError> {
    let file = Scenario::load(&spec.scenario)?;
    match &spec.network {
        Some(n) => {
            let mut cfg = file.config().clone();
            let trains = cfg.link.trains_above_pps;
            cfg.link = ScenarioConfig::fixed_link(n.bw_pps, n.delay_s, n.queue_pkts, n.loss).link;
            // The file's simulation model stays: its packet trains, if any.
            cfg.link.trains_above_pps = trains;
            policy_on_config(policy, &cfg)
        }
        None => policy_on_config(policy, file.config()),
    }
}

/// `source`'s link and senders with the policy's observation, action rule and MI sizing, as
/// [`policy_on_scenario`] does for a file. A loaded scenario's trace path is already resolved
/// against its file ([`Scenario::new`] keeps the resolved path), so it is not joined again.
fn policy_on_config(
    policy: &LoadedPolicy,
    source: &ScenarioConfig,
) -> Result<Scenario, ScenarioError> {
    let mut cfg = policy.scenario().clone();
    cfg.link = source.link.clone();
    cfg.senders = source.senders.clone();
    cfg.flow_count = source.flow_count;
    cfg.mi_jitter = source.mi_jitter;
    cfg.episode_mis = u32::MAX;
    if let Some(b) = policy.baseline() {
        for s in cfg
            .senders
            .iter_mut()
            .filter(|s| s.controller == ControllerConfig::Agent)
        {
            s.controller = b.controller;
            if let mocc_gym::StartRate::Pps(_) = b.start_rate {
                s.start_rate = b.start_rate;
            }
            s.observe = true;
        }
    }
    Scenario::new(cfg, None)
}

/// The simulator's side of a real-path run (`mocc net compare`): the policy alone on the fixed
/// link `net`, started at `start_rate_pps` (a constant rate keeps its own), for `duration_s`
/// simulated seconds under objective `w`, once per seed; utilization over the whole run.
pub fn fixed_link_runs(
    policy: &LoadedPolicy,
    net: &SuiteNetwork,
    start_rate_pps: f64,
    w: [f64; 3],
    seeds: &[u64],
    duration_s: f64,
) -> Result<Vec<RunMetrics>, EvalError> {
    let mut source = ScenarioConfig::fixed_link(net.bw_pps, net.delay_s, net.queue_pkts, net.loss);
    for s in &mut source.senders {
        s.start_rate = StartRate::Pps(Range::Fixed(start_rate_pps));
    }
    let scenario = Arc::new(policy_on_config(policy, &source)?);
    Ok(seeds
        .iter()
        .map(|&seed| run_scenario(policy, &scenario, w, seed, duration_s).metrics())
        .collect())
}

/// One run for `duration_s` simulated seconds: the policy decides for every ready learned
/// sender. Returns the MI sums, with utilization and throughput over the whole run.
fn run_scenario(
    policy: &LoadedPolicy,
    scenario: &Arc<Scenario>,
    w: [f64; 3],
    seed: u64,
    duration_s: f64,
) -> RunSums {
    let mut env = Env::new(scenario.clone(), seed, 0);
    let slots = env.slot_count();
    for k in 0..slots {
        env.set_slot_objective(k, w);
    }
    let d = scenario.obs_len();
    let wf = w.map(|v| v as f32);
    let mut sums = RunSums::default();
    // The reset's startup and probe MIs count as the steps' do.
    for k in 0..slots {
        for mi in env.slot_probe_mis(k) {
            sums.add(&mi.info, &w);
        }
    }
    let mut obs = Vec::with_capacity(slots * d);
    let mut objectives = Vec::with_capacity(slots * 3);
    let mut modes = Vec::with_capacity(slots);
    let mut actions = vec![Action::Delta(0.0); slots];
    while env.network().now_s() < duration_s && !env.episode_over() {
        obs.clear();
        objectives.clear();
        modes.clear();
        let ready: Vec<usize> = (0..slots)
            .filter(|&k| env.slot_phase(k) == SlotPhase::Ready)
            .collect();
        for &k in &ready {
            obs.extend_from_slice(env.slot_observation(k));
            objectives.extend_from_slice(&wf);
            modes.push(env.slot_mode(k));
        }
        if !ready.is_empty() {
            let a = policy.act(&modes, &obs, &objectives);
            for (&k, &ak) in ready.iter().zip(&a) {
                actions[k] = Action::Delta(f64::from(ak));
            }
        }
        env.step_slots(&actions);
        for k in 0..slots {
            if let Some(step) = env.slot_completion(k) {
                sums.add(&step.info, &w);
            }
            for probe in env.slot_probe_mis(k) {
                sums.add(&probe.info, &w);
            }
        }
    }
    let end = env.network().now_s();
    let senders: Vec<usize> = (0..slots).map(|k| env.slot_sender(k)).collect();
    let acked: u64 = senders
        .iter()
        .map(|&i| env.network().senders()[i].totals().acked)
        .sum();
    let capacity = env.network().link().capacity_pps(0.0, end) * end;
    sums.set_totals(acked as f64, capacity, end);
    sums
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn suite_with(yaml: &str, name: &str) -> (Suite, PathBuf) {
        let dir =
            std::env::temp_dir().join(format!("mocc-scenario-eval-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("path.yaml"), yaml).unwrap();
        let suite_path = dir.join("suite.yaml");
        std::fs::write(
            &suite_path,
            "scenarios:\n  - {scenario: path.yaml, duration_s: 20, seeds: [0, 1]}\n",
        )
        .unwrap();
        (Suite::load(&suite_path).unwrap(), dir)
    }

    #[test]
    fn a_fixed_link_run_lasts_the_given_seconds_from_the_given_rate() {
        // 100 pkt/s on a lossless 200 pkt/s link of 20 ms one way for 10 s: ~1,000 packets
        // sent, all but the ~4 still in flight at the end delivered, over a capacity of 2,000.
        let net = SuiteNetwork {
            bw_pps: 200.0,
            delay_s: 0.02,
            queue_pkts: 50.0,
            loss: 0.0,
        };
        let policy = LoadedPolicy::load(std::path::Path::new("const:100")).unwrap();
        let runs =
            fixed_link_runs(&policy, &net, 150.0, [0.34, 0.33, 0.33], &[0, 1], 10.0).unwrap();
        assert_eq!(runs.len(), 2);
        for m in &runs {
            assert!((0.496..=0.5).contains(&m.utilization), "{}", m.utilization);
            assert!((m.rtt_ratio - 1.0).abs() < 1e-9, "{}", m.rtt_ratio);
            assert_eq!(m.loss, 0.0);
        }
    }

    #[test]
    fn utilization_counts_outages_as_zero_capacity() {
        // A constant sender at twice the 100 pkt/s link, a 1 s outage every 4 s: the link
        // delivers 100 pkt/s while up, so over 20 s (5 outages of 1 s) utilization is the
        // delivered packets over 100 * 15, i.e. ~1 (not the 0.75 a nominal capacity gives).
        // Packets already queued when an outage starts are still served (only entering ones
        // are lost), so a 2-packet queue adds at most 10 packets of 1500.
        let (suite, dir) = suite_with(
            "link: {bandwidth_pps: 100, delay_s: 0.02, queue_pkts: 2, loss: 0, \
             outages: [{start_s: 3, duration_s: 1, period_s: 4}]}\n\
             senders: [{controller: agent, start_rate: {pps: 200}}]\n",
            "outage",
        );
        let policy = LoadedPolicy::load(std::path::Path::new("const:200")).unwrap();
        let rows = evaluate_scenarios(&policy, &suite).unwrap();
        assert_eq!(rows.len(), 2);
        for r in &rows {
            assert_eq!(r.network, "path");
            let u = r.metrics.utilization;
            assert!((0.97..=1.007).contains(&u), "utilization {u}");
            // 15 s of 100 pkt/s over ~20 s.
            assert!(
                (r.metrics.thr_pps - 75.0).abs() < 2.0,
                "{}",
                r.metrics.thr_pps
            );
        }
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_network_entry_replaces_the_files_link() {
        // The file's link has outages; the entry's fixed 400 pkt/s link has none. A constant
        // 200 pkt/s sender then delivers ~200 pkt/s over 20 s: utilization ~0.5 of 400, where
        // the file's own 100 pkt/s link would have capped it at 100.
        let (mut suite, dir) = suite_with(
            "link: {bandwidth_pps: 100, delay_s: 0.02, queue_pkts: 2, loss: 0, \
             outages: [{start_s: 3, duration_s: 1, period_s: 4}]}\n\
             senders: [{controller: agent, start_rate: {pps: 200}}]\n",
            "network-entry",
        );
        suite.scenarios[0].network = Some(SuiteNetwork {
            bw_pps: 400.0,
            delay_s: 0.01,
            queue_pkts: 40.0,
            loss: 0.0,
        });
        let policy = LoadedPolicy::load(std::path::Path::new("const:200")).unwrap();
        let rows = evaluate_scenarios(&policy, &suite).unwrap();
        assert_eq!(rows.len(), 2);
        for r in &rows {
            assert_eq!(r.network, "path-bw400_d0.01_q40_l0");
            let u = r.metrics.utilization;
            assert!((0.49..=0.5).contains(&u), "utilization {u}");
            assert!((r.metrics.rtt_ratio - 1.0).abs() < 1e-9);
        }
        // A network entry is checked like a suite's networks.
        suite.scenarios[0].network = Some(SuiteNetwork {
            bw_pps: -1.0,
            delay_s: 0.01,
            queue_pkts: 40.0,
            loss: 0.0,
        });
        let err = suite.scenarios[0].validate("scenarios[0]").unwrap_err();
        assert!(
            err.starts_with("scenarios[0].network: link.bandwidth_pps"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
