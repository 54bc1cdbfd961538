//! PPO's loss as CleanRL's `ppo_continuous_action` computes it: clipped surrogate, (optionally
//! clipped) value loss, entropy bonus, advantages normalized per minibatch; optionally one loss
//! per objective group (MOCC's requirement replay), and the loss terms as numbers.

use crate::gaussian;
use crate::model::ActorCritic;
use crate::numerics;
use crate::ppo_config::PpoConfig;
use tch::{Kind, Tensor};

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
    /// `len` rows from `start`.
    pub(crate) fn rows(&self, start: i64, len: i64) -> Self {
        let cut = |t: &Tensor| t.narrow(0, start, len);
        Self {
            obs: cut(&self.obs),
            objectives: cut(&self.objectives),
            actions: cut(&self.actions),
            old_logprobs: cut(&self.old_logprobs),
            advantages: cut(&self.advantages),
            returns: cut(&self.returns),
            old_values: cut(&self.old_values),
        }
    }

    /// The same rows with advantages normalized over them (as `ppo_loss` does with
    /// `norm_adv`), when `normalize` is set and there is more than one row.
    pub(crate) fn with_normalized_advantages(self, normalize: bool) -> Self {
        if !(normalize && self.advantages.size()[0] > 1) {
            return self;
        }
        let a = &self.advantages;
        let advantages = (a - a.mean(Kind::Float)) / (a.std(true) + 1e-8);
        Self { advantages, ..self }
    }

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
    let numerics = model.numerics();
    let new_logprob = gaussian::log_prob(numerics, &mb.actions, &out.mean, &out.log_std);
    let entropy = gaussian::entropy(&out.log_std).mean(Kind::Float);
    let logratio = &new_logprob - &mb.old_logprobs;
    let ratio = numerics::exp(numerics, &logratio);
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

/// A minibatch's loss terms as numbers.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LossValues {
    pub(crate) loss: f64,
    pub(crate) pg_loss: f64,
    pub(crate) v_loss: f64,
    pub(crate) entropy: f64,
    pub(crate) approx_kl: f64,
    pub(crate) clipfrac: f64,
}

impl LossValues {
    pub(crate) fn of(p: &LossParts) -> Self {
        Self {
            loss: p.loss.double_value(&[]),
            pg_loss: p.pg_loss.double_value(&[]),
            v_loss: p.v_loss.double_value(&[]),
            entropy: p.entropy.double_value(&[]),
            approx_kl: p.approx_kl.double_value(&[]),
            clipfrac: p.clipfrac.double_value(&[]),
        }
    }

    /// `self` plus a loss group's terms with `share` of its rows, the means over groups
    /// (entropy, KL, clip fraction) also weighted by `per_group` (1 / the number of groups),
    /// as [`grouped_ppo_loss`] combines them.
    pub(crate) fn add_group(self, share: f64, per_group: f64, o: &LossValues) -> Self {
        let w = share * per_group;
        Self {
            loss: self.loss + share * o.loss,
            pg_loss: self.pg_loss + share * o.pg_loss,
            v_loss: self.v_loss + share * o.v_loss,
            entropy: self.entropy + w * o.entropy,
            approx_kl: self.approx_kl + w * o.approx_kl,
            clipfrac: self.clipfrac + w * o.clipfrac,
        }
    }

    /// The terms as a vector (for a sum over ranks), in [`LossValues::from_sums`]' order.
    pub(crate) fn to_vec(self) -> Vec<f64> {
        vec![
            self.loss,
            self.pg_loss,
            self.v_loss,
            self.entropy,
            self.approx_kl,
            self.clipfrac,
        ]
    }

    /// The terms from [`LossValues::to_vec`]'s order.
    pub(crate) fn from_sums(v: &[f64]) -> Self {
        Self {
            loss: v[0],
            pg_loss: v[1],
            v_loss: v[2],
            entropy: v[3],
            approx_kl: v[4],
            clipfrac: v[5],
        }
    }

    /// `self + w * other`, term by term (a group of share `w` and weight 1: the same bits).
    pub(crate) fn add_weighted(self, w: f64, o: &LossValues) -> Self {
        self.add_group(w, 1.0, o)
    }
}
