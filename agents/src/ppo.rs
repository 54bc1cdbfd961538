//! PPO as CleanRL's `ppo_continuous_action` does it, with truncation handled properly:
//! rollout storage `[steps, envs]`, GAE(gamma, lambda), advantage normalization, clipped
//! surrogate, (optionally clipped) value loss, entropy bonus, grad-norm clipping, Adam,
//! minibatch epochs and early stop at a target KL.

use crate::adam::Adam;
use crate::gaussian;
use crate::model::ActorCritic;
use rand::Rng;
use serde::{Deserialize, Serialize};
use tch::{Device, Kind, Tensor};

/// A schedule of a coefficient over training progress in [0, 1].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Schedule {
    /// The same value throughout.
    Constant(f64),
    /// Linear from `start` (progress 0) to `end` (progress 1).
    Linear {
        /// Value at the start.
        start: f64,
        /// Value at the end.
        end: f64,
    },
}

impl Schedule {
    /// The value at `progress` (clamped to [0, 1]).
    pub fn at(&self, progress: f64) -> f64 {
        match *self {
            Schedule::Constant(v) => v,
            Schedule::Linear { start, end } => start + (end - start) * progress.clamp(0.0, 1.0),
        }
    }
}

/// PPO hyper-parameters (CleanRL names and defaults for continuous control, unless noted).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PpoConfig {
    /// Adam learning rate at the start.
    #[serde(default = "d_lr")]
    pub learning_rate: f64,
    /// Anneal the learning rate linearly to 0 over the budget.
    #[serde(default = "d_true")]
    pub anneal_lr: bool,
    /// Steps per env per rollout.
    #[serde(default = "d_num_steps")]
    pub num_steps: usize,
    /// Discount factor.
    #[serde(default = "d_gamma")]
    pub gamma: f64,
    /// GAE lambda.
    #[serde(default = "d_lambda")]
    pub gae_lambda: f64,
    /// Minibatches per epoch.
    #[serde(default = "d_minibatches")]
    pub num_minibatches: usize,
    /// Epochs over each rollout.
    #[serde(default = "d_epochs")]
    pub update_epochs: usize,
    /// Normalize advantages per minibatch.
    #[serde(default = "d_true")]
    pub norm_adv: bool,
    /// Surrogate clipping coefficient.
    #[serde(default = "d_clip")]
    pub clip_coef: f64,
    /// Clip the value loss around the old values.
    #[serde(default = "d_true")]
    pub clip_vloss: bool,
    /// Entropy coefficient (constant or linear decay).
    #[serde(default = "d_ent")]
    pub ent_coef: Schedule,
    /// Value-loss coefficient.
    #[serde(default = "d_vf")]
    pub vf_coef: f64,
    /// Global gradient-norm limit.
    #[serde(default = "d_grad")]
    pub max_grad_norm: f64,
    /// Stop the epochs early once the approximate KL exceeds this (none when absent).
    #[serde(default)]
    pub target_kl: Option<f64>,
    /// Adam epsilon.
    #[serde(default = "d_eps")]
    pub adam_eps: f64,
    /// Scale rewards by the running std of the discounted return (Gymnasium's
    /// `NormalizeReward`, which CleanRL wraps its envs in); logged returns stay raw. Off by
    /// default: on Aurora's and MOCC's environments it trains a better critic but a policy
    /// that settles at low rates (docs/training.md).
    #[serde(default)]
    pub normalize_reward: bool,
    /// Scaled rewards are clipped to +-this (CleanRL: 10).
    #[serde(default = "d_clip_reward")]
    pub clip_reward: f64,
}

fn d_lr() -> f64 {
    3e-4
}
fn d_true() -> bool {
    true
}
fn d_num_steps() -> usize {
    2048
}
fn d_gamma() -> f64 {
    0.99
}
fn d_lambda() -> f64 {
    0.95
}
fn d_minibatches() -> usize {
    32
}
fn d_epochs() -> usize {
    10
}
fn d_clip() -> f64 {
    0.2
}
fn d_ent() -> Schedule {
    Schedule::Constant(0.0)
}
fn d_vf() -> f64 {
    0.5
}
fn d_grad() -> f64 {
    0.5
}
fn d_eps() -> f64 {
    1e-5
}
fn d_clip_reward() -> f64 {
    10.0
}

impl Default for PpoConfig {
    fn default() -> Self {
        Self {
            learning_rate: d_lr(),
            anneal_lr: true,
            num_steps: d_num_steps(),
            gamma: d_gamma(),
            gae_lambda: d_lambda(),
            num_minibatches: d_minibatches(),
            update_epochs: d_epochs(),
            norm_adv: true,
            clip_coef: d_clip(),
            clip_vloss: true,
            ent_coef: d_ent(),
            vf_coef: d_vf(),
            max_grad_norm: d_grad(),
            target_kl: None,
            adam_eps: d_eps(),
            normalize_reward: false,
            clip_reward: d_clip_reward(),
        }
    }
}

impl PpoConfig {
    /// Checks every field; the error names it (prefixed `ppo.`).
    pub fn validate(&self) -> Result<(), String> {
        let pos = |name: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(format!("ppo.{name}: must be > 0 (got {v})"))
            }
        };
        pos("learning_rate", self.learning_rate)?;
        pos("clip_coef", self.clip_coef)?;
        pos("max_grad_norm", self.max_grad_norm)?;
        pos("adam_eps", self.adam_eps)?;
        pos("clip_reward", self.clip_reward)?;
        for (name, v) in [("gamma", self.gamma), ("gae_lambda", self.gae_lambda)] {
            if !(0.0..=1.0).contains(&v) {
                return Err(format!("ppo.{name}: must lie in [0, 1] (got {v})"));
            }
        }
        if self.vf_coef < 0.0 || !self.vf_coef.is_finite() {
            return Err(format!("ppo.vf_coef: must be >= 0 (got {})", self.vf_coef));
        }
        for (name, v) in [
            ("num_steps", self.num_steps),
            ("num_minibatches", self.num_minibatches),
            ("update_epochs", self.update_epochs),
        ] {
            if v == 0 {
                return Err(format!("ppo.{name}: must be >= 1 (got 0)"));
            }
        }
        if let Some(kl) = self.target_kl {
            pos("target_kl", kl)?;
        }
        let ent_ok = match self.ent_coef {
            Schedule::Constant(v) => v >= 0.0,
            Schedule::Linear { start, end } => start >= 0.0 && end >= 0.0,
        };
        if !ent_ok {
            return Err("ppo.ent_coef: coefficients must be >= 0".into());
        }
        Ok(())
    }
}

/// Generalized advantage estimation over a `[steps, envs]` rollout.
///
/// `ended[t*n + e]` is 1 when env `e`'s episode ended at step `t` (terminated or truncated; on
/// truncation the caller has already added `gamma * V(final observation)` to the reward, so the
/// time limit is bootstrapped while a termination is not). `next_values` are the values of the
/// observations after the last step. Returns (advantages, returns).
pub fn compute_gae(
    rewards: &[f32],
    values: &[f32],
    ended: &[f32],
    next_values: &[f32],
    n_envs: usize,
    gamma: f64,
    lambda: f64,
) -> (Vec<f32>, Vec<f32>) {
    let steps = rewards.len() / n_envs;
    let mut adv = vec![0.0f32; rewards.len()];
    let mut last = vec![0.0f64; n_envs];
    for t in (0..steps).rev() {
        for e in 0..n_envs {
            let i = t * n_envs + e;
            let next_v = if t + 1 == steps {
                next_values[e]
            } else {
                values[i + n_envs]
            };
            let live = 1.0 - f64::from(ended[i]);
            let delta =
                f64::from(rewards[i]) + gamma * f64::from(next_v) * live - f64::from(values[i]);
            last[e] = delta + gamma * lambda * live * last[e];
            adv[i] = last[e] as f32;
        }
    }
    let returns = adv.iter().zip(values).map(|(a, v)| a + v).collect();
    (adv, returns)
}

/// One minibatch's loss terms.
#[derive(Debug)]
pub struct LossParts {
    /// Total loss to minimize.
    pub loss: Tensor,
    /// Clipped-surrogate policy loss.
    pub pg_loss: Tensor,
    /// Value loss.
    pub v_loss: Tensor,
    /// Mean entropy.
    pub entropy: Tensor,
    /// `((ratio - 1) - log ratio).mean()`.
    pub approx_kl: Tensor,
    /// Fraction of samples whose ratio was clipped.
    pub clipfrac: Tensor,
}

/// A minibatch of rollout data on the model's device.
#[derive(Debug)]
pub struct Minibatch {
    /// Normalized observations `[B, obs_dim]`.
    pub obs: Tensor,
    /// Objectives `[B, 3]` (used only by preference networks).
    pub objectives: Tensor,
    /// Actions `[B, 1]`.
    pub actions: Tensor,
    /// Log-probabilities under the rollout policy `[B]`.
    pub old_logprobs: Tensor,
    /// Advantages `[B]`.
    pub advantages: Tensor,
    /// Returns `[B]`.
    pub returns: Tensor,
    /// Values under the rollout policy `[B]`.
    pub old_values: Tensor,
}

impl Minibatch {
    /// The rows `idx` (an int64 index tensor).
    pub fn select(&self, idx: &Tensor) -> Self {
        Self {
            obs: self.obs.index_select(0, idx),
            objectives: self.objectives.index_select(0, idx),
            actions: self.actions.index_select(0, idx),
            old_logprobs: self.old_logprobs.index_select(0, idx),
            advantages: self.advantages.index_select(0, idx),
            returns: self.returns.index_select(0, idx),
            old_values: self.old_values.index_select(0, idx),
        }
    }
}

/// PPO's loss summed over sample groups: each group (e.g. the current objective and a
/// replayed one, MOCC's requirement replay) gets its own [`ppo_loss`], advantages normalized
/// within the group, and the losses add up. `groups[i]` is row `i`'s group; one group is
/// plain [`ppo_loss`]. KL and clip fraction are averaged over the groups.
pub fn grouped_ppo_loss(
    model: &ActorCritic,
    mb: &Minibatch,
    groups: &[u8],
    cfg: &PpoConfig,
    ent_coef: f64,
) -> LossParts {
    let mut ids: Vec<u8> = groups.to_vec();
    ids.sort_unstable();
    ids.dedup();
    if ids.len() <= 1 {
        return ppo_loss(model, mb, cfg, ent_coef);
    }
    let device = mb.obs.device();
    let parts: Vec<LossParts> = ids
        .iter()
        .map(|&g| {
            let rows: Vec<i64> = (0..groups.len() as i64)
                .filter(|&i| groups[i as usize] == g)
                .collect();
            let idx = Tensor::from_slice(&rows).to_device(device);
            ppo_loss(model, &mb.select(&idx), cfg, ent_coef)
        })
        .collect();
    let sum = |f: fn(&LossParts) -> &Tensor| {
        parts
            .iter()
            .map(f)
            .fold(Tensor::zeros([], (Kind::Float, device)), |acc, t| acc + t)
    };
    let k = parts.len() as f64;
    LossParts {
        loss: sum(|p| &p.loss),
        pg_loss: sum(|p| &p.pg_loss),
        v_loss: sum(|p| &p.v_loss),
        entropy: sum(|p| &p.entropy) / k,
        approx_kl: sum(|p| &p.approx_kl) / k,
        clipfrac: sum(|p| &p.clipfrac) / k,
    }
}

/// PPO's loss for a minibatch (CleanRL's formulas).
pub fn ppo_loss(model: &ActorCritic, mb: &Minibatch, cfg: &PpoConfig, ent_coef: f64) -> LossParts {
    let w = model
        .architecture()
        .takes_objective()
        .then_some(&mb.objectives);
    let out = model.forward(&mb.obs, w);
    let new_logprob = gaussian::log_prob(&mb.actions, &out.mean, &out.log_std);
    let entropy = gaussian::entropy(&out.log_std).mean(Kind::Float);
    let logratio = &new_logprob - &mb.old_logprobs;
    let ratio = logratio.exp();
    let (approx_kl, clipfrac) = tch::no_grad(|| {
        let kl = ((&ratio - 1.0) - &logratio).mean(Kind::Float);
        let cf = (&ratio - 1.0)
            .abs()
            .gt(cfg.clip_coef)
            .to_kind(Kind::Float)
            .mean(Kind::Float);
        (kl, cf)
    });
    let adv = if cfg.norm_adv && mb.advantages.size()[0] > 1 {
        (&mb.advantages - mb.advantages.mean(Kind::Float)) / (mb.advantages.std(true) + 1e-8)
    } else {
        mb.advantages.shallow_clone()
    };
    let pg1 = -&adv * &ratio;
    let pg2 = -&adv * ratio.clamp(1.0 - cfg.clip_coef, 1.0 + cfg.clip_coef);
    let pg_loss = pg1.maximum(&pg2).mean(Kind::Float);
    let v_unclipped = (&out.value - &mb.returns).square();
    let v_loss = if cfg.clip_vloss {
        let v_clipped =
            &mb.old_values + (&out.value - &mb.old_values).clamp(-cfg.clip_coef, cfg.clip_coef);
        let v_clipped_loss = (v_clipped - &mb.returns).square();
        v_unclipped.maximum(&v_clipped_loss).mean(Kind::Float) * 0.5
    } else {
        v_unclipped.mean(Kind::Float) * 0.5
    };
    let loss = &pg_loss - &entropy * ent_coef + &v_loss * cfg.vf_coef;
    LossParts {
        loss,
        pg_loss,
        v_loss,
        entropy,
        approx_kl,
        clipfrac,
    }
}

/// Statistics of one PPO update (means over the minibatches run).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct LossStats {
    /// Policy loss.
    pub pg_loss: f64,
    /// Value loss.
    pub v_loss: f64,
    /// Entropy.
    pub entropy: f64,
    /// Approximate KL (of the last minibatch, as CleanRL logs it).
    pub approx_kl: f64,
    /// Clip fraction.
    pub clipfrac: f64,
    /// Explained variance of the values w.r.t. the returns.
    pub explained_variance: f64,
    /// Gradient norm before clipping (mean).
    pub grad_norm: f64,
    /// Epochs run (fewer than configured after a KL early stop).
    pub epochs: usize,
    /// Learning rate used.
    pub learning_rate: f64,
    /// Entropy coefficient used.
    pub ent_coef: f64,
}

/// Flattened rollout ready for the update (all `[steps * envs, ...]`, row-major, CPU).
#[derive(Debug, Clone, Default)]
pub struct Batch {
    /// Normalized observations.
    pub obs: Vec<f32>,
    /// Objectives.
    pub objectives: Vec<f32>,
    /// Actions.
    pub actions: Vec<f32>,
    /// Log-probabilities.
    pub logprobs: Vec<f32>,
    /// Advantages.
    pub advantages: Vec<f32>,
    /// Returns.
    pub returns: Vec<f32>,
    /// Values.
    pub values: Vec<f32>,
    /// Each sample's loss group (see [`grouped_ppo_loss`]); empty means one group.
    pub groups: Vec<u8>,
}

/// Errors of an update.
#[derive(Debug, thiserror::Error)]
pub enum UpdateError {
    /// A loss became NaN or infinite.
    #[error("non-finite {what} ({value}) in epoch {epoch}")]
    NonFinite {
        /// Which quantity.
        what: &'static str,
        /// Its value.
        value: f64,
        /// The epoch it appeared in.
        epoch: usize,
    },
}

/// Runs the PPO epochs on a batch: shuffled minibatches from `rng`, Adam steps on `opt`.
pub fn update<R: Rng>(
    model: &ActorCritic,
    opt: &mut Adam,
    batch: &Batch,
    cfg: &PpoConfig,
    ent_coef: f64,
    device: Device,
    rng: &mut R,
) -> Result<LossStats, UpdateError> {
    let n = batch.logprobs.len();
    let obs_dim = batch.obs.len() / n.max(1);
    let to = |v: &[f32], cols: i64| {
        let t = Tensor::from_slice(v).to_device(device);
        if cols > 0 {
            t.view([-1, cols])
        } else {
            t
        }
    };
    let obs = to(&batch.obs, obs_dim as i64);
    let objectives = to(&batch.objectives, 3);
    let actions = to(&batch.actions, 1);
    let logprobs = to(&batch.logprobs, 0);
    let advantages = to(&batch.advantages, 0);
    let returns = to(&batch.returns, 0);
    let values = to(&batch.values, 0);
    let mb_size = (n / cfg.num_minibatches).max(1);
    let mut order: Vec<i64> = (0..n as i64).collect();
    let mut stats = LossStats {
        learning_rate: opt.lr,
        ent_coef,
        ..LossStats::default()
    };
    let mut minibatches = 0usize;
    'epochs: for epoch in 0..cfg.update_epochs {
        shuffle(&mut order, rng);
        stats.epochs = epoch + 1;
        for chunk in order.chunks(mb_size) {
            let idx = Tensor::from_slice(chunk).to_device(device);
            let mb = Minibatch {
                obs: obs.index_select(0, &idx),
                objectives: objectives.index_select(0, &idx),
                actions: actions.index_select(0, &idx),
                old_logprobs: logprobs.index_select(0, &idx),
                advantages: advantages.index_select(0, &idx),
                returns: returns.index_select(0, &idx),
                old_values: values.index_select(0, &idx),
            };
            let parts = if batch.groups.is_empty() {
                ppo_loss(model, &mb, cfg, ent_coef)
            } else {
                let groups: Vec<u8> = chunk.iter().map(|&i| batch.groups[i as usize]).collect();
                grouped_ppo_loss(model, &mb, &groups, cfg, ent_coef)
            };
            let loss = parts.loss.double_value(&[]);
            if !loss.is_finite() {
                return Err(UpdateError::NonFinite {
                    what: "loss",
                    value: loss,
                    epoch,
                });
            }
            opt.zero_grad();
            parts.loss.backward();
            let norm = opt.clip_grad_norm(cfg.max_grad_norm);
            if !norm.is_finite() {
                return Err(UpdateError::NonFinite {
                    what: "gradient norm",
                    value: norm,
                    epoch,
                });
            }
            opt.step();
            minibatches += 1;
            stats.pg_loss += parts.pg_loss.double_value(&[]);
            stats.v_loss += parts.v_loss.double_value(&[]);
            stats.entropy += parts.entropy.double_value(&[]);
            stats.clipfrac += parts.clipfrac.double_value(&[]);
            stats.grad_norm += norm;
            stats.approx_kl = parts.approx_kl.double_value(&[]);
        }
        if cfg.target_kl.is_some_and(|kl| stats.approx_kl > kl) {
            break 'epochs;
        }
    }
    let m = minibatches.max(1) as f64;
    stats.pg_loss /= m;
    stats.v_loss /= m;
    stats.entropy /= m;
    stats.clipfrac /= m;
    stats.grad_norm /= m;
    stats.explained_variance = explained_variance(&batch.values, &batch.returns);
    Ok(stats)
}

/// `1 - Var(returns - values) / Var(returns)` (NaN when the returns are constant).
pub fn explained_variance(values: &[f32], returns: &[f32]) -> f64 {
    let n = returns.len() as f64;
    if n == 0.0 {
        return f64::NAN;
    }
    let var = |xs: &mut dyn Iterator<Item = f64>| {
        let v: Vec<f64> = xs.collect();
        let m = v.iter().sum::<f64>() / n;
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n
    };
    let var_y = var(&mut returns.iter().map(|&r| f64::from(r)));
    let var_diff = var(&mut returns
        .iter()
        .zip(values)
        .map(|(&r, &v)| f64::from(r) - f64::from(v)));
    if var_y == 0.0 {
        f64::NAN
    } else {
        1.0 - var_diff / var_y
    }
}

/// Fisher-Yates shuffle.
pub fn shuffle<T, R: Rng>(xs: &mut [T], rng: &mut R) {
    for i in (1..xs.len()).rev() {
        let j = rng.random_range(0..=i);
        xs.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Architecture;
    use tch::nn;

    #[test]
    fn gae_hand_computed_with_termination_and_truncation() {
        // One env, 3 steps, gamma 0.5, lambda 0.5, values 1 everywhere, rewards 1.
        // Episode ends (terminated) at t=1; next value after the rollout 2.
        let r = [1.0, 1.0, 1.0];
        let v = [1.0, 1.0, 1.0];
        let ended = [0.0, 1.0, 0.0];
        let (adv, ret) = compute_gae(&r, &v, &ended, &[2.0], 1, 0.5, 0.5);
        // t=2: delta = 1 + 0.5*2 - 1 = 1; A2 = 1.
        // t=1: ended: delta = 1 - 1 = 0; A1 = 0.
        // t=0: delta = 1 + 0.5*1 - 1 = 0.5; A0 = 0.5 + 0.25*0 = 0.5.
        assert_eq!(adv, vec![0.5, 0.0, 1.0]);
        assert_eq!(ret, vec![1.5, 1.0, 2.0]);
        // Truncation at t=1 with V(final obs) = 4: the caller adds gamma*4 = 2 to r1.
        // t=1: delta = 3 - 1 = 2 = A1; t=0: A0 = 0.5 + 0.25*2 = 1.
        let r_trunc = [1.0, 1.0 + 0.5 * 4.0, 1.0];
        let (adv, _) = compute_gae(&r_trunc, &v, &ended, &[2.0], 1, 0.5, 0.5);
        assert_eq!(adv, vec![1.0, 2.0, 1.0]);
        // No end: A1 = delta1 + 0.25*A2 = (1 + 0.5 - 1) + 0.25 = 0.75; A0 = 0.5 + 0.25*0.75.
        let (adv, _) = compute_gae(&r, &v, &[0.0, 0.0, 0.0], &[2.0], 1, 0.5, 0.5);
        assert_eq!(adv, vec![0.6875, 0.75, 1.0]);
    }

    #[test]
    fn gae_keeps_envs_apart() {
        // Two envs interleaved [t0e0, t0e1, t1e0, t1e1]; env 1 terminates at t0.
        let (adv, _) = compute_gae(
            &[1.0, 1.0, 0.0, 0.0],
            &[0.0, 0.0, 0.0, 0.0],
            &[0.0, 1.0, 0.0, 0.0],
            &[0.0, 0.0],
            2,
            1.0,
            1.0,
        );
        assert_eq!(adv, vec![1.0, 1.0, 0.0, 0.0]);
    }

    #[test]
    fn ppo_loss_hand_computed_on_a_fixed_batch() {
        // A zero-initialized model: mean 0, log_std 0, value 0 for every input.
        let vs = nn::VarStore::new(Device::Cpu);
        let model = ActorCritic::new(&vs.root(), Architecture::aurora(2));
        tch::no_grad(|| {
            for (_, mut t) in vs.variables() {
                let _ = t.zero_();
            }
        });
        let lp = |a: f64| -0.5 * a * a - 0.5 * (2.0 * std::f64::consts::PI).ln();
        // Two samples: actions 0 and 1; old log-probs chosen so ratios are e^0.5 and e^-0.5.
        let actions = [0.0f32, 1.0];
        let old = [lp(0.0) - 0.5, lp(1.0) + 0.5];
        let mb = Minibatch {
            obs: Tensor::zeros([2, 2], (Kind::Float, Device::Cpu)),
            objectives: Tensor::zeros([2, 3], (Kind::Float, Device::Cpu)),
            actions: Tensor::from_slice(&actions).view([2, 1]),
            old_logprobs: Tensor::from_slice(&[old[0] as f32, old[1] as f32]),
            advantages: Tensor::from_slice(&[1.0f32, -1.0]),
            returns: Tensor::from_slice(&[1.0f32, 2.0]),
            old_values: Tensor::from_slice(&[0.5f32, 0.0]),
        };
        let cfg = PpoConfig {
            norm_adv: false,
            clip_coef: 0.2,
            clip_vloss: true,
            vf_coef: 0.5,
            ..PpoConfig::default()
        };
        let parts = ppo_loss(&model, &mb, &cfg, 0.01);
        let (r0, r1) = (0.5f64.exp(), (-0.5f64).exp());
        // pg: sample 0 adv 1: max(-r0, -1.2) = -1.2; sample 1 adv -1: max(r1, 0.8) = 0.8.
        let pg = (-1.2 + 0.8) / 2.0;
        // v: new value 0. s0: unclipped (0-1)^2 = 1, clipped 0.5+clamp(-0.5)= 0.3 -> 0.49;
        // max 1. s1: unclipped 4, clipped 0 + 0 -> 4. 0.5 * mean(1, 4) = 1.25.
        let v = 1.25;
        let ent = 0.5 + 0.5 * (2.0 * std::f64::consts::PI).ln();
        let kl = ((r0 - 1.0 - 0.5) + (r1 - 1.0 + 0.5)) / 2.0;
        let close = |t: &Tensor, x: f64| (t.double_value(&[]) - x).abs() < 1e-5;
        assert!(
            close(&parts.pg_loss, pg),
            "{}",
            parts.pg_loss.double_value(&[])
        );
        assert!(close(&parts.v_loss, v));
        assert!(close(&parts.entropy, ent));
        assert!(close(&parts.approx_kl, kl));
        assert!(close(&parts.clipfrac, 1.0));
        assert!(close(&parts.loss, pg - 0.01 * ent + 0.5 * v));
    }

    #[test]
    fn two_group_loss_is_the_sum_of_the_single_group_losses() {
        tch::manual_seed(4);
        let vs = nn::VarStore::new(Device::Cpu);
        let model = ActorCritic::new(&vs.root(), Architecture::mocc(4));
        let n = 10i64;
        let mb = Minibatch {
            obs: Tensor::randn([n, 4], (Kind::Float, Device::Cpu)),
            objectives: Tensor::rand([n, 3], (Kind::Float, Device::Cpu)),
            actions: Tensor::randn([n, 1], (Kind::Float, Device::Cpu)),
            old_logprobs: Tensor::randn([n], (Kind::Float, Device::Cpu)) - 1.0,
            advantages: Tensor::randn([n], (Kind::Float, Device::Cpu)),
            returns: Tensor::randn([n], (Kind::Float, Device::Cpu)),
            old_values: Tensor::randn([n], (Kind::Float, Device::Cpu)),
        };
        // Rows 0, 2, 3, 7 are the replayed objective's, the rest the current one's.
        let groups = [1u8, 0, 1, 1, 0, 0, 0, 1, 0, 0];
        let cfg = PpoConfig::default();
        let both = grouped_ppo_loss(&model, &mb, &groups, &cfg, 0.01);
        let rows = |g: u8| -> Vec<i64> { (0..n).filter(|&i| groups[i as usize] == g).collect() };
        let current = ppo_loss(
            &model,
            &mb.select(&Tensor::from_slice(&rows(0))),
            &cfg,
            0.01,
        );
        let replay = ppo_loss(
            &model,
            &mb.select(&Tensor::from_slice(&rows(1))),
            &cfg,
            0.01,
        );
        let sum = current.loss.double_value(&[]) + replay.loss.double_value(&[]);
        assert!((both.loss.double_value(&[]) - sum).abs() < 1e-6, "{both:?}");
        let whole = ppo_loss(&model, &mb, &cfg, 0.01).loss.double_value(&[]);
        assert!((whole - sum).abs() > 1e-3, "grouping changes the loss");
        // One group is plain PPO.
        let single = grouped_ppo_loss(&model, &mb, &[0; 10], &cfg, 0.01);
        assert_eq!(single.loss.double_value(&[]), whole);
    }

    #[test]
    fn schedules_are_pure_functions_of_progress() {
        let s = Schedule::Linear {
            start: 0.1,
            end: 0.0,
        };
        assert_eq!(s.at(0.0), 0.1);
        assert!((s.at(0.5) - 0.05).abs() < 1e-12);
        assert_eq!(s.at(2.0), 0.0);
        assert_eq!(Schedule::Constant(0.3).at(0.7), 0.3);
    }

    #[test]
    fn explained_variance_hand_values() {
        assert_eq!(explained_variance(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]), 1.0);
        assert_eq!(explained_variance(&[0.0, 0.0], &[1.0, 3.0]), 0.0);
    }
}
