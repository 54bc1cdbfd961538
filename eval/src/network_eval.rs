//! The `networks:` (and sweeps') entries of a suite: the policy on every network x objective x
//! seed, each run for the suite's number of MIs, deterministically (action = mean), with
//! utilization and throughput over the whole run.

use crate::actor::LoadedPolicy;
use crate::results::{EvalError, EvalRow, RunSums};
use crate::suite::{Suite, SuiteNetwork};
use mocc_gym::{Action, Env, Mode, Range, Scenario, ScenarioConfig, ScenarioError};
use std::sync::Arc;

/// The scenario of one suite network, with the policy's observation, action and metric setup.
fn network_scenario(
    policy: &LoadedPolicy,
    net: &SuiteNetwork,
    steps: u32,
) -> Result<Scenario, ScenarioError> {
    let fixed = ScenarioConfig::fixed_link(net.bw_pps, net.delay_s, net.queue_pkts, net.loss);
    let mut cfg = policy.scenario().clone();
    cfg.link = fixed.link;
    cfg.senders = fixed.senders;
    cfg.flow_count = None;
    cfg.episode_mis = steps;
    if let Some(s) = cfg.senders.first_mut() {
        s.start_rate = mocc_gym::StartRate::BandwidthFactor(Range::uniform(0.3, 1.5));
        if let Some(b) = policy.baseline() {
            *s = *b;
        }
    }
    Scenario::new(cfg, None)
}

/// Runs every network x objective x seed of the suite.
pub fn evaluate_networks(policy: &LoadedPolicy, suite: &Suite) -> Result<Vec<EvalRow>, EvalError> {
    let objectives = suite.objectives_or_default();
    let mut rows = Vec::new();
    for net in &suite.all_networks() {
        let scenario = Arc::new(network_scenario(policy, net, suite.steps)?);
        let mut envs = Vec::new();
        for w in &objectives {
            for &seed in &suite.seeds {
                let mut env = Env::new(scenario.clone(), seed, 0);
                env.set_objective(*w);
                let mut sums = RunSums::default();
                // The reset's startup and probe MIs count as the steps' do.
                for mi in env.slot_probe_mis(0) {
                    sums.add(&mi.info, w);
                }
                envs.push((env, *w, seed, sums));
            }
        }
        let d = scenario.obs_len();
        let mut obs = vec![0.0f32; envs.len() * d];
        let mut ws = vec![0.0f32; envs.len() * 3];
        let mut modes = vec![Mode::Cooperative; envs.len()];
        for _ in 0..suite.steps {
            for (k, (env, w, _, _)) in envs.iter().enumerate() {
                obs[k * d..(k + 1) * d].copy_from_slice(env.observation());
                modes[k] = env.slot_mode(0);
                for j in 0..3 {
                    ws[k * 3 + j] = w[j] as f32;
                }
            }
            let actions = policy.act(&modes, &obs, &ws);
            for (k, (env, w, _, acc)) in envs.iter_mut().enumerate() {
                let step = env.step(Action::Delta(f64::from(actions[k])));
                acc.add(&step.info, w);
                for probe in env.slot_probe_mis(0) {
                    acc.add(&probe.info, w);
                }
            }
        }
        for (env, w, seed, mut sums) in envs {
            set_run_totals(&env, &mut sums);
            rows.push(EvalRow::new(policy, net.label(), w, seed, sums.metrics()));
        }
    }
    Ok(rows)
}

/// The run's totals: sender 0's acknowledged packets over what the link could carry from the
/// start to the end of the run.
fn set_run_totals(env: &Env, sums: &mut RunSums) {
    let network = env.network();
    let end = network.now_s();
    let acked = network.senders()[env.slot_sender(0)].totals().acked;
    let capacity = network.link().capacity_pps(0.0, end) * end;
    sums.set_totals(acked as f64, capacity, end);
}
