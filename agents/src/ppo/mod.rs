//! PPO's update as CleanRL's `ppo_continuous_action` does it: advantage normalization, clipped
//! surrogate, (optionally clipped) value loss, entropy bonus, grad-norm clipping, Adam,
//! minibatch epochs and early stop at a target KL; optionally one loss per objective group
//! (MOCC's requirement replay). Advantages come from `crate::gae`, the batch from
//! `crate::rollout`.
//!
//! - [`loss`]: the loss of a minibatch, per objective group, and its terms as numbers.
//! - [`batch`]: the flattened rollout as tensors, shuffled near-equal minibatches.
//! - [`step`]: one optimizer step (finite checks, clipping, Adam).
//! - [`replicas`]: a minibatch's gradient computed in parts on threads.
//! - [`data_parallel`]: one minibatch step shared by the ranks of an MPI job.
//! - [`epochs`]: the update: epochs, early stop, statistics.

pub mod batch;
pub(crate) mod data_parallel;
pub mod epochs;
pub mod loss;
pub mod replicas;
pub mod step;
#[cfg(test)]
mod tests;

pub use batch::{minibatch_bounds, shuffle, Batch};
pub use epochs::{explained_variance, update, LossStats};
pub use loss::{grouped_ppo_loss, ppo_loss, LossParts, Minibatch};
pub use replicas::Replicas;
pub use step::UpdateError;
