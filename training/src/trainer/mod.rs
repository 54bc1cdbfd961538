//! The PPO trainer of every run (Aurora, MOCC's landmarks, adaptation): rollouts on a VecEnv,
//! the learner's update, the objective plan, logging and checkpoints. [`Trainer::run`] reads
//! top to bottom like CleanRL's `ppo_continuous_action`; the learner (`mocc_agents::PpoLearner`)
//! owns the model, sampling and the update, the plan (`crate::plan`) which objective each env
//! runs, and [`resume`] saving, resuming and pretrained starts.

mod resume;

use crate::checkpoint::{self, CheckpointError, Counters, InputDigest};
use crate::config::{ConfigError, LoadedConfig, TrainConfig};
use crate::episodes::Episodes;
use crate::plan::{group_means, plan_for, EnvReward, ObjectivePlan};
use crate::run_folder;
use crate::run_lock::{RunLock, RunLockError};
use crate::run_log::{update_scalars, RunLog};
use crate::schedule::MoccSchedule;
use mocc_agents::{
    init_torch_threads, prepare_kernels, resolve_device, Collective, DeviceError, LossStats,
    PpoLearner, SingleProcess, StepOutcome, Timed, UpdateError,
};
use mocc_eval::mi_stats::MiStats;
use mocc_gym::{VecEnv, VecEnvError};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tch::nn;

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
    /// Ranks of one run hold different weights (a bug: every rank applies the same update).
    #[error("rank {rank} holds other weights than rank 0 after update {update}")]
    RanksDiverged {
        /// The update after which the weights were compared.
        update: u64,
        /// The first rank that differs.
        rank: usize,
    },
    /// Another process writes into the run folder.
    #[error(transparent)]
    Lock(#[from] RunLockError),
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
    /// Of those, summing gradients over ranks (0 alone).
    #[serde(default)]
    pub gradient_sum_seconds: f64,
}

/// The last line `mocc train` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrainSummary {
    /// Whether a stop request ended the run before its budget (see [`Trainer::stop_when`]).
    pub interrupted: bool,
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
    /// The processes that trained together (MPI ranks; 1 without MPI).
    pub ranks: usize,
    /// Seconds this rank spent in collective operations (gradient sums, shared statistics,
    /// checkpoint gathers; waiting for slower ranks included); 0 alone.
    pub collective_seconds: f64,
    /// Of those, the seconds spent summing gradients over the ranks.
    pub gradient_sum_seconds: f64,
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

/// The run folder's lock, taken by rank 0 alone (the rank that writes there).
pub(crate) fn lock_on_rank_zero(
    run_dir: &Path,
    world: &dyn Collective,
) -> Result<Option<RunLock>, TrainError> {
    if world.rank() == 0 {
        Ok(Some(RunLock::acquire(run_dir)?))
    } else {
        Ok(None)
    }
}

/// Readies `run_dir` (locked) for a fresh run: it must be new or empty, or a run folder that
/// never saved a checkpoint (an attempt killed early), whose logs are then started afresh so
/// that no update is logged twice. A folder with checkpoints is continued with `--resume`;
/// one holding anything a run does not write (an export, say) is refused.
fn start_afresh(run_dir: &Path) -> Result<(), TrainError> {
    let refuse =
        |message: String| TrainError::Incompatible(format!("{}: {message}", run_dir.display()));
    run_folder::check_run_folder(run_dir)?;
    let ckpts = run_dir.join(checkpoint::CHECKPOINTS_DIR);
    if ckpts.is_dir() && checkpoint::list(&ckpts).is_ok_and(|l| !l.is_empty()) {
        return Err(refuse(format!(
            "this run folder already holds checkpoints; continue it with `mocc train \
                 --resume {}` or choose another --out",
            run_dir.display()
        )));
    }
    let io = |source| TrainError::Io {
        path: run_dir.to_path_buf(),
        source,
    };
    let mut logs = Vec::new();
    for entry in std::fs::read_dir(run_dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if run_folder::is_log(&name) {
            logs.push(entry.path());
        } else if !run_folder::is_run_entry(&name) {
            return Err(refuse(format!(
                "holds {name:?}, which a run does not write; a run starts in a new or empty \
                 folder (or one of its own earlier attempts): choose another --out"
            )));
        }
    }
    for log in logs {
        std::fs::remove_file(&log).map_err(|source| TrainError::Io { path: log, source })?;
    }
    Ok(run_folder::mark_run_folder(run_dir)?)
}

/// The rows the learner reads for `lanes`, in order, into `out`: each lane's observation and,
/// with a centralized critic, its global state after it; the current ones, or (`ended`) those
/// the lanes' last trajectories ended on.
fn learner_rows(venv: &VecEnv, lanes: &[usize], ended: bool, out: &mut Vec<f32>) {
    let (d, g) = (venv.obs_len(), venv.global_state_len());
    let (obs, global) = if ended {
        (venv.final_observations(), venv.final_global_states())
    } else {
        (venv.observations(), venv.global_states())
    };
    out.clear();
    for &lane in lanes {
        out.extend_from_slice(&obs[lane * d..(lane + 1) * d]);
        if g > 0 {
            out.extend_from_slice(&global[lane * g..(lane + 1) * g]);
        }
    }
}

/// Copies rows `rows` of a `[_, width]` matrix into `out`, in order.
fn gather_rows(matrix: &[f32], width: usize, rows: &[usize], out: &mut Vec<f32>) {
    out.clear();
    for &r in rows {
        out.extend_from_slice(&matrix[r * width..(r + 1) * width]);
    }
}

/// A training run in progress.
pub struct Trainer {
    config: TrainConfig,
    config_path: PathBuf,
    run_dir: PathBuf,
    venv: VecEnv,
    learner: PpoLearner,
    plan: Box<dyn ObjectivePlan>,
    episodes: Episodes,
    counters: Counters,
    total_updates: u64,
    log: RunLog,
    timing: TimeSplit,
    last_checkpoint: Option<PathBuf>,
    /// A stop request abandoned an update midway: the model is not saved again.
    abandoned_update: bool,
    saved_updates: Option<u64>,
    git_revision: Option<String>,
    /// Digests of the files the run reads by path, checked again on resume.
    inputs: Vec<InputDigest>,
    /// Held while the run writes into `run_dir` (by rank 0 alone: it alone writes there).
    _lock: Option<RunLock>,
    /// Set when the run should stop (between updates, or within one: see `stop_when`).
    stop: Option<&'static AtomicBool>,
    /// The ranks that train this run together (one process by default), timed.
    world: Arc<Timed>,
}

/// The processes a run trains on.
pub type World = Arc<dyn Collective + Send + Sync>;

impl Trainer {
    /// A fresh run of `loaded` writing into `run_dir`, which must not hold checkpoints yet.
    pub fn new(loaded: &LoadedConfig, run_dir: &Path) -> Result<Self, TrainError> {
        Self::new_on(loaded, run_dir, Arc::new(SingleProcess))
    }

    /// A fresh run on the ranks of `world` (data-parallel: each rank steps `envs` envs of its
    /// own, rank `r` the envs `r * envs..(r + 1) * envs` of one process stepping them all, and
    /// the learner averages gradients over the ranks); rank 0 alone writes into `run_dir`.
    pub fn new_on(loaded: &LoadedConfig, run_dir: &Path, world: World) -> Result<Self, TrainError> {
        let resolved = loaded.resolved()?;
        let inputs = InputDigest::of_inputs(&resolved)?;
        let lock = lock_on_rank_zero(run_dir, &*world)?;
        if world.rank() == 0 {
            start_afresh(run_dir)?;
        }
        let mut t = Self::build(&resolved, run_dir, lock, None, world)?;
        t.inputs = inputs;
        Ok(t)
    }

    /// The envs, learner, plan and log of a run; `saved_schedule` continues a landmark walk.
    fn build(
        loaded: &LoadedConfig,
        run_dir: &Path,
        lock: Option<RunLock>,
        saved_schedule: Option<MoccSchedule>,
        world: World,
    ) -> Result<Self, TrainError> {
        let world = Arc::new(Timed::new(world));
        let scenario = Arc::new(loaded.scenario()?);
        let cfg = loaded.config.clone();
        // Before libtorch's first kernel in this process (later it would be too late).
        prepare_kernels(cfg.ppo.numerics);
        init_torch_threads(cfg.torch_threads);
        let device = resolve_device(cfg.device)?;
        let first_env = world.rank() * cfg.envs;
        let mut venv =
            VecEnv::new_from(scenario.clone(), first_env, cfg.envs, cfg.seed, cfg.threads)?;
        let arch = cfg.agent.architecture_of(&scenario);
        if arch.global_dim > 0 {
            venv = venv.with_global_state();
        }
        let lanes = venv.lanes();
        let learner =
            PpoLearner::new(arch, cfg.ppo, lanes, cfg.seed, device).with_world(world.clone());
        let plan = plan_for(&cfg, saved_schedule).map_err(TrainError::Incompatible)?;
        let batch = (cfg.ppo.num_steps * cfg.envs * world.ranks()) as u64;
        let log = if world.rank() == 0 {
            std::fs::create_dir_all(run_dir).map_err(|source| TrainError::Io {
                path: run_dir.to_path_buf(),
                source,
            })?;
            RunLog::open(run_dir, &cfg.logging)
        } else {
            RunLog::default()
        };
        Ok(Self {
            total_updates: cfg.budget.env_steps.div_ceil(batch).max(1),
            episodes: Episodes::new(lanes),
            log,
            timing: TimeSplit::default(),
            counters: Counters::default(),
            last_checkpoint: None,
            abandoned_update: false,
            saved_updates: None,
            git_revision: None,
            inputs: Vec::new(),
            _lock: lock,
            stop: None,
            config_path: loaded.path.clone(),
            run_dir: run_dir.to_path_buf(),
            config: cfg,
            venv,
            learner,
            plan,
            world,
        })
    }

    /// Stops [`Self::run`] once `flag` is set (by a SIGINT or SIGTERM handler, say): between
    /// updates the run ends with a checkpoint, as at the end of its budget; during an update
    /// the update is abandoned before its next minibatch and the last complete checkpoint is
    /// the run's end (so a stop takes one minibatch, not a whole update). Its summary says it
    /// was interrupted. Alone only: ranks of one run would see the flag at different updates,
    /// so on several ranks the flag is ignored.
    pub fn stop_when(&mut self, flag: &'static AtomicBool) {
        if self.world.ranks() == 1 {
            self.stop = Some(flag);
            self.learner.cancel_when(flag);
        }
    }

    fn stop_requested(&self) -> bool {
        self.stop.is_some_and(|f| f.load(Ordering::SeqCst))
    }

    /// Trains until the budget is spent, the plan is finished, a stop is requested
    /// ([`Self::stop_when`]) or `stop_after` more updates (for tests), saving checkpoints on
    /// the cadence and at the end.
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
            && !self.plan.finished()
            && !self.stop_requested()
        {
            let groups = self.assign_objectives();
            let net = self.collect_rollout(&groups);
            let rewards = self.rollout_rewards(&groups);
            let losses = match self.update() {
                Err(TrainError::NonFinite {
                    source: UpdateError::Cancelled { .. },
                    ..
                }) => {
                    // The model is mid-update: nothing of it is saved.
                    self.abandoned_update = true;
                    break;
                }
                other => other?,
            };
            self.counters.updates += 1;
            let plan_scalars = self.plan.observe(&rewards);
            self.log.scalars(self.counters.env_steps, plan_scalars);
            done_here += 1;
            let sps = (self.counters.env_steps - steps_at_start) as f64
                / start.elapsed().as_secs_f64().max(1e-9);
            self.log_update(&losses, &net, sps);
            if self
                .counters
                .updates
                .is_multiple_of(self.config.checkpoint.every_updates)
                || self.counters.updates == self.total_updates
            {
                self.save_checkpoint()?;
            }
            let (rollout_reward, replay_reward) = group_means(&rewards);
            progress(&Progress {
                updates: self.counters.updates,
                total_updates: self.total_updates,
                env_steps: self.counters.env_steps,
                steps_per_sec: sps,
                mean_return: self.episodes.mean_recent_return(),
                losses,
                rollout_reward,
                replay_reward,
            });
        }
        self.finish(start, steps_at_start)
    }

    /// Sets each lane's objective for the next rollout from the plan; returns each lane's loss
    /// group.
    fn assign_objectives(&mut self) -> Vec<u8> {
        let n = self.venv.lanes();
        let all = n * self.world.ranks();
        let Some(assignments) = self.plan.assign(all, self.counters.updates) else {
            return vec![crate::adapt::CURRENT_GROUP; n];
        };
        // This rank's lanes of the assignment of every rank's lanes.
        let mine = &assignments[self.world.rank() * n..(self.world.rank() + 1) * n];
        for (i, &(w, _)) in mine.iter().enumerate() {
            self.venv.set_objective(i, w);
        }
        mine.iter().map(|&(_, g)| g).collect()
    }

    /// Runs `num_steps` steps of the batch with the learner acting for every ready lane;
    /// returns the rollout's network statistics.
    fn collect_rollout(&mut self, groups: &[u8]) -> MiStats {
        let lanes = self.venv.lanes();
        let g = self.venv.global_state_len();
        let every_lane: Vec<usize> = (0..lanes).collect();
        let mut final_rows: Vec<f32> = Vec::new();
        let objectives = self.venv.objectives().to_vec();
        let mut ready: Vec<usize> = Vec::with_capacity(lanes);
        let mut ready_obs: Vec<f32> = Vec::new();
        let mut ready_objectives: Vec<f32> = Vec::new();
        let mut actions = vec![0.0f32; lanes];
        let mut net = MiStats::default();
        let (mut steps, mut episodes) = (0u64, 0u64);
        self.learner.start_rollout(groups);
        self.episodes.start_rollout();
        for _ in 0..self.config.ppo.num_steps {
            let tic = Instant::now();
            ready.clear();
            ready.extend_from_slice(self.venv.ready_lanes());
            let k = ready.len();
            if k == lanes && g == 0 {
                self.learner
                    .act(&ready, self.venv.observations(), &objectives, &mut actions);
            } else {
                learner_rows(&self.venv, &ready, false, &mut ready_obs);
                gather_rows(&objectives, 3, &ready, &mut ready_objectives);
                self.learner
                    .act(&ready, &ready_obs, &ready_objectives, &mut actions[..k]);
            }
            self.timing.inference_seconds += tic.elapsed().as_secs_f64();
            let tic = Instant::now();
            self.venv
                .step(&actions[..k])
                .expect("one action per ready lane");
            let step = self.venv.view();
            let mut completed = 0u64;
            for (info, _) in step.infos.iter().zip(step.completed).filter(|(_, &c)| c) {
                net.add(info);
                completed += 1;
            }
            self.timing.sim_seconds += tic.elapsed().as_secs_f64();
            let tic = Instant::now();
            let final_observations = if g == 0 {
                step.final_observations
            } else {
                learner_rows(&self.venv, &every_lane, true, &mut final_rows);
                &final_rows
            };
            self.learner.record(&StepOutcome {
                completed: step.completed,
                rewards: step.rewards,
                terminated: step.terminated,
                truncated: step.truncated,
                final_observations,
                objectives: &objectives,
            });
            self.timing.inference_seconds += tic.elapsed().as_secs_f64();
            episodes += self.episodes.record_completed(
                step.rewards,
                step.terminated,
                step.truncated,
                Some(step.completed),
            );
            steps += completed;
        }
        let totals = self.world.sum_f64(&[steps as f64, episodes as f64]);
        self.counters.env_steps += totals[0] as u64;
        self.counters.episodes += totals[1] as u64;
        net
    }

    /// Each lane's mean per-step reward over the rollout, with its objective and group (lanes
    /// that completed no MI are left out).
    fn rollout_rewards(&self, groups: &[u8]) -> Vec<EnvReward> {
        let mine = self.own_rollout_rewards(groups);
        if self.world.ranks() == 1 {
            return mine;
        }
        let flat: Vec<f64> = mine.iter().flat_map(EnvReward::to_numbers).collect();
        self.world
            .all_gather_varying_f64(&flat)
            .iter()
            .flat_map(|part| part.chunks_exact(5).map(EnvReward::from_numbers))
            .collect()
    }

    /// [`Self::rollout_rewards`] of this rank's lanes.
    fn own_rollout_rewards(&self, groups: &[u8]) -> Vec<EnvReward> {
        self.episodes
            .rollout_means()
            .enumerate()
            .filter_map(|(lane, reward)| {
                Some(EnvReward {
                    objective: self.venv.objective(lane),
                    group: groups
                        .get(lane)
                        .copied()
                        .unwrap_or(crate::adapt::CURRENT_GROUP),
                    reward: reward?,
                })
            })
            .collect()
    }

    /// The learner's update on the rollout, at this point of the budget.
    fn update(&mut self) -> Result<LossStats, TrainError> {
        let tic = Instant::now();
        let progress = self.counters.updates as f64 / self.total_updates as f64;
        let next = if self.venv.global_state_len() == 0 {
            self.venv.observations().to_vec()
        } else {
            let every_lane: Vec<usize> = (0..self.venv.lanes()).collect();
            let mut rows = Vec::new();
            learner_rows(&self.venv, &every_lane, false, &mut rows);
            rows
        };
        let stats = self
            .learner
            .update(&next, self.venv.objectives(), progress)
            .map_err(|source| TrainError::NonFinite {
                iteration: self.counters.updates + 1,
                source,
            })?;
        self.timing.update_seconds += tic.elapsed().as_secs_f64();
        self.timing.gradient_sum_seconds += stats.gradient_sum_seconds;
        Ok(stats)
    }

    fn log_update(&mut self, losses: &LossStats, net: &MiStats, sps: f64) {
        let scale = self.learner.reward_scaler().map(|s| s.factor());
        let scalars = update_scalars(losses, sps, self.episodes.mean_recent_return(), scale, net);
        self.log.scalars(self.counters.env_steps, scalars);
        self.log.flush();
    }

    /// The last checkpoint (if the loop ended between cadences), flushed logs and the summary.
    fn finish(&mut self, start: Instant, steps_at_start: u64) -> Result<TrainSummary, TrainError> {
        if !self.abandoned_update && self.saved_updates != Some(self.counters.updates) {
            self.save_checkpoint()?;
        }
        self.log.flush();
        let wall = start.elapsed().as_secs_f64();
        Ok(TrainSummary {
            interrupted: self.stop_requested()
                && self.counters.updates < self.total_updates
                && !self.plan.finished(),
            env_steps: self.counters.env_steps,
            wall_seconds: wall,
            steps_per_sec: (self.counters.env_steps - steps_at_start) as f64 / wall.max(1e-9),
            final_checkpoint: self.last_checkpoint.clone().unwrap_or_default(),
            sim_seconds: self.timing.sim_seconds,
            inference_seconds: self.timing.inference_seconds,
            update_seconds: self.timing.update_seconds,
            mean_episodic_return: self.mean_recent_return(),
            ranks: self.world.ranks(),
            collective_seconds: self.world.seconds(),
            gradient_sum_seconds: self.timing.gradient_sum_seconds,
        })
    }

    /// The mean return of every rank's recent episodes (up to 100 per rank).
    fn mean_recent_return(&self) -> Option<f64> {
        if self.world.ranks() == 1 {
            return self.episodes.mean_recent_return();
        }
        let (sum, count) = self.episodes.recent_sum_and_count();
        let all = self.world.sum_f64(&[sum, count as f64]);
        (all[1] > 0.0).then(|| all[0] / all[1])
    }

    /// Checks that every rank holds the same weights, Adam state, statistics, RNG, schedule
    /// and counters as rank 0 (a digest of each, compared at every checkpoint; nothing to check
    /// alone).
    fn check_ranks_agree(&self) -> Result<(), TrainError> {
        if self.world.ranks() == 1 {
            return Ok(());
        }
        let digests = self.world.all_gather_f64(&self.state_digest());
        let mine = digests.len() / self.world.ranks();
        let first = &digests[..mine];
        match digests.chunks_exact(mine).position(|d| d != first) {
            None => Ok(()),
            Some(rank) => Err(TrainError::RanksDiverged {
                update: self.counters.updates,
                rank,
            }),
        }
    }

    /// What every rank must hold alike (tensors, Adam's step, observation and reward
    /// statistics, the learner's RNG, the schedule, the counters) as four 16-bit parts of a
    /// 64-bit hash (each exact in an f64).
    fn state_digest(&self) -> [f64; 4] {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for (name, t) in self.learner.tensors() {
            name.hash(&mut h);
            let flat = t.to_kind(tch::Kind::Double).reshape([-1]);
            for v in Vec::<f64>::try_from(&flat).expect("a CPU tensor of doubles") {
                v.to_bits().hash(&mut h);
            }
        }
        let state = self.learner.state();
        let shared = (
            state.adam_step,
            &state.obs_norm,
            state.reward_norm.as_ref().map(|r| &r.return_stats),
            &state.rng,
            self.plan.schedule(),
            self.counters,
        );
        // Serializing plain data to memory cannot fail; an empty digest part would show
        // as a difference, not hide one.
        serde_json::to_vec(&shared).unwrap_or_default().hash(&mut h);
        let x = h.finish();
        [0, 16, 32, 48].map(|shift| ((x >> shift) & 0xffff) as f64)
    }

    /// This process's rank (0 alone).
    pub fn rank(&self) -> usize {
        self.world.rank()
    }

    /// Warnings (failed log writes) accumulated since the last call.
    pub fn take_warnings(&mut self) -> Vec<String> {
        self.log.take_warnings()
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
        self.learner.var_store()
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

    /// The MOCC schedule, if this is a landmark run.
    pub fn schedule(&self) -> Option<&MoccSchedule> {
        self.plan.schedule()
    }
}
