//! `mocc eval`: run a policy deterministically (action = mean) on every network x objective x
//! seed of a suite file and report per-run network metrics and rewards.

use crate::checkpoint::{Checkpoint, CheckpointError, FrozenModel};
use crate::export;
use crate::figures::{FairnessSpec, FriendlinessSpec, SweepSpec, TimeSeriesSpec};
use crate::mi_stats::MiStats;
use mocc_gym::reward::{aurora_reward, mocc_reward};
use mocc_gym::{
    Action, ClassicKind, ControllerConfig, Env, MiOutcome, Range, Scenario, ScenarioConfig,
    ScenarioError, SenderConfig, StartRate, StepInfo,
};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Errors of evaluation.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The suite file is unreadable or invalid; the message names the field.
    #[error("{path}: {message}")]
    Suite {
        /// The suite file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The policy could not be loaded.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// A scenario built from the suite is invalid.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// The policy does not fit (shapes, device).
    #[error("{0}")]
    Policy(String),
    /// The export folder is invalid.
    #[error(transparent)]
    Export(#[from] mocc_policy::PolicyError),
    /// A figure or its CSV could not be written.
    #[error(transparent)]
    Output(#[from] crate::plot::PlotError),
}

/// One network of a suite: a fixed Aurora bottleneck.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteNetwork {
    /// Bandwidth (packets/s).
    pub bw_pps: f64,
    /// One-way delay (s).
    pub delay_s: f64,
    /// Queue (packets).
    pub queue_pkts: f64,
    /// Random loss probability.
    #[serde(default)]
    pub loss: f64,
}

impl SuiteNetwork {
    /// A short label, e.g. `bw300_d0.1_q50_l0.01`.
    pub fn label(&self) -> String {
        format!(
            "bw{}_d{}_q{}_l{}",
            self.bw_pps, self.delay_s, self.queue_pkts, self.loss
        )
    }
}

/// An evaluation suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    /// The networks.
    #[serde(default)]
    pub networks: Vec<SuiteNetwork>,
    /// Objectives (w_thr, w_lat, w_loss); a policy without objective input ignores them for
    /// acting, but the `mocc` reward is still computed with each. Default: equal weights.
    #[serde(default)]
    pub objectives: Option<Vec<[f64; 3]>>,
    /// Seeds (each run draws Aurora's start rate U(0.3, 1.5) x bw from its seed).
    #[serde(default = "default_seeds")]
    pub seeds: Vec<u64>,
    /// MIs per run.
    #[serde(default = "default_steps")]
    pub steps: u32,
    /// One-parameter sweeps around a base network (the paper's Figure 5); their networks are
    /// evaluated after `networks`.
    #[serde(default)]
    pub sweeps: Option<SweepSpec>,
    /// Fairness runs: n flows of each policy with staggered starts.
    #[serde(default)]
    pub fairness: Option<FairnessSpec>,
    /// Friendliness runs: each policy against one Cubic flow.
    #[serde(default)]
    pub friendliness: Option<FriendlinessSpec>,
    /// Scenario files whose time series each policy draws.
    #[serde(default)]
    pub timeseries: Vec<TimeSeriesSpec>,
}

fn default_seeds() -> Vec<u64> {
    vec![0]
}
fn default_steps() -> u32 {
    400
}

impl Suite {
    /// Reads and validates a suite file.
    pub fn load(path: &Path) -> Result<Self, EvalError> {
        let err = |message: String| EvalError::Suite {
            path: path.to_path_buf(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        let suite: Suite = serde_saphyr::from_str(&text).map_err(|e| err(e.to_string()))?;
        suite.validate().map_err(err)?;
        Ok(suite)
    }

    /// Checks every value; the message names the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.all_networks().is_empty()
            && self.fairness.is_none()
            && self.friendliness.is_none()
            && self.timeseries.is_empty()
        {
            return Err(
                "networks: at least one network (or sweeps, fairness, friendliness, \
                        timeseries) is required"
                    .into(),
            );
        }
        for (i, n) in self.networks.iter().enumerate() {
            ScenarioConfig::fixed_link(n.bw_pps, n.delay_s, n.queue_pkts, n.loss)
                .validate()
                .map_err(|e| format!("networks[{i}]: {e}"))?;
        }
        if let Some(ws) = &self.objectives {
            for (i, w) in ws.iter().enumerate() {
                mocc_gym::config::validate_objective(&format!("objectives[{i}]"), w)
                    .map_err(|e| e.to_string())?;
            }
        }
        for (p, n) in self.sweeps.iter().flat_map(SweepSpec::networks) {
            ScenarioConfig::fixed_link(n.bw_pps, n.delay_s, n.queue_pkts, n.loss)
                .validate()
                .map_err(|e| format!("sweeps ({}): {e}", p.label()))?;
        }
        if let Some(f) = &self.fairness {
            if f.flows.is_empty() || f.flows.iter().any(|&n| !(2..=8).contains(&n)) {
                return Err(format!(
                    "fairness.flows: each count must lie in [2, 8] (got {:?})",
                    f.flows
                ));
            }
            positive_secs("fairness.duration_s", f.duration_s)?;
            if !(f.stagger_s.is_finite() && f.stagger_s >= 0.0) {
                return Err(format!(
                    "fairness.stagger_s: must be >= 0 (got {})",
                    f.stagger_s
                ));
            }
            if f.stagger_s * (f.flows.iter().max().copied().unwrap_or(1) as f64 - 1.0)
                >= f.duration_s
            {
                return Err("fairness.duration_s: must exceed the last flow's start".into());
            }
        }
        if let Some(f) = &self.friendliness {
            positive_secs("friendliness.duration_s", f.duration_s)?;
            if f.duration_s <= 5.0 {
                return Err("friendliness.duration_s: must exceed the 5 s warm-up".into());
            }
        }
        for (i, t) in self.timeseries.iter().enumerate() {
            t.validate(&format!("timeseries[{i}]"))?;
        }
        if self.seeds.is_empty() {
            return Err("seeds: at least one seed is required".into());
        }
        if self.steps == 0 {
            return Err("steps: must be >= 1 (got 0)".into());
        }
        Ok(())
    }

    /// The explicit networks, then those of the sweeps.
    pub fn all_networks(&self) -> Vec<SuiteNetwork> {
        let mut out = self.networks.clone();
        out.extend(
            self.sweeps
                .iter()
                .flat_map(|s| s.networks().into_iter().map(|(_, n)| n)),
        );
        out
    }

    fn objectives_or_default(&self) -> Vec<[f64; 3]> {
        self.objectives
            .clone()
            .unwrap_or_else(|| vec![[1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0]])
    }
}

fn positive_secs(field: &str, v: f64) -> Result<(), String> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(format!("{field}: must be > 0 (got {v})"))
    }
}

/// A trained policy, frozen: a training checkpoint (run with libtorch) or an export folder
/// (run with mocc-policy's libtorch-free runtime).
pub struct LoadedPolicy {
    name: String,
    model: PolicyModel,
    scenario: ScenarioConfig,
}

enum PolicyModel {
    Checkpoint(Box<FrozenModel>),
    Export(Box<mocc_policy::Policy>),
    /// A sender that sets its own rate (a classic controller or a constant rate): it is the
    /// observed sender, and actions are ignored.
    Baseline(SenderConfig),
}

/// The sender of a baseline name: `cubic`, `bbr`, `copa`, `vegas`, `vivace` or `const:RATE`
/// (packets/s).
pub fn baseline_sender(name: &str) -> Option<Result<SenderConfig, String>> {
    if let Some(kind) = ClassicKind::from_name(name) {
        return Some(Ok(SenderConfig {
            controller: ControllerConfig::from_classic(kind),
            ..SenderConfig::default()
        }));
    }
    let rate = name.strip_prefix("const:")?;
    Some(match rate.parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 => Ok(SenderConfig {
            controller: ControllerConfig::Constant,
            start_rate: StartRate::Pps(Range::Fixed(r)),
            ..SenderConfig::default()
        }),
        _ => Err(format!(
            "{name}: const:RATE needs a positive number of packets/s"
        )),
    })
}

impl LoadedPolicy {
    /// Loads an export folder (it holds `policy.json`), a checkpoint folder, or a run folder
    /// (its newest checkpoint).
    pub fn load(path: &Path) -> Result<Self, EvalError> {
        if !path.exists() {
            if let Some(sender) = baseline_sender(&path.to_string_lossy()) {
                return Ok(Self {
                    name: path.display().to_string(),
                    scenario: ScenarioConfig::default(),
                    model: PolicyModel::Baseline(sender.map_err(EvalError::Policy)?),
                });
            }
        }
        if export::is_export(path) {
            let policy = mocc_policy::Policy::load(path)?;
            return Ok(Self {
                name: path.display().to_string(),
                scenario: export::export_scenario(&policy),
                model: PolicyModel::Export(Box::new(policy)),
            });
        }
        let ckpt = Checkpoint::open(path)?;
        let scenario = ckpt.scenario().map_err(|e| {
            EvalError::Policy(format!("training scenario of {}: {e}", ckpt.path.display()))
        })?;
        let frozen = ckpt
            .frozen_model(scenario.obs_len(), ckpt.device())
            .map_err(EvalError::Policy)?;
        Ok(Self {
            name: path.display().to_string(),
            model: PolicyModel::Checkpoint(Box::new(frozen)),
            scenario: scenario.config().clone(),
        })
    }

    /// The name used in result rows.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The gym setup the policy was trained with (observation, metrics, action rule, MI sizing).
    pub fn scenario(&self) -> &ScenarioConfig {
        &self.scenario
    }

    /// Whether the policy's actions depend on the objective (a MOCC network).
    pub fn takes_objective(&self) -> bool {
        match &self.model {
            PolicyModel::Checkpoint(c) => c.model.architecture().takes_objective(),
            PolicyModel::Export(p) => p.takes_objective(),
            PolicyModel::Baseline(_) => false,
        }
    }

    /// The observed sender of a baseline (none for learned policies, whose sender is the agent).
    pub fn baseline(&self) -> Option<&SenderConfig> {
        match &self.model {
            PolicyModel::Baseline(s) => Some(s),
            _ => None,
        }
    }

    /// Mean actions for raw observations `[n, obs_dim]` and objectives `[n, 3]`.
    pub fn act(&self, raw_obs: &[f32], objectives: &[f32]) -> Vec<f32> {
        match &self.model {
            PolicyModel::Checkpoint(c) => {
                let mut normalized = vec![0.0f32; raw_obs.len()];
                c.obs_norm.normalize(raw_obs, &mut normalized);
                c.model.infer(&normalized, objectives, c.device).mean
            }
            PolicyModel::Baseline(_) => vec![0.0; objectives.len() / 3],
            PolicyModel::Export(policy) => {
                let mut ws = policy.workspace();
                raw_obs
                    .chunks_exact(policy.obs_len())
                    .zip(objectives.chunks_exact(3))
                    .map(|(obs, w)| policy.mean_action(obs, &[w[0], w[1], w[2]], &mut ws))
                    .collect()
            }
        }
    }
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
    let mut cfg = policy.scenario.clone();
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

/// One run's sums: the network statistics and both rewards per MI.
#[derive(Default)]
struct RunSums {
    net: MiStats,
    aurora: f64,
    mocc: f64,
}

impl RunSums {
    fn add(&mut self, i: &StepInfo, w: &[f64; 3]) {
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

    fn metrics(&self) -> RunMetrics {
        let n = self.net.mis().max(1) as f64;
        RunMetrics {
            utilization: self.net.utilization(),
            thr_pps: self.net.throughput_pps(),
            mean_rtt_s: self.net.mean_rtt_s(),
            rtt_ratio: self.net.rtt_ratio(),
            loss: self.net.loss(),
            aurora_reward: self.aurora / n,
            mocc_reward: self.mocc / n,
        }
    }
}

/// Runs every network x objective x seed of the suite.
pub fn evaluate(policy: &LoadedPolicy, suite: &Suite) -> Result<Vec<EvalRow>, EvalError> {
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
        for _ in 0..suite.steps {
            for (k, (env, w, _, _)) in envs.iter().enumerate() {
                obs[k * d..(k + 1) * d].copy_from_slice(env.observation());
                for j in 0..3 {
                    ws[k * 3 + j] = w[j] as f32;
                }
            }
            let actions = policy.act(&obs, &ws);
            for (k, (env, w, _, acc)) in envs.iter_mut().enumerate() {
                let step = env.step(Action::Delta(f64::from(actions[k])));
                acc.add(&step.info, w);
            }
        }
        for (_, w, seed, sums) in envs {
            rows.push(EvalRow {
                policy: policy.name().to_string(),
                network: net.label(),
                w_thr: w[0],
                w_lat: w[1],
                w_loss: w[2],
                seed,
                metrics: sums.metrics(),
            });
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
