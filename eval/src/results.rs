//! `mocc eval`: run a policy deterministically (action = mean) on every network x objective x
//! seed of a suite file and report per-run network metrics and rewards.

use crate::actor::{LoadedPolicy, PolicyLoadError};
use crate::mi_stats::MiStats;
use crate::suite::{Suite, SuiteError, SuiteNetwork};
use mocc_gym::reward::{aurora_reward, mocc_reward};
use mocc_gym::{
    Action, Env, MiOutcome, Mode, Range, Scenario, ScenarioConfig, ScenarioError, StepInfo,
};
use serde::Serialize;
use std::sync::Arc;

/// Errors of evaluation.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The suite file is unreadable or invalid; the message names the field.
    #[error(transparent)]
    Suite(#[from] SuiteError),
    /// The policy could not be loaded.
    #[error(transparent)]
    Policy(#[from] PolicyLoadError),
    /// A scenario built from the suite is invalid.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// A figure or its CSV could not be written.
    #[error(transparent)]
    Output(#[from] mocc_plot::chart::PlotError),
}

/// The per-run network metrics and rewards (each a mean over the run's MIs), also used for
/// their means over runs.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct RunMetrics {
    /// Mean link utilization.
    pub utilization: f64,
    /// Mean delivered packets per second.
    pub thr_pps: f64,
    /// Mean RTT over MIs with samples (s).
    pub mean_rtt_s: f64,
    /// Mean RTT / propagation RTT over MIs with samples.
    pub rtt_ratio: f64,
    /// Mean loss ratio.
    pub loss: f64,
    /// Mean Aurora reward per MI.
    pub aurora_reward: f64,
    /// Mean MOCC reward per MI under the run's objective.
    pub mocc_reward: f64,
}

impl RunMetrics {
    /// Column names, in CSV order.
    pub const COLUMNS: &'static str =
        "utilization,thr_pps,mean_rtt_s,rtt_ratio,loss,aurora_reward,mocc_reward";

    fn values(&self) -> [f64; 7] {
        [
            self.utilization,
            self.thr_pps,
            self.mean_rtt_s,
            self.rtt_ratio,
            self.loss,
            self.aurora_reward,
            self.mocc_reward,
        ]
    }

    fn from_values(v: [f64; 7]) -> Self {
        Self {
            utilization: v[0],
            thr_pps: v[1],
            mean_rtt_s: v[2],
            rtt_ratio: v[3],
            loss: v[4],
            aurora_reward: v[5],
            mocc_reward: v[6],
        }
    }

    /// Component-wise mean (zeros for no items).
    pub fn mean<'a>(items: impl IntoIterator<Item = &'a RunMetrics>) -> Self {
        let mut sum = [0.0; 7];
        let mut n = 0usize;
        for m in items {
            for (s, v) in sum.iter_mut().zip(m.values()) {
                *s += v;
            }
            n += 1;
        }
        Self::from_values(sum.map(|s| s / n.max(1) as f64))
    }
}

/// One row of results.csv.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalRow {
    /// Policy name.
    pub policy: String,
    /// Network label.
    pub network: String,
    /// Objective weight on throughput.
    pub w_thr: f64,
    /// Objective weight on latency.
    pub w_lat: f64,
    /// Objective weight on loss.
    pub w_loss: f64,
    /// Seed.
    pub seed: u64,
    /// The run's metrics.
    #[serde(flatten)]
    pub metrics: RunMetrics,
}

impl EvalRow {
    /// The row of `policy` on `network` under objective `w` and `seed`.
    pub fn new(
        policy: &LoadedPolicy,
        network: String,
        w: [f64; 3],
        seed: u64,
        metrics: RunMetrics,
    ) -> Self {
        Self {
            policy: policy.name().to_string(),
            network,
            w_thr: w[0],
            w_lat: w[1],
            w_loss: w[2],
            seed,
            metrics,
        }
    }
}

/// The metric columns' means over rows (the JSON `mocc eval` prints last).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EvalSummary {
    /// Runs.
    pub runs: usize,
    /// Means over the runs.
    #[serde(flatten)]
    pub metrics: RunMetrics,
}

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
    cfg.episode_mis = steps;
    if let Some(s) = cfg.senders.first_mut() {
        s.start_rate = mocc_gym::StartRate::BandwidthFactor(Range::uniform(0.3, 1.5));
        if let Some(b) = policy.baseline() {
            *s = *b;
        }
    }
    Scenario::new(cfg, None)
}

/// One run's sums: the network statistics and both rewards per MI, and optionally the run's
/// totals (delivered packets over the time-integrated capacity), which then set utilization
/// and throughput instead of the per-MI means.
#[derive(Default)]
pub struct RunSums {
    net: MiStats,
    aurora: f64,
    mocc: f64,
    totals: Option<RunTotals>,
}

/// Delivered packets, capacity in packets and seconds of a whole run.
#[derive(Clone, Copy)]
struct RunTotals {
    delivered: f64,
    capacity: f64,
    seconds: f64,
}

impl RunSums {
    /// Sets the run's totals: `delivered` packets over `capacity` packets the link could carry
    /// in `seconds`.
    pub fn set_totals(&mut self, delivered: f64, capacity: f64, seconds: f64) {
        self.totals = Some(RunTotals {
            delivered,
            capacity,
            seconds,
        });
    }

    /// Adds one MI's statistics and its rewards under objective `w`.
    pub fn add(&mut self, i: &StepInfo, w: &[f64; 3]) {
        let o = MiOutcome {
            throughput_pps: i.metric_thr_pps,
            delivered_pps: i.throughput_pps,
            mean_rtt_s: i.mean_rtt_s,
            loss: i.loss,
            capacity_pps: i.capacity_pps,
            base_rtt_s: i.base_rtt_s,
        };
        self.net.add(i);
        self.aurora += aurora_reward(&o);
        self.mocc += mocc_reward(&o, w);
    }

    /// The run's metrics: means over its MIs, or its totals where set.
    pub fn metrics(&self) -> RunMetrics {
        let n = self.net.mis().max(1) as f64;
        let (utilization, thr_pps) = match self.totals {
            Some(t) => (
                if t.capacity > 0.0 {
                    t.delivered / t.capacity
                } else {
                    0.0
                },
                t.delivered / t.seconds.max(1e-9),
            ),
            None => (self.net.utilization(), self.net.throughput_pps()),
        };
        RunMetrics {
            utilization,
            thr_pps,
            mean_rtt_s: self.net.mean_rtt_s(),
            rtt_ratio: self.net.rtt_ratio(),
            loss: self.net.loss(),
            aurora_reward: self.aurora / n,
            mocc_reward: self.mocc / n,
        }
    }
}

/// Runs every network x objective x seed of the suite, then its `scenarios:` entries.
pub fn evaluate(policy: &LoadedPolicy, suite: &Suite) -> Result<Vec<EvalRow>, EvalError> {
    let mut rows = evaluate_networks(policy, suite)?;
    rows.extend(crate::scenario_eval::evaluate_scenarios(policy, suite)?);
    Ok(rows)
}

/// Runs every network x objective x seed of the suite.
fn evaluate_networks(policy: &LoadedPolicy, suite: &Suite) -> Result<Vec<EvalRow>, EvalError> {
    let objectives = suite.objectives_or_default();
    let mut rows = Vec::new();
    for net in &suite.all_networks() {
        let scenario = Arc::new(network_scenario(policy, net, suite.steps)?);
        let mut envs = Vec::new();
        for w in &objectives {
            for &seed in &suite.seeds {
                let mut env = Env::new(scenario.clone(), seed, 0);
                env.set_objective(*w);
                envs.push((env, *w, seed, RunSums::default()));
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
        for (_, w, seed, sums) in envs {
            rows.push(EvalRow::new(policy, net.label(), w, seed, sums.metrics()));
        }
    }
    Ok(rows)
}

/// Means of the metric columns.
pub fn summarize(rows: &[EvalRow]) -> EvalSummary {
    EvalSummary {
        runs: rows.len(),
        metrics: RunMetrics::mean(rows.iter().map(|r| &r.metrics)),
    }
}

/// Writes results.csv.
pub fn write_csv<W: std::io::Write>(mut out: W, rows: &[EvalRow]) -> std::io::Result<()> {
    writeln!(
        out,
        "policy,network,w_thr,w_lat,w_loss,seed,{}",
        RunMetrics::COLUMNS
    )?;
    for r in rows {
        write!(
            out,
            "{},{},{},{},{},{}",
            r.policy.replace(',', ";"),
            r.network,
            r.w_thr,
            r.w_lat,
            r.w_loss,
            r.seed
        )?;
        for v in r.metrics.values() {
            write!(out, ",{v}")?;
        }
        writeln!(out)?;
    }
    Ok(())
}
