//! The single-objective PPO trainer (Aurora): rollouts on a VecEnv, GAE, PPO epochs, logging
//! and checkpoints. Reads top to bottom like CleanRL's `ppo_continuous_action`, each step a
//! named function.

use crate::checkpoint::{self, CheckpointError, CheckpointState, Counters, CHECKPOINT_FORMAT};
use crate::config::{ConfigError, LoadedConfig, TrainConfig};
use crate::recorder::{CsvRecorder, Recorders, TensorBoardRecorder};
use crate::schedule::{MoccSchedule, Phase};
use mocc_agents::{
    compute_gae, init_torch_threads, load_weights, resolve_device, ActorCritic, Adam, Batch,
    DeviceError, LossStats, RewardScaler, RunningMeanStd, UpdateError,
};
use mocc_gym::{EnvSnapshot, Scenario, StepInfo, VecEnv, VecEnvError};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use tch::{nn, Device, Tensor};

/// Errors that end training.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    /// Bad config or scenario.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Device selection failed.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// The VecEnv could not be built or stepped.
    #[error(transparent)]
    Env(#[from] VecEnvError),
    /// A checkpoint could not be written or read.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// A loss or gradient became NaN/inf; the last good checkpoint is kept.
    #[error("training diverged at iteration {iteration}: {source}")]
    NonFinite {
        /// The PPO iteration (update number, from 1).
        iteration: u64,
        /// What went non-finite.
        #[source]
        source: UpdateError,
    },
    /// A checkpoint that does not fit this config or build.
    #[error("{0}")]
    Incompatible(String),
    /// Creating the run folder failed.
    #[error("{path}: {source}")]
    Io {
        /// The folder.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// Seconds spent in each phase.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct TimeSplit {
    /// Stepping the simulator.
    pub sim_seconds: f64,
    /// Forward passes during rollouts.
    pub inference_seconds: f64,
    /// PPO updates.
    pub update_seconds: f64,
}

/// The last line `mocc train` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrainSummary {
    /// Env steps at the end (including those before a resume).
    pub env_steps: u64,
    /// Wall seconds of this process's training loop.
    pub wall_seconds: f64,
    /// Env steps of this process per wall second (updates included).
    pub steps_per_sec: f64,
    /// The final checkpoint.
    pub final_checkpoint: PathBuf,
    /// Simulator seconds.
    pub sim_seconds: f64,
    /// Inference seconds.
    pub inference_seconds: f64,
    /// Update seconds.
    pub update_seconds: f64,
    /// Mean return of the last episodes (up to 100), if any finished.
    pub mean_episodic_return: Option<f64>,
}

/// What the progress callback sees after each update.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Updates done.
    pub updates: u64,
    /// Updates in the budget.
    pub total_updates: u64,
    /// Env steps done.
    pub env_steps: u64,
    /// Env steps per second so far (this process).
    pub steps_per_sec: f64,
    /// Mean recent episodic return.
    pub mean_return: Option<f64>,
    /// The update's losses.
    pub losses: LossStats,
    /// Mean per-step reward of the rollout on the run's own objective: the envs on the new
    /// objective when adapting, else every env.
    pub rollout_reward: f64,
    /// Mean per-step reward of the rollout's replayed objective, when adapting with replay.
    pub replay_reward: Option<f64>,
}

/// Simulator state and episode accounting, as stored in checkpoints.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct EnvsState {
    snapshots: Vec<EnvSnapshot>,
    episode_return: Vec<f64>,
    episode_len: Vec<u64>,
    recent_returns: VecDeque<f64>,
}

const RECENT_EPISODES: usize = 100;

/// Rollout storage `[steps, envs]`, flat and preallocated.
#[derive(Debug, Default)]
struct Rollout {
    obs: Vec<f32>,
    objectives: Vec<f32>,
    actions: Vec<f32>,
    logprobs: Vec<f32>,
    rewards: Vec<f32>,
    ended: Vec<f32>,
    values: Vec<f32>,
    /// Loss group of each sample (empty unless adapting with replay).
    groups: Vec<u8>,
}

/// Means of the network metrics over a rollout.
#[derive(Debug, Clone, Copy, Default)]
struct NetStats {
    utilization: f64,
    rtt_ratio: f64,
    rtt_n: f64,
    loss: f64,
    throughput_pps: f64,
    n: f64,
}

impl NetStats {
    fn add(&mut self, i: &StepInfo) {
        self.utilization += i.utilization;
        // As in `mocc eval`: the RTT ratio averages the MIs that have RTT samples.
        if i.base_rtt_s > 0.0 && i.mean_rtt_s > 0.0 {
            self.rtt_ratio += i.mean_rtt_s / i.base_rtt_s;
            self.rtt_n += 1.0;
        }
        self.loss += i.loss;
        self.throughput_pps += i.throughput_pps;
        self.n += 1.0;
    }
}

/// A training run in progress.
pub struct Trainer {
    config: TrainConfig,
    config_path: PathBuf,
    run_dir: PathBuf,
    venv: VecEnv,
    vs: nn::VarStore,
    model: ActorCritic,
    opt: Adam,
    obs_norm: RunningMeanStd,
    /// Present when `ppo.normalize_reward` is on.
    reward_norm: Option<RewardScaler>,
    device: Device,
    rng: ChaCha8Rng,
    counters: Counters,
    total_updates: u64,
    episode_return: Vec<f64>,
    episode_len: Vec<u64>,
    recent_returns: VecDeque<f64>,
    buf: Rollout,
    recorders: Recorders,
    warnings: Vec<String>,
    timing: TimeSplit,
    last_checkpoint: Option<PathBuf>,
    saved_updates: Option<u64>,
    schedule: Option<MoccSchedule>,
    rollout_reward: Vec<f64>,
    env_groups: Vec<u8>,
    git_revision: Option<String>,
}

impl Trainer {
    /// A fresh run of `loaded` writing into `run_dir`, which must not hold checkpoints yet.
    pub fn new(loaded: &LoadedConfig, run_dir: &Path) -> Result<Self, TrainError> {
        let ckpts = run_dir.join("checkpoints");
        if ckpts.is_dir() && checkpoint::list(&ckpts).is_ok_and(|l| !l.is_empty()) {
            return Err(TrainError::Incompatible(format!(
                "{}: this run folder already holds checkpoints; continue it with --resume or \
                 choose another --out",
                run_dir.display()
            )));
        }
        Self::build(&loaded.resolved()?, run_dir)
    }

    fn build(loaded: &LoadedConfig, run_dir: &Path) -> Result<Self, TrainError> {
        let scenario = Arc::new(loaded.scenario()?);
        let cfg = loaded.config.clone();
        init_torch_threads(cfg.torch_threads);
        tch::manual_seed(cfg.seed as i64);
        let device = resolve_device(cfg.device)?;
        let venv = VecEnv::new(scenario.clone(), cfg.envs, cfg.seed, cfg.threads)?;
        let obs_dim = scenario.obs_len();
        let vs = nn::VarStore::new(device);
        let model = ActorCritic::new(&vs.root(), cfg.agent.architecture(obs_dim));
        let opt = Adam::new(&vs, cfg.ppo.learning_rate, cfg.ppo.adam_eps);
        let batch = (cfg.ppo.num_steps * cfg.envs) as u64;
        let total_updates = cfg.budget.env_steps.div_ceil(batch).max(1);
        std::fs::create_dir_all(run_dir).map_err(|source| TrainError::Io {
            path: run_dir.to_path_buf(),
            source,
        })?;
        let mut trainer = Self {
            obs_norm: RunningMeanStd::new(obs_dim),
            reward_norm: cfg
                .ppo
                .normalize_reward
                .then(|| RewardScaler::new(cfg.envs)),
            rng: rng_for(cfg.seed),
            episode_return: vec![0.0; cfg.envs],
            episode_len: vec![0; cfg.envs],
            recent_returns: VecDeque::new(),
            buf: Rollout::default(),
            recorders: Recorders::default(),
            warnings: Vec::new(),
            timing: TimeSplit::default(),
            counters: Counters::default(),
            last_checkpoint: None,
            saved_updates: None,
            git_revision: None,
            schedule: match &cfg.mocc {
                Some(m) => Some(MoccSchedule::new(m.clone()).map_err(TrainError::Incompatible)?),
                None => None,
            },
            rollout_reward: vec![0.0; cfg.envs],
            env_groups: Vec::new(),
            total_updates,
            config: cfg,
            config_path: loaded.path.clone(),
            run_dir: run_dir.to_path_buf(),
            venv,
            vs,
            model,
            opt,
            device,
        };
        trainer.open_recorders();
        Ok(trainer)
    }

    /// Continues the run saved in `checkpoint` (a checkpoint or run folder), writing into the
    /// run folder that holds it.
    pub fn resume(checkpoint: &Path) -> Result<Self, TrainError> {
        let ckpt = checkpoint::resolve(checkpoint)?;
        let (state, tensors) = checkpoint::load(&ckpt)?;
        let run_dir = ckpt
            .parent()
            .and_then(Path::parent)
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        let loaded = LoadedConfig {
            config: state.config.clone(),
            path: state.config_path.clone(),
        };
        loaded.validate()?;
        let mut t = Self::build(&loaded, &run_dir)?;
        t.load_tensors(&tensors, state.adam_step)?;
        t.check_obs_dim(&ckpt, &state.obs_norm)?;
        t.obs_norm = state.obs_norm;
        t.restore_reward_norm(&ckpt, state.reward_norm)?;
        t.rng = state.rng;
        t.counters = state.counters;
        let envs: EnvsState = serde_json::from_value(state.envs)
            .map_err(|e| TrainError::Incompatible(format!("{}: env state: {e}", ckpt.display())))?;
        t.venv.restore(envs.snapshots)?;
        t.episode_return = envs.episode_return;
        t.episode_len = envs.episode_len;
        t.recent_returns = envs.recent_returns;
        if let Some(mut s) = state.schedule {
            s.reattach().map_err(TrainError::Incompatible)?;
            t.schedule = Some(s);
        }
        t.saved_updates = Some(t.counters.updates);
        t.last_checkpoint = Some(ckpt);
        t.git_revision = state.git_revision;
        Ok(t)
    }

    fn load_tensors(
        &mut self,
        tensors: &std::collections::HashMap<String, Tensor>,
        adam_step: u64,
    ) -> Result<(), TrainError> {
        load_weights(&self.vs, tensors)
            .map_err(|e| TrainError::Incompatible(format!("checkpoint {e}")))?;
        let device = self.device;
        self.opt
            .load_state(adam_step, |k| tensors.get(k).map(|t| t.to_device(device)))
            .map_err(TrainError::Incompatible)
    }

    fn open_recorders(&mut self) {
        if self.config.logging.csv {
            match CsvRecorder::open(&self.run_dir.join("metrics.csv")) {
                Ok(r) => self.recorders.push(Box::new(r)),
                Err(e) => self.warnings.push(format!("metrics.csv disabled: {e}")),
            }
        }
        if self.config.logging.tensorboard {
            match TensorBoardRecorder::create(&self.run_dir) {
                Ok(r) => self.recorders.push(Box::new(r)),
                Err(e) => self
                    .warnings
                    .push(format!("TensorBoard logging disabled: {e}")),
            }
        }
    }

    /// Warnings (failed log writes) accumulated since the last call.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// Progress counters.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Updates in the budget.
    pub fn total_updates(&self) -> u64 {
        self.total_updates
    }

    /// The model's variables (for tests and export).
    pub fn var_store(&self) -> &nn::VarStore {
        &self.vs
    }

    /// Records the revision of the code that trains from here on; checkpoints and exports
    /// carry it.
    pub fn record_git_revision(&mut self, revision: impl Into<String>) {
        self.git_revision = Some(revision.into());
    }

    /// The run folder.
    pub fn run_dir(&self) -> &Path {
        &self.run_dir
    }

    /// Trains until the budget is spent (or `stop_after` more updates, for tests), saving
    /// checkpoints on the cadence and at the end.
    pub fn run(
        &mut self,
        stop_after: Option<u64>,
        mut progress: impl FnMut(&Progress),
    ) -> Result<TrainSummary, TrainError> {
        let start = Instant::now();
        let steps_at_start = self.counters.env_steps;
        let mut done_here = 0u64;
        while self.counters.updates < self.total_updates
            && stop_after.is_none_or(|n| done_here < n)
            && !self.schedule.as_ref().is_some_and(MoccSchedule::converged)
        {
            self.assign_objectives();
            let net = self.collect_rollout();
            let (rollout_reward, replay_reward) = self.group_rewards();
            let batch = self.finish_batch();
            let losses = self.update(&batch)?;
            self.counters.updates += 1;
            self.advance_schedule();
            self.log_adaptation(rollout_reward, replay_reward);
            done_here += 1;
            let elapsed = start.elapsed().as_secs_f64().max(1e-9);
            let sps = (self.counters.env_steps - steps_at_start) as f64 / elapsed;
            self.log_update(&losses, &net, sps);
            if self.counters.updates % self.config.checkpoint.every_updates == 0
                || self.counters.updates == self.total_updates
            {
                self.save_checkpoint()?;
            }
            progress(&Progress {
                updates: self.counters.updates,
                total_updates: self.total_updates,
                env_steps: self.counters.env_steps,
                steps_per_sec: sps,
                mean_return: self.mean_recent_return(),
                losses,
                rollout_reward,
                replay_reward,
            });
        }
        if self.saved_updates != Some(self.counters.updates) {
            self.save_checkpoint()?;
        }
        for e in self.recorders.flush() {
            self.warnings.push(format!("log flush failed: {e}"));
        }
        let wall = start.elapsed().as_secs_f64();
        Ok(TrainSummary {
            env_steps: self.counters.env_steps,
            wall_seconds: wall,
            steps_per_sec: (self.counters.env_steps - steps_at_start) as f64 / wall.max(1e-9),
            final_checkpoint: self.last_checkpoint.clone().unwrap_or_default(),
            sim_seconds: self.timing.sim_seconds,
            inference_seconds: self.timing.inference_seconds,
            update_seconds: self.timing.update_seconds,
            mean_episodic_return: self.mean_recent_return(),
        })
    }

    /// Sets each env's objective from the MOCC schedule or the adaptation's split (no-op for
    /// single-objective runs).
    fn assign_objectives(&mut self) {
        if let Some(a) = &self.config.adapt {
            let split = a.assignments(self.config.envs, self.config.seed, self.counters.updates);
            self.env_groups = split.iter().map(|&(_, g)| g).collect();
            for (i, (w, _)) in split.into_iter().enumerate() {
                self.venv.set_objective(i, w);
            }
            return;
        }
        let Some(s) = &self.schedule else {
            return;
        };
        for (i, w) in s.assignments(self.config.envs).into_iter().enumerate() {
            self.venv.set_objective(i, w);
        }
    }

    /// Mean per-step rollout reward of the envs on the run's objective (group 0, or all) and
    /// of the replayed objective's envs (group 1), if any.
    fn group_rewards(&self) -> (f64, Option<f64>) {
        let steps = self.config.ppo.num_steps as f64;
        let mean_of = |g: u8| {
            let rs: Vec<f64> = (0..self.config.envs)
                .filter(|&e| self.env_groups.get(e).copied().unwrap_or(0) == g)
                .map(|e| self.rollout_reward[e] / steps)
                .collect();
            (!rs.is_empty()).then(|| rs.iter().sum::<f64>() / rs.len() as f64)
        };
        (
            mean_of(crate::adapt::CURRENT_GROUP).unwrap_or(0.0),
            mean_of(crate::adapt::REPLAY_GROUP),
        )
    }

    /// Logs the adaptation's per-objective rewards (no-op for other runs).
    fn log_adaptation(&mut self, current: f64, replay: Option<f64>) {
        if self.config.adapt.is_none() {
            return;
        }
        let step = self.counters.env_steps;
        let mut scalars = vec![("adapt/reward_new_objective", current)];
        if let Some(r) = replay {
            scalars.push(("adapt/reward_replayed_objective", r));
        }
        for (tag, v) in scalars {
            for e in self.recorders.scalar(tag, step, v) {
                self.warnings.push(format!("log write failed ({tag}): {e}"));
            }
        }
    }

    /// Refuses a checkpoint whose observations do not have this scenario's length.
    fn check_obs_dim(&self, ckpt: &Path, saved: &RunningMeanStd) -> Result<(), TrainError> {
        if saved.dim() == self.obs_norm.dim() {
            return Ok(());
        }
        Err(TrainError::Incompatible(format!(
            "{}: observation size {} does not match the scenario's {}",
            ckpt.display(),
            saved.dim(),
            self.obs_norm.dim()
        )))
    }

    /// Starts a fresh run from a pretrained checkpoint's weights and observation statistics
    /// (Adam starts afresh). The architectures must match.
    pub fn load_pretrained(&mut self, checkpoint: &Path) -> Result<(), TrainError> {
        if self.counters.updates > 0 {
            return Err(TrainError::Incompatible(
                "pretrained weights can only be loaded before the first update".into(),
            ));
        }
        let ckpt = checkpoint::resolve(checkpoint)?;
        let (state, tensors) = checkpoint::load(&ckpt)?;
        self.check_obs_dim(&ckpt, &state.obs_norm)?;
        load_weights(&self.vs, &tensors)
            .map_err(|e| TrainError::Incompatible(format!("{}: {e}", ckpt.display())))?;
        self.obs_norm = state.obs_norm;
        // The critic learned values in the pretrained run's reward scale: keep that scale.
        if let (Some(mine), Some(saved)) = (&mut self.reward_norm, &state.reward_norm) {
            *mine = saved.with_envs(self.config.envs);
        }
        Ok(())
    }

    /// Puts a resumed run's reward statistics back; a run that scales rewards needs them.
    fn restore_reward_norm(
        &mut self,
        ckpt: &Path,
        saved: Option<RewardScaler>,
    ) -> Result<(), TrainError> {
        match (&mut self.reward_norm, saved) {
            (None, _) => Ok(()),
            (Some(mine), Some(saved)) if saved.returns.len() == self.config.envs => {
                *mine = saved;
                Ok(())
            }
            (Some(_), saved) => Err(TrainError::Incompatible(format!(
                "{}: ppo.normalize_reward is on but the checkpoint holds {}",
                ckpt.display(),
                match saved {
                    Some(s) => format!("reward statistics for {} envs", s.returns.len()),
                    None => "no reward statistics".into(),
                }
            ))),
        }
    }

    /// Feeds the rollout's mean per-step reward of each env (with its objective) to the schedule
    /// and logs where it stands.
    fn advance_schedule(&mut self) {
        let Some(s) = &mut self.schedule else {
            return;
        };
        let steps = self.config.ppo.num_steps as f64;
        let rewards: Vec<([f64; 3], f64)> = (0..self.config.envs)
            .map(|i| {
                (
                    self.venv.envs()[i].objective(),
                    self.rollout_reward[i] / steps,
                )
            })
            .collect();
        let landmark_before = (s.phase() == Phase::Traversal).then(|| s.current_landmark());
        let position_before = s.walk_position();
        s.observe(&rewards);
        let phase = match s.phase() {
            Phase::Bootstrap => 1.0,
            Phase::Traversal => 2.0,
            Phase::Converged => 3.0,
        };
        let mean_reward = rewards.iter().map(|r| r.1).sum::<f64>() / rewards.len().max(1) as f64;
        let mut scalars: Vec<(String, f64)> = vec![
            ("mocc/phase".into(), phase),
            ("mocc/walk_position".into(), position_before as f64),
            ("mocc/cycles".into(), s.cycles() as f64),
            ("mocc/mean_reward".into(), mean_reward),
        ];
        if let Some(l) = landmark_before {
            scalars.push(("mocc/landmark".into(), l as f64));
            if let Some(r) = s.landmark_rewards()[l] {
                scalars.push((format!("mocc/landmark_reward/{l:03}"), r));
            }
        }
        let step = self.counters.env_steps;
        for (tag, v) in scalars {
            for e in self.recorders.scalar(&tag, step, v) {
                self.warnings.push(format!("log write failed ({tag}): {e}"));
            }
        }
    }

    /// The MOCC schedule, if this is a landmark run.
    pub fn schedule(&self) -> Option<&MoccSchedule> {
        self.schedule.as_ref()
    }

    fn mean_recent_return(&self) -> Option<f64> {
        (!self.recent_returns.is_empty())
            .then(|| self.recent_returns.iter().sum::<f64>() / self.recent_returns.len() as f64)
    }

    /// Runs the model on normalized observations: (means, log std, values).
    fn infer(&self, normalized: &[f32], objectives: &[f32]) -> (Vec<f32>, f32, Vec<f32>) {
        let out = self.model.infer(normalized, objectives, self.device);
        (out.mean, out.log_std, out.value)
    }

    fn collect_rollout(&mut self) -> NetStats {
        let n = self.config.envs;
        let t_steps = self.config.ppo.num_steps;
        let d = self.obs_norm.dim();
        let gamma = self.config.ppo.gamma as f32;
        let buf = &mut self.buf;
        buf.obs.resize(t_steps * n * d, 0.0);
        buf.objectives.resize(t_steps * n * 3, 0.0);
        for v in [
            &mut buf.actions,
            &mut buf.logprobs,
            &mut buf.rewards,
            &mut buf.ended,
            &mut buf.values,
        ] {
            v.resize(t_steps * n, 0.0);
        }
        buf.groups.clear();
        if self.env_groups.len() == n && self.env_groups.iter().any(|&g| g != 0) {
            for _ in 0..t_steps {
                buf.groups.extend_from_slice(&self.env_groups);
            }
        }
        let mut net = NetStats::default();
        let mut actions = vec![0.0f32; n];
        self.rollout_reward.iter_mut().for_each(|r| *r = 0.0);
        for t in 0..t_steps {
            let tic = Instant::now();
            let raw = self.venv.observations().to_vec();
            self.obs_norm.update(&raw);
            let obs_slot = t * n * d..(t + 1) * n * d;
            self.obs_norm
                .normalize(&raw, &mut self.buf.obs[obs_slot.clone()]);
            self.buf.objectives[t * n * 3..(t + 1) * n * 3].copy_from_slice(self.venv.objectives());
            let (mean, log_std, value) = self.infer(
                &self.buf.obs[obs_slot],
                &self.buf.objectives[t * n * 3..(t + 1) * n * 3],
            );
            let std = log_std.exp();
            for e in 0..n {
                let eps = standard_normal(&mut self.rng);
                let a = mean[e] + std * eps;
                actions[e] = a;
                self.buf.actions[t * n + e] = a;
                self.buf.logprobs[t * n + e] =
                    (-0.5 * f64::from(eps).powi(2) - f64::from(log_std) - HALF_LN_2PI) as f32;
                self.buf.values[t * n + e] = value[e];
            }
            self.timing.inference_seconds += tic.elapsed().as_secs_f64();
            let tic = Instant::now();
            let step = self
                .venv
                .step(&actions)
                .expect("actions sized to the batch");
            let rewards = step.rewards.to_vec();
            let terminated = step.terminated.to_vec();
            let truncated = step.truncated.to_vec();
            let final_obs = step.final_observations.to_vec();
            for info in step.infos {
                net.add(info);
            }
            self.timing.sim_seconds += tic.elapsed().as_secs_f64();
            let tic = Instant::now();
            let bootstrap = self.truncation_values(&terminated, &truncated, &final_obs);
            self.timing.inference_seconds += tic.elapsed().as_secs_f64();
            self.write_learner_rewards(&rewards, &terminated, &truncated, t * n);
            for e in 0..n {
                let i = t * n + e;
                let done = terminated[e] || truncated[e];
                self.buf.rewards[i] += gamma * bootstrap[e];
                self.buf.ended[i] = if done { 1.0 } else { 0.0 };
                self.episode_return[e] += f64::from(rewards[e]);
                self.rollout_reward[e] += f64::from(rewards[e]);
                self.episode_len[e] += 1;
                if done {
                    self.recent_returns.push_back(self.episode_return[e]);
                    if self.recent_returns.len() > RECENT_EPISODES {
                        self.recent_returns.pop_front();
                    }
                    self.counters.episodes += 1;
                    self.episode_return[e] = 0.0;
                    self.episode_len[e] = 0;
                }
            }
            self.counters.env_steps += n as u64;
        }
        net
    }

    /// Writes the rewards the learner sees into `buf.rewards[start..start + n]`: scaled by the
    /// return statistics when `ppo.normalize_reward` is on, raw otherwise.
    fn write_learner_rewards(
        &mut self,
        rewards: &[f32],
        terminated: &[bool],
        truncated: &[bool],
        start: usize,
    ) {
        let out = &mut self.buf.rewards[start..start + rewards.len()];
        let Some(scaler) = &mut self.reward_norm else {
            out.copy_from_slice(rewards);
            return;
        };
        let done: Vec<bool> = terminated
            .iter()
            .zip(truncated)
            .map(|(a, b)| *a || *b)
            .collect();
        let ppo = &self.config.ppo;
        scaler.scale(rewards, &done, ppo.gamma, ppo.clip_reward, out);
    }

    /// `V(final observation)` for envs cut by the time limit and not terminated (0 elsewhere):
    /// the time limit is bootstrapped, a termination is not.
    fn truncation_values(
        &self,
        terminated: &[bool],
        truncated: &[bool],
        final_obs: &[f32],
    ) -> Vec<f32> {
        let n = truncated.len();
        let mut out = vec![0.0f32; n];
        let cut = |e: usize| truncated[e] && !terminated[e];
        if !(0..n).any(cut) {
            return out;
        }
        let d = self.obs_norm.dim();
        let mut normalized = vec![0.0f32; n * d];
        self.obs_norm.normalize(final_obs, &mut normalized);
        let (_, _, values) = self.infer(&normalized, self.venv.objectives());
        for e in 0..n {
            if cut(e) {
                out[e] = values[e];
            }
        }
        out
    }

    fn finish_batch(&mut self) -> Batch {
        let n = self.config.envs;
        let d = self.obs_norm.dim();
        let raw = self.venv.observations().to_vec();
        let mut normalized = vec![0.0f32; n * d];
        self.obs_norm.normalize(&raw, &mut normalized);
        let (_, _, next_values) = self.infer(&normalized, self.venv.objectives());
        let (advantages, returns) = compute_gae(
            &self.buf.rewards,
            &self.buf.values,
            &self.buf.ended,
            &next_values,
            n,
            self.config.ppo.gamma,
            self.config.ppo.gae_lambda,
        );
        Batch {
            obs: self.buf.obs.clone(),
            objectives: self.buf.objectives.clone(),
            actions: self.buf.actions.clone(),
            logprobs: self.buf.logprobs.clone(),
            advantages,
            returns,
            values: self.buf.values.clone(),
            groups: self.buf.groups.clone(),
        }
    }

    fn update(&mut self, batch: &Batch) -> Result<LossStats, TrainError> {
        let tic = Instant::now();
        let progress = self.counters.updates as f64 / self.total_updates as f64;
        let ppo = &self.config.ppo;
        self.opt.lr = if ppo.anneal_lr {
            ppo.learning_rate * (1.0 - progress)
        } else {
            ppo.learning_rate
        };
        let ent_coef = ppo.ent_coef.at(progress);
        let stats = mocc_agents::update(
            &self.model,
            &mut self.opt,
            batch,
            ppo,
            ent_coef,
            self.device,
            &mut self.rng,
        )
        .map_err(|source| TrainError::NonFinite {
            iteration: self.counters.updates + 1,
            source,
        })?;
        self.timing.update_seconds += tic.elapsed().as_secs_f64();
        Ok(stats)
    }

    fn log_update(&mut self, l: &LossStats, net: &NetStats, sps: f64) {
        let step = self.counters.env_steps;
        let mut scalars: Vec<(&str, f64)> = vec![
            ("charts/SPS", sps),
            ("charts/learning_rate", l.learning_rate),
            ("charts/ent_coef", l.ent_coef),
            ("losses/policy_loss", l.pg_loss),
            ("losses/value_loss", l.v_loss),
            ("losses/entropy", l.entropy),
            ("losses/approx_kl", l.approx_kl),
            ("losses/clipfrac", l.clipfrac),
            ("losses/explained_variance", l.explained_variance),
            ("losses/grad_norm", l.grad_norm),
        ];
        if let Some(r) = self.mean_recent_return() {
            scalars.push(("charts/episodic_return", r));
        }
        if let Some(scaler) = &self.reward_norm {
            scalars.push(("charts/reward_scale", scaler.factor()));
        }
        if net.n > 0.0 {
            scalars.push(("network/utilization", net.utilization / net.n));
            if net.rtt_n > 0.0 {
                scalars.push(("network/rtt_ratio", net.rtt_ratio / net.rtt_n));
            }
            scalars.push(("network/loss", net.loss / net.n));
            scalars.push(("network/throughput_pps", net.throughput_pps / net.n));
        }
        for (tag, v) in scalars {
            for e in self.recorders.scalar(tag, step, v) {
                self.warnings.push(format!("log write failed ({tag}): {e}"));
            }
        }
        for e in self.recorders.flush() {
            self.warnings.push(format!("log flush failed: {e}"));
        }
    }

    /// Saves a checkpoint now and applies the retention policy.
    pub fn save_checkpoint(&mut self) -> Result<PathBuf, TrainError> {
        let envs = EnvsState {
            snapshots: self.venv.snapshot(),
            episode_return: self.episode_return.clone(),
            episode_len: self.episode_len.clone(),
            recent_returns: self.recent_returns.clone(),
        };
        let state = CheckpointState {
            format: CHECKPOINT_FORMAT,
            config: self.config.clone(),
            config_path: self.config_path.clone(),
            counters: self.counters,
            adam_step: self.opt.step_count(),
            obs_norm: self.obs_norm.clone(),
            reward_norm: self.reward_norm.clone(),
            rng: self.rng.clone(),
            recent_return: self.mean_recent_return(),
            envs: serde_json::to_value(&envs)
                .map_err(|e| TrainError::Incompatible(format!("env state: {e}")))?,
            schedule: self.schedule.clone(),
            git_revision: self.git_revision.clone(),
        };
        let mut tensors: Vec<(String, Tensor)> = self.vs.variables().into_iter().collect();
        tensors.extend(self.opt.state_tensors());
        tensors.sort_by(|a, b| a.0.cmp(&b.0));
        let tensors: Vec<(String, Tensor)> = tensors
            .into_iter()
            .map(|(k, t)| (k, t.to_device(Device::Cpu).contiguous()))
            .collect();
        let dir = self.run_dir.join("checkpoints");
        let path = checkpoint::save(&dir, &state, &tensors)?;
        self.last_checkpoint = Some(path.clone());
        self.saved_updates = Some(self.counters.updates);
        self.apply_retention(&dir);
        Ok(path)
    }

    fn apply_retention(&mut self, dir: &Path) {
        let Ok(existing) = checkpoint::list(dir) else {
            return;
        };
        let scored: Vec<(u64, Option<f64>)> = existing
            .iter()
            .map(|(u, p)| (*u, checkpoint::load_score(p)))
            .collect();
        for u in checkpoint::retention(&scored, self.config.checkpoint.keep_last) {
            if let Some((_, p)) = existing.iter().find(|(x, _)| *x == u) {
                if let Err(e) = std::fs::remove_dir_all(p) {
                    self.warnings.push(format!(
                        "could not delete old checkpoint {}: {e}",
                        p.display()
                    ));
                }
            }
        }
    }
}

const HALF_LN_2PI: f64 = 0.918_938_533_204_672_8;

fn rng_for(seed: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // Stream 0 of the seed belongs to env 0; the trainer uses its own stream.
    rng.set_stream(u64::MAX);
    rng
}

/// A standard normal draw (Box-Muller), from the trainer's own RNG so its state checkpoints.
fn standard_normal<R: Rng>(rng: &mut R) -> f32 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random::<f64>();
    ((-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()) as f32
}

/// The scenario of a config (for commands that need it without training).
pub fn scenario_of(loaded: &LoadedConfig) -> Result<Scenario, TrainError> {
    Ok(loaded.scenario()?)
}
