//! PPO's hyper-parameters as a config section (`ppo:`), with CleanRL's defaults for continuous
//! control unless noted, their validation, and coefficient schedules over training progress.

use crate::numerics::Numerics;
use serde::{Deserialize, Serialize};

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
    /// Minibatches per epoch. A batch that this does not divide is split into near-equal
    /// minibatches whose sizes differ by one sample (256 into 7: 36 or 37), never a short
    /// remainder.
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
    /// Value normalization as MAPPO does it (`crate::value_norm`): the critic learns returns
    /// standardized by running, debiased moments, and its outputs are mapped back before GAE.
    /// Off by default (the shipped runs trained without it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub value_norm: bool,
    /// Threads each minibatch's gradient is computed on (data parallel: the minibatch is split
    /// into near-equal parts, each run forward and backward on its own copy of the model, and
    /// the gradients are averaged with the parts' sizes as weights before one Adam step). The
    /// result is the same gradient up to float rounding, deterministic for a given count. 1
    /// (the default) keeps the update on the calling thread, bit for bit as before. Batches
    /// with several loss groups (requirement replay) always run on one thread.
    #[serde(default = "d_update_workers")]
    pub update_workers: usize,
    /// The learner's kernels: `native` (libtorch's fastest, the default) or `portable` (the
    /// same bits on every x86-64 machine, slower; `crate::numerics`).
    #[serde(default, skip_serializing_if = "Numerics::is_native")]
    pub numerics: Numerics,
}

/// Most update workers (beyond the cores of any machine this runs on).
pub const MAX_UPDATE_WORKERS: usize = 64;
/// The most rollout steps per env per update.
pub const MAX_NUM_STEPS: usize = 1_000_000;
/// The most minibatches per epoch.
pub const MAX_MINIBATCHES: usize = 1_000_000;
/// The most epochs per update (CleanRL and SB3 use 4-10).
pub const MAX_UPDATE_EPOCHS: usize = 1_000;

fn d_update_workers() -> usize {
    1
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
            value_norm: false,
            update_workers: d_update_workers(),
            numerics: Numerics::Native,
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
            ("update_workers", self.update_workers),
        ] {
            if v == 0 {
                return Err(format!("ppo.{name}: must be >= 1 (got 0)"));
            }
        }
        for (name, v, max) in [
            ("num_steps", self.num_steps, MAX_NUM_STEPS),
            ("num_minibatches", self.num_minibatches, MAX_MINIBATCHES),
            ("update_epochs", self.update_epochs, MAX_UPDATE_EPOCHS),
        ] {
            if v > max {
                return Err(format!("ppo.{name}: must be <= {max} (got {v})"));
            }
        }
        if self.update_workers > MAX_UPDATE_WORKERS {
            return Err(format!(
                "ppo.update_workers: must be <= {MAX_UPDATE_WORKERS} (got {})",
                self.update_workers
            ));
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
