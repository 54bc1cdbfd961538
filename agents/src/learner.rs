//! The PPO learner: model, optimizer, observation and reward normalization, rollout storage,
//! action sampling, GAE and the update, behind four calls a trainer makes in CleanRL's order:
//!
//! ```text
//! learner.start_rollout(groups)
//! for t in 0..num_steps:
//!     learner.act(ready, obs, objectives, &mut actions) // normalize, sample, store
//!     step = env.step(actions)
//!     learner.record(&step_outcome)                     // rewards, dones, truncation bootstrap
//! learner.update(next_obs, objectives, progress)        // GAE, PPO epochs, Adam
//! ```
//!
//! It learns from `lanes` trajectories: one per env, or one per learned sender when several
//! share an env's link. A lane acts when it is ready (its sender's MI ended) and its decision's
//! outcome is recorded when the next MI closes, so lanes need not move in lockstep; each keeps
//! its own trajectory for GAE. A decision still open when the rollout ends is left out of the
//! update and bootstraps the lane's previous one.
//!
//! The learner owns its RNG (action noise and minibatch order), so a checkpoint of its state
//! resumes bit for bit.

use crate::adam::Adam;
use crate::collective::{Collective, SingleProcess};
use crate::gaussian;
use crate::model::{load_weights, load_weights_into_central, ActorCritic, Architecture};
use crate::obs_norm::RunningMeanStd;
use crate::ppo::{self, LossStats, Replicas, UpdateError};
use crate::ppo_config::PpoConfig;
use crate::reward_norm::RewardScaler;
use crate::rollout::RolloutBuffer;
use crate::value_norm::ValueNorm;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;
use std::sync::Arc;
use tch::{nn, Device, Tensor};

/// What the envs returned for one step of the batch (all slices of length `lanes`, final
/// observations `[lanes, obs_dim]`), as the learner needs it.
#[derive(Debug, Clone, Copy)]
pub struct StepOutcome<'a> {
    /// Lanes whose decision's outcome arrived with this step (all of them when every lane acts
    /// at every step).
    pub completed: &'a [bool],
    /// Raw rewards.
    pub rewards: &'a [f32],
    /// Episodes that ended by the env's dynamics (not bootstrapped).
    pub terminated: &'a [bool],
    /// Episodes cut by the time limit (bootstrapped with the final observation's value).
    pub truncated: &'a [bool],
    /// The observation each env ended its episode on (rows of live envs are unused).
    pub final_observations: &'a [f32],
    /// The objective each lane ran this step.
    pub objectives: &'a [f32],
}

/// The learner state a checkpoint holds besides the tensors.
#[derive(Debug, Clone)]
pub struct LearnerState {
    /// Adam's step count.
    pub adam_step: u64,
    /// Observation statistics.
    pub obs_norm: RunningMeanStd,
    /// Reward statistics (when reward scaling is on).
    pub reward_norm: Option<RewardScaler>,
    /// Return statistics (when value normalization is on).
    pub value_norm: Option<ValueNorm>,
    /// The learner's RNG.
    pub rng: ChaCha8Rng,
}

/// A PPO learner for `lanes` parallel trajectories.
pub struct PpoLearner {
    cfg: PpoConfig,
    lanes: usize,
    device: Device,
    vs: nn::VarStore,
    model: ActorCritic,
    opt: Adam,
    /// Model copies for a data-parallel update (`update_workers - 1`).
    replicas: Replicas,
    obs_norm: RunningMeanStd,
    reward_norm: Option<RewardScaler>,
    value_norm: Option<ValueNorm>,
    rng: ChaCha8Rng,
    rollout: RolloutBuffer,
    /// Each lane's decision whose outcome has not arrived yet (a row of this rollout).
    pending: Vec<Option<usize>>,
    /// The ranks that train this model together (one process by default).
    world: Arc<dyn Collective + Send + Sync>,
    /// A stop request that ends an update in progress (one process only).
    cancel: Option<&'static std::sync::atomic::AtomicBool>,
}

/// The learner's RNG for `seed`: stream `u64::MAX` of the seed's ChaCha8 key (streams from 0
/// belong to the envs).
fn learner_rng(seed: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(u64::MAX);
    rng
}

impl PpoLearner {
    /// A fresh learner; its weights are drawn from `seed` ([`ActorCritic::seeded`]).
    pub fn new(
        arch: Architecture,
        cfg: PpoConfig,
        lanes: usize,
        seed: u64,
        device: Device,
    ) -> Self {
        let obs_dim = arch.input_dim();
        let vs = nn::VarStore::new(device);
        let model = ActorCritic::seeded(&vs.root(), arch, cfg.numerics, seed);
        let opt = Adam::new(&vs, cfg.learning_rate, cfg.adam_eps).with_numerics(cfg.numerics);
        let replicas = Replicas::new(
            model.architecture(),
            cfg.numerics,
            device,
            cfg.update_workers.max(1) - 1,
        );
        Self {
            replicas,
            obs_norm: RunningMeanStd::new(obs_dim),
            reward_norm: cfg.normalize_reward.then(|| RewardScaler::new(lanes)),
            value_norm: cfg.value_norm.then(ValueNorm::default),
            rng: learner_rng(seed),
            rollout: RolloutBuffer::default(),
            pending: vec![None; lanes],
            world: Arc::new(SingleProcess),
            cancel: None,
            cfg,
            lanes,
            device,
            vs,
            model,
            opt,
        }
    }

    /// Trains together with the other ranks of `world` (data-parallel PPO): observation and
    /// reward statistics fold in every rank's samples, action noise is drawn as one process
    /// holding every rank's lanes in rank order would draw it, and each minibatch's gradient
    /// is the whole minibatch's over every rank's rows. Every rank builds its learner with the
    /// same seed and calls the same methods in the same order.
    pub fn with_world(mut self, world: Arc<dyn Collective + Send + Sync>) -> Self {
        self.world = world;
        self
    }

    /// Starts a rollout; `lane_groups` gives each lane's loss group (empty for one group, see
    /// `grouped_ppo_loss`).
    pub fn start_rollout(&mut self, lane_groups: &[u8]) {
        let obs_dim = self.obs_norm.dim();
        self.rollout.start(self.lanes, obs_dim, lane_groups);
        self.pending.fill(None);
    }

    /// Folds the raw observations of the ready `lanes` (`[lanes.len(), obs_dim]`, in that
    /// order) into the statistics, samples one action per lane into `actions` and stores what
    /// the update needs.
    pub fn act(
        &mut self,
        lanes: &[usize],
        raw_obs: &[f32],
        objectives: &[f32],
        actions: &mut [f32],
    ) {
        let (before, after) = self.fold_observations(raw_obs);
        let rows = self.rollout.push_rows(lanes);
        self.obs_norm
            .normalize(raw_obs, self.rollout.obs_of_mut(rows.clone()));
        self.rollout
            .objectives_of_mut(rows.clone())
            .copy_from_slice(objectives);
        let out = self.model.infer(
            self.rollout.obs_of(rows.clone()),
            self.rollout.objectives_of(rows.clone()),
            self.device,
        );
        let std = out.log_std.exp();
        self.skip_noise(before);
        for (j, i) in rows.enumerate() {
            let s = gaussian::sample(out.mean[j], std, out.log_std, &mut self.rng);
            actions[j] = s.action;
            self.rollout.actions[i] = s.action;
            self.rollout.logprobs[i] = s.log_prob;
            self.rollout.values[i] = self.returns_of(out.value[j]);
            self.pending[lanes[j]] = Some(i);
        }
        self.skip_noise(after);
    }

    /// Folds the raw observations of this step's ready lanes (on every rank) into the
    /// statistics; returns how many lanes act on the ranks before this one and after it (0, 0
    /// in one process). One all-gather carries both: each rank's row count leads its sums.
    fn fold_observations(&mut self, raw_obs: &[f32]) -> (usize, usize) {
        if self.world.ranks() == 1 {
            self.obs_norm.update(raw_obs);
            return (0, 0);
        }
        let local = self.obs_norm.deviation_sums(raw_obs);
        let len = local.len();
        let all = self.world.all_gather_f64(&local);
        self.obs_norm
            .fold_deviation_sums(&crate::collective::add_in_rank_order(&all, len));
        let counts: Vec<f64> = all.chunks_exact(len).map(|part| part[0]).collect();
        let rank = self.world.rank();
        let before: f64 = counts[..rank].iter().sum();
        let after: f64 = counts[rank + 1..].iter().sum();
        (before as usize, after as usize)
    }

    /// Draws and drops the noise of `n` lanes of other ranks, so that every rank's RNG stays
    /// where one process's would be.
    fn skip_noise(&mut self, n: usize) {
        for _ in 0..n {
            gaussian::standard_normal(&mut self.rng);
        }
    }

    /// Stores the outcomes of the completed lanes' decisions: rewards (scaled when
    /// `ppo.normalize_reward` is on), with `gamma * V(final observation)` added where the time
    /// limit cut an episode, and the ends. A completion whose decision was taken in an earlier
    /// rollout only moves the reward statistics.
    pub fn record(&mut self, step: &StepOutcome<'_>) {
        let lanes: Vec<usize> = (0..self.lanes).filter(|&e| step.completed[e]).collect();
        // With several ranks the reward statistics are shared, so every rank takes part.
        let shared_scaling = self.reward_norm.is_some() && self.world.ranks() > 1;
        if lanes.is_empty() && !shared_scaling {
            return;
        }
        let bootstrap = self.truncation_values(step);
        let rewards = self.scaled_rewards(step, &lanes);
        let gamma = self.cfg.gamma as f32;
        for (&e, &r) in lanes.iter().zip(&rewards) {
            let Some(i) = self.pending[e].take() else {
                continue;
            };
            let done = step.terminated[e] || step.truncated[e];
            self.rollout.rewards[i] = r + gamma * bootstrap[e];
            self.rollout.ended[i] = if done { 1.0 } else { 0.0 };
            self.rollout.complete[i] = true;
        }
    }

    /// The completed lanes' rewards, scaled when reward scaling is on.
    fn scaled_rewards(&mut self, step: &StepOutcome<'_>, lanes: &[usize]) -> Vec<f32> {
        let mut out: Vec<f32> = lanes.iter().map(|&e| step.rewards[e]).collect();
        let Some(scaler) = &mut self.reward_norm else {
            return out;
        };
        let done: Vec<bool> = step
            .terminated
            .iter()
            .zip(step.truncated)
            .map(|(a, b)| *a || *b)
            .collect();
        scaler.scale_lanes(
            lanes,
            step.rewards,
            &done,
            (self.cfg.gamma, self.cfg.clip_reward),
            &*self.world,
            &mut out,
        );
        out
    }

    /// `V(final observation)` for completed lanes cut by the time limit and not terminated,
    /// 0 elsewhere.
    fn truncation_values(&self, step: &StepOutcome<'_>) -> Vec<f32> {
        let n = step.truncated.len();
        let cut = |e: usize| step.completed[e] && step.truncated[e] && !step.terminated[e];
        let mut out = vec![0.0f32; n];
        if !(0..n).any(cut) {
            return out;
        }
        let values = self.values(step.final_observations, step.objectives);
        for e in (0..n).filter(|&e| cut(e)) {
            out[e] = values[e];
        }
        out
    }

    /// Critic values of raw observations, in return units.
    fn values(&self, raw_obs: &[f32], objectives: &[f32]) -> Vec<f32> {
        let mut normalized = vec![0.0f32; raw_obs.len()];
        self.obs_norm.normalize(raw_obs, &mut normalized);
        let mut values = self.model.infer(&normalized, objectives, self.device).value;
        for v in &mut values {
            *v = self.returns_of(*v);
        }
        values
    }

    /// A critic output in return units (with value normalization, mapped back).
    fn returns_of(&self, critic: f32) -> f32 {
        self.value_norm
            .as_ref()
            .map_or(critic, |n| n.denormalize(critic))
    }

    /// With value normalization: folds the batch's returns into the statistics (every rank's
    /// rows), then puts its returns and values into the critic's units for the loss.
    fn normalize_value_targets(&mut self, batch: &mut ppo::Batch) {
        let Some(norm) = &mut self.value_norm else {
            return;
        };
        let sums = [
            batch.returns.iter().map(|&r| f64::from(r)).sum::<f64>(),
            batch
                .returns
                .iter()
                .map(|&r| f64::from(r) * f64::from(r))
                .sum::<f64>(),
            batch.returns.len() as f64,
        ];
        let all = if self.world.ranks() == 1 {
            sums.to_vec()
        } else {
            self.world.sum_f64(&sums)
        };
        norm.update(all[0], all[1], all[2]);
        for x in batch.returns.iter_mut().chain(batch.values.iter_mut()) {
            *x = norm.normalize(*x);
        }
    }

    /// GAE with the values of `next_obs` (every lane's observation after the rollout; a lane
    /// whose last decision is still open bootstraps from that decision's value instead), then
    /// PPO's epochs. `progress` (updates done / budget, in [0, 1)) anneals the learning rate
    /// and sets the entropy coefficient.
    pub fn update(
        &mut self,
        next_obs: &[f32],
        next_objectives: &[f32],
        progress: f64,
    ) -> Result<LossStats, UpdateError> {
        let mut next_values = self.values(next_obs, next_objectives);
        for (v, pending) in next_values.iter_mut().zip(&self.pending) {
            if let Some(i) = *pending {
                *v = self.rollout.values[i];
            }
        }
        let mut batch = self
            .rollout
            .finish(&next_values, self.cfg.gamma, self.cfg.gae_lambda);
        self.normalize_value_targets(&mut batch);
        let cfg = &self.cfg;
        self.opt.lr = if cfg.anneal_lr {
            cfg.learning_rate * (1.0 - progress)
        } else {
            cfg.learning_rate
        };
        let ent_coef = cfg.ent_coef.at(progress);
        ppo::update(
            &self.model,
            &mut self.opt,
            &mut self.replicas,
            &batch,
            cfg,
            ent_coef,
            self.device,
            &mut self.rng,
            &*self.world,
            self.cancel,
        )
    }

    /// Makes `flag` (a signal's stop request) end an update in progress before its next
    /// minibatch ([`UpdateError::Cancelled`]); one process only.
    pub fn cancel_when(&mut self, flag: &'static std::sync::atomic::AtomicBool) {
        self.cancel = Some(flag);
    }

    /// The model's variables.
    pub fn var_store(&self) -> &nn::VarStore {
        &self.vs
    }

    /// The reward scaler, when reward scaling is on.
    pub fn reward_scaler(&self) -> Option<&RewardScaler> {
        self.reward_norm.as_ref()
    }

    /// Everything but the tensors, for a checkpoint.
    pub fn state(&self) -> LearnerState {
        LearnerState {
            adam_step: self.opt.step_count(),
            obs_norm: self.obs_norm.clone(),
            reward_norm: self.reward_norm.clone(),
            value_norm: self.value_norm.clone(),
            rng: self.rng.clone(),
        }
    }

    /// Weights and Adam's moments by name, sorted, contiguous on the CPU (for a checkpoint).
    pub fn tensors(&self) -> Vec<(String, Tensor)> {
        let mut tensors: Vec<(String, Tensor)> = self.vs.variables().into_iter().collect();
        tensors.extend(self.opt.state_tensors());
        tensors.sort_by(|a, b| a.0.cmp(&b.0));
        tensors
            .into_iter()
            .map(|(k, t)| (k, t.to_device(Device::Cpu).contiguous()))
            .collect()
    }

    /// Continues from a checkpoint of the same run: weights, Adam, statistics and RNG. Errors
    /// say what does not fit.
    pub fn restore(
        &mut self,
        tensors: &HashMap<String, Tensor>,
        state: LearnerState,
    ) -> Result<(), String> {
        load_weights(&self.vs, tensors).map_err(|e| format!("checkpoint {e}"))?;
        let device = self.device;
        self.opt.load_state(state.adam_step, |k| {
            tensors.get(k).map(|t| t.to_device(device))
        })?;
        self.check_obs_dim(&state.obs_norm)?;
        self.obs_norm = state.obs_norm;
        self.restore_reward_norm(state.reward_norm)?;
        if self.value_norm.is_some() {
            self.value_norm = Some(
                state
                    .value_norm
                    .ok_or("ppo.value_norm is on but the checkpoint holds no return statistics")?,
            );
        }
        self.rng = state.rng;
        Ok(())
    }

    /// Starts from a pretrained model's weights and observation statistics (Adam and the RNG
    /// start afresh). A pretrained reward scale is kept, since the critic learned values in it.
    /// A learner with a centralized critic starts from one with a local critic: the actor as
    /// saved, the critic reading the global state through zero weights at first
    /// ([`load_weights_into_central`]), its statistics fresh ([`RunningMeanStd::widened`]).
    pub fn load_pretrained(
        &mut self,
        tensors: &HashMap<String, Tensor>,
        obs_norm: &RunningMeanStd,
        reward_norm: Option<&RewardScaler>,
    ) -> Result<(), String> {
        let arch = self.model.architecture().clone();
        if arch.global_dim > 0 && obs_norm.dim() == arch.obs_dim {
            // A run with a centralized critic from one trained with a local critic.
            load_weights_into_central(&self.vs, tensors, &arch)?;
            self.obs_norm = obs_norm.widened(arch.input_dim());
        } else {
            self.check_obs_dim(obs_norm)?;
            load_weights(&self.vs, tensors)?;
            self.obs_norm = obs_norm.clone();
        }
        if let (Some(mine), Some(saved)) = (&mut self.reward_norm, reward_norm) {
            *mine = saved.with_envs(self.lanes);
        }
        Ok(())
    }

    fn check_obs_dim(&self, saved: &RunningMeanStd) -> Result<(), String> {
        if saved.dim() == self.obs_norm.dim() {
            return Ok(());
        }
        Err(format!(
            "observation size {} does not match the scenario's {}",
            saved.dim(),
            self.obs_norm.dim()
        ))
    }

    fn restore_reward_norm(&mut self, saved: Option<RewardScaler>) -> Result<(), String> {
        match (&mut self.reward_norm, saved) {
            (None, _) => Ok(()),
            (Some(mine), Some(saved)) if saved.returns.len() == self.lanes => {
                *mine = saved;
                Ok(())
            }
            (Some(_), saved) => Err(format!(
                "ppo.normalize_reward is on but the checkpoint holds {}",
                match saved {
                    Some(s) => format!("reward statistics for {} envs", s.returns.len()),
                    None => "no reward statistics".into(),
                }
            )),
        }
    }
}

#[cfg(test)]
mod tests;
