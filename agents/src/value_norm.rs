//! Value normalization as MAPPO does it (Yu et al., "The Surprising Effectiveness of PPO in
//! Cooperative Multi-Agent Games"; marlbenchmark/on-policy's `ValueNorm`): the critic learns
//! returns standardized by a running mean and variance, updated once per batch with a decay of
//! `1 - 1e-5` and debiased like Adam's moments, and its outputs are mapped back before GAE.
//! Returns that grow with the number of flows on a link (or with a team reward) then keep one
//! scale for the critic's head.

use serde::{Deserialize, Serialize};

/// MAPPO's decay of the running moments, per batch.
pub const VALUE_NORM_BETA: f64 = 0.99999;
/// The smallest variance used (MAPPO's `clamp(min=1e-2)`).
pub const VALUE_NORM_MIN_VAR: f64 = 1e-2;

/// Running, debiased moments of the returns.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValueNorm {
    /// Running mean of the returns.
    pub running_mean: f64,
    /// Running mean of their squares.
    pub running_mean_sq: f64,
    /// The weight the moments have gathered (their debiasing divisor).
    pub debiasing: f64,
}

impl ValueNorm {
    /// Folds a batch's moments in: the mean of `sum / n` and of `sum_sq / n`.
    pub fn update(&mut self, sum: f64, sum_sq: f64, n: f64) {
        if n <= 0.0 {
            return;
        }
        let b = VALUE_NORM_BETA;
        self.running_mean = b * self.running_mean + (1.0 - b) * sum / n;
        self.running_mean_sq = b * self.running_mean_sq + (1.0 - b) * sum_sq / n;
        self.debiasing = b * self.debiasing + (1.0 - b);
    }

    /// The debiased mean and standard deviation (0 and 1 before any batch).
    pub fn mean_std(&self) -> (f64, f64) {
        if self.debiasing <= 0.0 {
            return (0.0, 1.0);
        }
        let mean = self.running_mean / self.debiasing;
        let var = (self.running_mean_sq / self.debiasing - mean * mean).max(VALUE_NORM_MIN_VAR);
        (mean, var.sqrt())
    }

    /// A return in the critic's units.
    pub fn normalize(&self, x: f32) -> f32 {
        let (m, s) = self.mean_std();
        ((f64::from(x) - m) / s) as f32
    }

    /// A critic output in return units.
    pub fn denormalize(&self, x: f32) -> f32 {
        let (m, s) = self.mean_std();
        (f64::from(x) * s + m) as f32
    }

    /// Whether every moment is finite.
    pub fn is_finite(&self) -> bool {
        self.running_mean.is_finite()
            && self.running_mean_sq.is_finite()
            && self.debiasing.is_finite()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_batch_by_hand() {
        let mut v = ValueNorm::default();
        assert_eq!(v.mean_std(), (0.0, 1.0));
        assert_eq!(v.normalize(3.0), 3.0);
        // Returns 2 and 4: mean 3, mean of squares 10, variance 1; one batch debiases exactly.
        v.update(6.0, 20.0, 2.0);
        let (m, s) = v.mean_std();
        assert!((m - 3.0).abs() < 1e-9 && (s - 1.0).abs() < 1e-6, "{m} {s}");
        assert!((v.normalize(5.0) - 2.0).abs() < 1e-5);
        assert!((v.denormalize(v.normalize(7.5)) - 7.5).abs() < 1e-5);
        // A constant return: the variance is floored at 1e-2 (std 0.1).
        let mut c = ValueNorm::default();
        c.update(10.0, 50.0, 2.0);
        assert!((c.mean_std().1 - 0.1).abs() < 1e-9);
    }

    #[test]
    fn moments_of_two_batches_weigh_the_newer_by_the_decay() {
        let mut v = ValueNorm::default();
        v.update(0.0, 0.0, 1.0);
        v.update(10.0, 100.0, 1.0);
        let b = VALUE_NORM_BETA;
        // Debiased mean: (1-b) 10 / ((1-b)(1+b)) = 10 / (1 + b), about 5.
        let (m, _) = v.mean_std();
        assert!((m - 10.0 / (1.0 + b)).abs() < 1e-6, "{m}");
    }
}
