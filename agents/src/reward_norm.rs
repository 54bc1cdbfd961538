//! Reward scaling, as Gymnasium's `NormalizeReward` wrapper (which CleanRL's
//! `ppo_continuous_action` puts around every env): each reward is divided by the running standard
//! deviation of the env's discounted return, then clipped.
//!
//! Without it the critic regresses returns of the order of `r / (1 - gamma)` (hundreds here),
//! which the clipped value loss can move by only `clip_coef` per update, and whose gradients
//! dominate the global gradient-norm clip that the actor shares.

use crate::collective::{Collective, SingleProcess};
use crate::obs_norm::RunningMeanStd;
use serde::{Deserialize, Serialize};

/// Added to the return variance before the square root (Gymnasium's epsilon).
pub const REWARD_EPS: f64 = 1e-8;

/// Running scale of each env's discounted return.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RewardScaler {
    /// Statistics of the discounted returns (one component).
    pub return_stats: RunningMeanStd,
    /// Each env's discounted return so far in its episode.
    pub returns: Vec<f64>,
}

impl RewardScaler {
    /// Fresh statistics for `envs` envs.
    pub fn new(envs: usize) -> Self {
        Self {
            return_stats: RunningMeanStd::new(1),
            returns: vec![0.0; envs],
        }
    }

    /// Keeps the return statistics and restarts every env's return (a run with other envs
    /// continuing a pretrained model).
    pub fn with_envs(&self, envs: usize) -> Self {
        Self {
            return_stats: self.return_stats.clone(),
            returns: vec![0.0; envs],
        }
    }

    /// The factor rewards are multiplied by before clipping: `1 / sqrt(var + eps)`.
    pub fn factor(&self) -> f64 {
        1.0 / (self.return_stats.var[0] + REWARD_EPS).sqrt()
    }

    /// Folds one step of every env into the statistics and writes the scaled, clipped rewards
    /// into `out`. `done[e]` ends env `e`'s episode after this step (its return restarts).
    pub fn scale(
        &mut self,
        rewards: &[f32],
        done: &[bool],
        gamma: f64,
        clip: f64,
        out: &mut [f32],
    ) {
        debug_assert_eq!(rewards.len(), self.returns.len());
        let lanes: Vec<usize> = (0..rewards.len()).collect();
        self.scale_lanes(&lanes, rewards, done, (gamma, clip), &SingleProcess, out);
    }

    /// As [`RewardScaler::scale`] for the listed lanes only (`rewards` and `done` indexed by
    /// lane, `out[j]` for `lanes[j]`): lanes that completed no step are left alone. The return
    /// statistics fold in every rank's returns of this step (see
    /// [`RunningMeanStd::update_across`]); every rank calls it at every step.
    pub fn scale_lanes(
        &mut self,
        lanes: &[usize],
        rewards: &[f32],
        done: &[bool],
        (gamma, clip): (f64, f64),
        world: &dyn Collective,
        out: &mut [f32],
    ) {
        let mut batch = Vec::with_capacity(lanes.len());
        for &e in lanes {
            let ret = &mut self.returns[e];
            *ret = *ret * gamma + f64::from(rewards[e]);
            batch.push(*ret as f32);
        }
        self.return_stats.update_across(&batch, world);
        let factor = self.factor();
        for (o, &e) in out.iter_mut().zip(lanes) {
            *o = (f64::from(rewards[e]) * factor).clamp(-clip, clip) as f32;
        }
        for &e in lanes {
            if done[e] {
                self.returns[e] = 0.0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_two_steps() {
        let mut s = RewardScaler::new(2);
        let mut out = [0.0f32; 2];
        // Step 1: returns (1, 3); mean 2, population variance 1 (the 1e-4 prior is negligible).
        s.scale(&[1.0, 3.0], &[false, true], 0.5, 10.0, &mut out);
        let f = 1.0 / (s.return_stats.var[0] + REWARD_EPS).sqrt();
        assert!(
            (s.return_stats.var[0] - 1.0).abs() < 1e-3,
            "{:?}",
            s.return_stats
        );
        assert!((f64::from(out[0]) - f).abs() < 1e-6);
        assert!((f64::from(out[1]) - 3.0 * f).abs() < 1e-5);
        // Env 1's episode ended: its return restarts; env 0's is discounted.
        assert_eq!(s.returns, vec![1.0, 0.0]);
        s.scale(&[2.0, 2.0], &[false, false], 0.5, 10.0, &mut out);
        assert_eq!(s.returns, vec![2.5, 2.0]);
        assert_eq!(out[0], out[1]);
    }

    #[test]
    fn constant_rewards_clip_and_are_finite() {
        let mut s = RewardScaler::new(3);
        let mut out = [0.0f32; 3];
        for _ in 0..50 {
            s.scale(&[5.0, 5.0, 5.0], &[false; 3], 0.0, 2.0, &mut out);
        }
        // Identical returns: variance decays to ~0, so the scaled reward hits the clip.
        assert!(out.iter().all(|&o| o == 2.0), "{out:?}");
        s.scale(&[-5.0, 0.0, 5.0], &[false; 3], 0.0, 2.0, &mut out);
        assert!(out.iter().all(|o| o.is_finite()));
        assert_eq!(out[1], 0.0);
    }

    #[test]
    fn the_scale_follows_the_return_magnitude() {
        // Rewards 100x larger give (nearly) the same scaled rewards.
        let run = |k: f32| {
            let mut s = RewardScaler::new(2);
            let mut out = [0.0f32; 2];
            let mut last = [0.0f32; 2];
            for t in 0..200 {
                let r = [k * (t % 3) as f32, k * (t % 5) as f32];
                s.scale(&r, &[t % 50 == 49, false], 0.99, 10.0, &mut out);
                last = out;
            }
            last
        };
        let (a, b) = (run(1.0), run(100.0));
        for (x, y) in a.iter().zip(&b) {
            assert!((x - y).abs() < 1e-3 * x.abs().max(1.0), "{a:?} {b:?}");
        }
    }

    #[test]
    fn with_envs_keeps_statistics_and_restarts_returns() {
        let mut s = RewardScaler::new(2);
        let mut out = [0.0f32; 2];
        s.scale(&[1.0, 4.0], &[false, false], 0.9, 10.0, &mut out);
        let t = s.with_envs(5);
        assert_eq!(t.return_stats, s.return_stats);
        assert_eq!(t.returns, vec![0.0; 5]);
    }
}
