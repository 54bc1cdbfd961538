//! The flattened rollout an update trains on, as tensors, and how it is cut into shuffled
//! near-equal minibatches.

use super::loss::{grouped_ppo_loss, ppo_loss, LossParts, Minibatch};
use crate::model::ActorCritic;
use crate::ppo_config::PpoConfig;
use rand::Rng;
use tch::{Device, Tensor};

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

/// The whole batch as tensors on the model's device.
pub(crate) struct BatchTensors {
    pub(crate) rows: Minibatch,
    pub(crate) groups: Vec<u8>,
}

impl BatchTensors {
    pub(crate) fn new(batch: &Batch, device: Device) -> Self {
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
        Self {
            rows: Minibatch {
                obs: to(&batch.obs, obs_dim as i64),
                objectives: to(&batch.objectives, 3),
                actions: to(&batch.actions, 1),
                old_logprobs: to(&batch.logprobs, 0),
                advantages: to(&batch.advantages, 0),
                returns: to(&batch.returns, 0),
                old_values: to(&batch.values, 0),
            },
            groups: batch.groups.clone(),
        }
    }

    /// The index tensor of the rows `chunk`.
    pub(crate) fn index(&self, chunk: &[i64]) -> Tensor {
        Tensor::from_slice(chunk).to_device(self.rows.obs.device())
    }

    /// The loss of the rows `chunk` (per group when the batch has groups).
    pub(crate) fn loss(
        &self,
        model: &ActorCritic,
        chunk: &[i64],
        cfg: &PpoConfig,
        ent_coef: f64,
    ) -> LossParts {
        let mb = self.rows.select(&self.index(chunk));
        if self.groups.is_empty() {
            ppo_loss(model, &mb, cfg, ent_coef)
        } else {
            let groups: Vec<u8> = chunk.iter().map(|&i| self.groups[i as usize]).collect();
            grouped_ppo_loss(model, &mb, &groups, cfg, ent_coef)
        }
    }
}

/// Where `k` near-equal minibatches of `n` samples start and end: `k + 1` increasing bounds
/// `floor(i * n / k)`, so sizes differ by at most one and none is empty (at most `n`
/// minibatches). With `k` dividing `n` these are CleanRL's equal minibatches.
pub fn minibatch_bounds(n: usize, k: usize) -> Vec<usize> {
    let k = k.clamp(1, n.max(1));
    (0..=k).map(|i| i * n / k).collect()
}

/// Fisher-Yates shuffle.
pub fn shuffle<T, R: Rng>(xs: &mut [T], rng: &mut R) {
    for i in (1..xs.len()).rev() {
        let j = rng.random_range(0..=i);
        xs.swap(i, j);
    }
}
