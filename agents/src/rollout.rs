//! Rollout storage: one row per (step, env), flat and preallocated, filled while acting and
//! turned into a [`Batch`] once GAE has run.

use crate::gae::compute_gae;
use crate::ppo::Batch;

/// A rollout of `steps x envs` samples (row `t * envs + e`).
#[derive(Debug, Default)]
pub struct RolloutBuffer {
    envs: usize,
    obs_dim: usize,
    /// Normalized observations `[steps * envs, obs_dim]`.
    pub obs: Vec<f32>,
    /// Objectives `[steps * envs, 3]`.
    pub objectives: Vec<f32>,
    /// Sampled actions.
    pub actions: Vec<f32>,
    /// Their log-probabilities under the acting policy.
    pub logprobs: Vec<f32>,
    /// Rewards the learner sees (scaled when reward scaling is on), plus `gamma * V(final
    /// observation)` on truncation.
    pub rewards: Vec<f32>,
    /// 1 where the env's episode ended at this step.
    pub ended: Vec<f32>,
    /// Critic values at acting time.
    pub values: Vec<f32>,
    /// Loss group of each sample; empty when every sample is in one group.
    pub groups: Vec<u8>,
}

impl RolloutBuffer {
    /// Sizes the buffer for `steps x envs` samples of `obs_dim` features and sets every env's
    /// loss group for the whole rollout (`env_groups` empty, or all 0: one group).
    pub fn start(&mut self, steps: usize, envs: usize, obs_dim: usize, env_groups: &[u8]) {
        self.envs = envs;
        self.obs_dim = obs_dim;
        let rows = steps * envs;
        self.obs.resize(rows * obs_dim, 0.0);
        self.objectives.resize(rows * 3, 0.0);
        for v in [
            &mut self.actions,
            &mut self.logprobs,
            &mut self.rewards,
            &mut self.ended,
            &mut self.values,
        ] {
            v.resize(rows, 0.0);
        }
        self.groups.clear();
        if env_groups.len() == envs && env_groups.iter().any(|&g| g != 0) {
            for _ in 0..steps {
                self.groups.extend_from_slice(env_groups);
            }
        }
    }

    /// The rows of step `t`.
    pub fn rows(&self, t: usize) -> std::ops::Range<usize> {
        t * self.envs..(t + 1) * self.envs
    }

    /// Step `t`'s normalized observations `[envs, obs_dim]`.
    pub fn obs_at(&self, t: usize) -> &[f32] {
        &self.obs[self.obs_span(t)]
    }

    /// Step `t`'s normalized observations, to fill.
    pub fn obs_at_mut(&mut self, t: usize) -> &mut [f32] {
        let span = self.obs_span(t);
        &mut self.obs[span]
    }

    /// Step `t`'s objectives `[envs, 3]`.
    pub fn objectives_at(&self, t: usize) -> &[f32] {
        &self.objectives[self.objective_span(t)]
    }

    /// Step `t`'s objectives, to fill.
    pub fn objectives_at_mut(&mut self, t: usize) -> &mut [f32] {
        let span = self.objective_span(t);
        &mut self.objectives[span]
    }

    fn obs_span(&self, t: usize) -> std::ops::Range<usize> {
        let d = self.obs_dim * self.envs;
        t * d..(t + 1) * d
    }

    fn objective_span(&self, t: usize) -> std::ops::Range<usize> {
        let d = 3 * self.envs;
        t * d..(t + 1) * d
    }

    /// GAE(gamma, lambda) with `next_values` for the observations after the last step, and the
    /// batch the update trains on.
    pub fn finish(&self, next_values: &[f32], gamma: f64, lambda: f64) -> Batch {
        let (advantages, returns) = compute_gae(
            &self.rewards,
            &self.values,
            &self.ended,
            next_values,
            self.envs,
            gamma,
            lambda,
        );
        Batch {
            obs: self.obs.clone(),
            objectives: self.objectives.clone(),
            actions: self.actions.clone(),
            logprobs: self.logprobs.clone(),
            advantages,
            returns,
            values: self.values.clone(),
            groups: self.groups.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_kept_only_when_they_split_the_envs() {
        let mut b = RolloutBuffer::default();
        b.start(3, 2, 4, &[0, 0]);
        assert!(b.groups.is_empty());
        assert_eq!(b.obs.len(), 3 * 2 * 4);
        assert_eq!(b.objectives.len(), 3 * 2 * 3);
        b.start(3, 2, 4, &[0, 1]);
        assert_eq!(b.groups, vec![0, 1, 0, 1, 0, 1]);
        b.start(2, 2, 4, &[]);
        assert!(b.groups.is_empty());
        assert_eq!(b.rows(1), 2..4);
    }

    #[test]
    fn finish_runs_gae_over_the_stored_rewards() {
        let mut b = RolloutBuffer::default();
        b.start(2, 1, 1, &[]);
        b.rewards.copy_from_slice(&[1.0, 1.0]);
        b.values.copy_from_slice(&[0.0, 0.0]);
        b.ended.copy_from_slice(&[0.0, 0.0]);
        // lambda = 1, gamma = 0.5, V(next) = 2: A1 = 1 + 0.5 * 2 = 2, A0 = 1 + 0.5 * 2 = 2.
        let batch = b.finish(&[2.0], 0.5, 1.0);
        assert_eq!(batch.advantages, vec![2.0, 2.0]);
        assert_eq!(batch.returns, vec![2.0, 2.0]);
    }
}
