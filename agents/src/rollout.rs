//! Rollout storage: one row per decision of a lane (an env's learned sender), appended as the
//! lanes act and completed when their MI's outcome arrives, then turned into a [`Batch`] once
//! GAE has run over each lane's trajectory.
//!
//! With one learned sender per env (and no base-RTT probes) every lane acts at every step, so
//! rows are step-major (`t * lanes + e`), as in CleanRL. With several, or with probes, lanes act
//! when their senders decide and rows interleave the lanes' trajectories in the order of their
//! decisions.

use crate::gae::compute_gae_lanes;
use crate::ppo::Batch;

/// The rows of a rollout, flat; capacity is kept across rollouts.
#[derive(Debug, Default)]
pub struct RolloutBuffer {
    lanes: usize,
    obs_dim: usize,
    lane_groups: Vec<u8>,
    /// Normalized observations `[rows, obs_dim]`.
    pub obs: Vec<f32>,
    /// Objectives `[rows, 3]`.
    pub objectives: Vec<f32>,
    /// Sampled actions.
    pub actions: Vec<f32>,
    /// Their log-probabilities under the acting policy.
    pub logprobs: Vec<f32>,
    /// Rewards the learner sees (scaled when reward scaling is on), plus `gamma * V(final
    /// observation)` on truncation.
    pub rewards: Vec<f32>,
    /// 1 where the lane's episode ended with this row.
    pub ended: Vec<f32>,
    /// Critic values at acting time.
    pub values: Vec<f32>,
    /// The lane of each row.
    pub lane_of: Vec<u32>,
    /// Whether each row's outcome has arrived.
    pub complete: Vec<bool>,
    /// Loss group of each row; empty when every row is in one group.
    pub groups: Vec<u8>,
}

impl RolloutBuffer {
    /// Empties the buffer for a rollout over `lanes` lanes of `obs_dim` features and sets every
    /// lane's loss group (`lane_groups` empty, or all 0: one group).
    pub fn start(&mut self, lanes: usize, obs_dim: usize, lane_groups: &[u8]) {
        self.lanes = lanes;
        self.obs_dim = obs_dim;
        self.lane_groups.clear();
        if lane_groups.len() == lanes && lane_groups.iter().any(|&g| g != 0) {
            self.lane_groups.extend_from_slice(lane_groups);
        }
        self.obs.clear();
        self.objectives.clear();
        self.actions.clear();
        self.logprobs.clear();
        self.rewards.clear();
        self.ended.clear();
        self.values.clear();
        self.lane_of.clear();
        self.complete.clear();
        self.groups.clear();
    }

    /// Rows stored so far.
    pub fn len(&self) -> usize {
        self.actions.len()
    }

    /// Whether no row is stored.
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }

    /// Appends one (incomplete) row per lane in `lanes`; returns the new rows' range.
    pub fn push_rows(&mut self, lanes: &[usize]) -> std::ops::Range<usize> {
        let first = self.len();
        let rows = first..first + lanes.len();
        self.obs.resize(rows.end * self.obs_dim, 0.0);
        self.objectives.resize(rows.end * 3, 0.0);
        for v in [
            &mut self.actions,
            &mut self.logprobs,
            &mut self.rewards,
            &mut self.ended,
            &mut self.values,
        ] {
            v.resize(rows.end, 0.0);
        }
        self.complete.resize(rows.end, false);
        self.lane_of.extend(lanes.iter().map(|&l| l as u32));
        if !self.lane_groups.is_empty() {
            let groups = &self.lane_groups;
            self.groups.extend(lanes.iter().map(|&l| groups[l]));
        }
        rows
    }

    /// The normalized observations of `rows`.
    pub fn obs_of(&self, rows: std::ops::Range<usize>) -> &[f32] {
        &self.obs[rows.start * self.obs_dim..rows.end * self.obs_dim]
    }

    /// The normalized observations of `rows`, to fill.
    pub fn obs_of_mut(&mut self, rows: std::ops::Range<usize>) -> &mut [f32] {
        &mut self.obs[rows.start * self.obs_dim..rows.end * self.obs_dim]
    }

    /// The objectives of `rows`.
    pub fn objectives_of(&self, rows: std::ops::Range<usize>) -> &[f32] {
        &self.objectives[rows.start * 3..rows.end * 3]
    }

    /// The objectives of `rows`, to fill.
    pub fn objectives_of_mut(&mut self, rows: std::ops::Range<usize>) -> &mut [f32] {
        &mut self.objectives[rows.start * 3..rows.end * 3]
    }

    /// GAE(gamma, lambda) over the complete rows, each lane bootstrapped from
    /// `next_values[lane]` after its last complete row, and the batch the update trains on.
    /// Incomplete rows (decisions whose MI had not closed) are left out.
    pub fn finish(&self, next_values: &[f32], gamma: f64, lambda: f64) -> Batch {
        let keep: Vec<usize> = (0..self.len()).filter(|&i| self.complete[i]).collect();
        let pick = |v: &[f32], width: usize| -> Vec<f32> {
            keep.iter()
                .flat_map(|&i| v[i * width..(i + 1) * width].iter().copied())
                .collect()
        };
        let lanes: Vec<u32> = keep.iter().map(|&i| self.lane_of[i]).collect();
        let values = pick(&self.values, 1);
        let (advantages, returns) = compute_gae_lanes(
            &pick(&self.rewards, 1),
            &values,
            &pick(&self.ended, 1),
            &lanes,
            next_values,
            gamma,
            lambda,
        );
        Batch {
            obs: pick(&self.obs, self.obs_dim),
            objectives: pick(&self.objectives, 3),
            actions: pick(&self.actions, 1),
            logprobs: pick(&self.logprobs, 1),
            advantages,
            returns,
            values,
            groups: if self.groups.is_empty() {
                Vec::new()
            } else {
                keep.iter().map(|&i| self.groups[i]).collect()
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_kept_only_when_they_split_the_lanes() {
        let mut b = RolloutBuffer::default();
        b.start(2, 4, &[0, 0]);
        for _ in 0..3 {
            b.push_rows(&[0, 1]);
        }
        assert!(b.groups.is_empty());
        assert_eq!(b.obs.len(), 3 * 2 * 4);
        assert_eq!(b.objectives.len(), 3 * 2 * 3);
        b.start(2, 4, &[0, 1]);
        for _ in 0..3 {
            b.push_rows(&[0, 1]);
        }
        assert_eq!(b.groups, vec![0, 1, 0, 1, 0, 1]);
        assert_eq!(b.push_rows(&[1]), 6..7);
        assert_eq!(b.groups.last(), Some(&1));
    }

    #[test]
    fn finish_runs_gae_over_the_stored_rewards() {
        let mut b = RolloutBuffer::default();
        b.start(1, 1, &[]);
        b.push_rows(&[0]);
        b.push_rows(&[0]);
        b.rewards.copy_from_slice(&[1.0, 1.0]);
        b.complete.fill(true);
        // lambda = 1, gamma = 0.5, V(next) = 2: A1 = 1 + 0.5 * 2 = 2, A0 = 1 + 0.5 * 2 = 2.
        let batch = b.finish(&[2.0], 0.5, 1.0);
        assert_eq!(batch.advantages, vec![2.0, 2.0]);
        assert_eq!(batch.returns, vec![2.0, 2.0]);
    }

    #[test]
    fn incomplete_rows_are_left_out() {
        let mut b = RolloutBuffer::default();
        b.start(2, 1, &[]);
        b.push_rows(&[0, 1]);
        b.push_rows(&[0]);
        b.obs.copy_from_slice(&[10.0, 11.0, 12.0]);
        b.rewards.copy_from_slice(&[1.0, 1.0, 0.0]);
        b.values.copy_from_slice(&[0.0, 0.0, 5.0]);
        b.complete.copy_from_slice(&[true, true, false]);
        // Lane 0's last decision is pending: its first row bootstraps from that decision's
        // value, which the caller passes as lane 0's next value.
        let batch = b.finish(&[5.0, 0.0], 0.5, 1.0);
        assert_eq!(batch.obs, vec![10.0, 11.0]);
        assert_eq!(batch.advantages, vec![3.5, 1.0]);
    }
}
