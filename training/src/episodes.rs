//! Episode bookkeeping of a training run: each env's return and length so far, the returns of
//! the last finished episodes, and each env's reward over the current rollout (what the
//! objective plan learns from).

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Finished episodes whose returns the running mean covers.
pub const RECENT_EPISODES: usize = 100;

/// Per-env episode and rollout accounting.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Episodes {
    returns: Vec<f64>,
    lengths: Vec<u64>,
    recent: VecDeque<f64>,
    rollout_reward: Vec<f64>,
    rollout_steps: Vec<u64>,
}

/// The part a checkpoint keeps (the rollout sums restart with every rollout).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EpisodesState {
    /// Each env's return so far.
    pub episode_return: Vec<f64>,
    /// Each env's steps so far.
    pub episode_len: Vec<u64>,
    /// Returns of the last finished episodes, oldest first.
    pub recent_returns: VecDeque<f64>,
}

impl Episodes {
    /// Fresh accounting for `envs` envs.
    pub fn new(envs: usize) -> Self {
        Self {
            returns: vec![0.0; envs],
            lengths: vec![0; envs],
            recent: VecDeque::new(),
            rollout_reward: vec![0.0; envs],
            rollout_steps: vec![0; envs],
        }
    }

    /// Starts a rollout's reward sums.
    pub fn start_rollout(&mut self) {
        self.rollout_reward.iter_mut().for_each(|r| *r = 0.0);
        self.rollout_steps.iter_mut().for_each(|n| *n = 0);
    }

    /// Folds one step of every lane in; returns how many episodes ended.
    pub fn record(&mut self, rewards: &[f32], terminated: &[bool], truncated: &[bool]) -> u64 {
        self.record_completed(rewards, terminated, truncated, None)
    }

    /// Folds in the lanes that completed a step (`completed`; `None`: every lane); returns how
    /// many of their episodes ended.
    pub fn record_completed(
        &mut self,
        rewards: &[f32],
        terminated: &[bool],
        truncated: &[bool],
        completed: Option<&[bool]>,
    ) -> u64 {
        let mut ended = 0;
        for (e, &r) in rewards.iter().enumerate() {
            if completed.is_some_and(|c| !c[e]) {
                continue;
            }
            self.rollout_steps[e] += 1;
            self.returns[e] += f64::from(r);
            self.rollout_reward[e] += f64::from(r);
            self.lengths[e] += 1;
            if terminated[e] || truncated[e] {
                self.recent.push_back(self.returns[e]);
                if self.recent.len() > RECENT_EPISODES {
                    self.recent.pop_front();
                }
                ended += 1;
                self.returns[e] = 0.0;
                self.lengths[e] = 0;
            }
        }
        ended
    }

    /// Each lane's mean reward per completed step over the rollout (`None` without one).
    pub fn rollout_means(&self) -> impl Iterator<Item = Option<f64>> + '_ {
        self.rollout_reward
            .iter()
            .zip(&self.rollout_steps)
            .map(|(r, &n)| (n > 0).then(|| r / n as f64))
    }

    /// Mean return of the last finished episodes, if any.
    pub fn mean_recent_return(&self) -> Option<f64> {
        (!self.recent.is_empty())
            .then(|| self.recent.iter().sum::<f64>() / self.recent.len() as f64)
    }

    /// The sum and number of the recent episodes' returns (up to 100).
    pub fn recent_sum_and_count(&self) -> (f64, usize) {
        (self.recent.iter().sum(), self.recent.len())
    }

    /// The state to checkpoint.
    pub fn state(&self) -> EpisodesState {
        EpisodesState {
            episode_return: self.returns.clone(),
            episode_len: self.lengths.clone(),
            recent_returns: self.recent.clone(),
        }
    }

    /// Accounting continued from a checkpoint.
    pub fn restore(state: EpisodesState) -> Self {
        let envs = state.episode_return.len();
        Self {
            returns: state.episode_return,
            lengths: state.episode_len,
            recent: state.recent_returns,
            rollout_reward: vec![0.0; envs],
            rollout_steps: vec![0; envs],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ended_episodes_enter_the_recent_mean_and_restart() {
        let mut e = Episodes::new(2);
        e.start_rollout();
        assert_eq!(e.record(&[1.0, 2.0], &[false, false], &[false, false]), 0);
        assert_eq!(e.mean_recent_return(), None);
        assert_eq!(e.record(&[1.0, 2.0], &[false, true], &[true, false]), 2);
        // Returns 2 and 4 ended.
        assert_eq!(e.mean_recent_return(), Some(3.0));
        assert_eq!(e.state().episode_return, vec![0.0, 0.0]);
        let means: Vec<Option<f64>> = e.rollout_means().collect();
        assert_eq!(means, vec![Some(1.0), Some(2.0)]);
    }

    #[test]
    fn the_recent_window_keeps_the_last_hundred() {
        let mut e = Episodes::new(1);
        for k in 0..(RECENT_EPISODES + 10) {
            e.record(&[k as f32], &[true], &[false]);
        }
        let s = e.state();
        assert_eq!(s.recent_returns.len(), RECENT_EPISODES);
        assert_eq!(s.recent_returns.front(), Some(&10.0));
        let back = Episodes::restore(s);
        assert_eq!(back.mean_recent_return(), e.mean_recent_return());
    }
}
