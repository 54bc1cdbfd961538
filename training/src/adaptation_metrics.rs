//! The adaptation experiment's arithmetic, pure: new objectives drawn away from the pool, reward
//! curves and their smoothing, iterations to a target, the comparison of MOCC against policies
//! trained from scratch, and forgetting as the worst relative drop.

use crate::landmarks::Objective;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// Draws `k` objectives uniformly from the simplex (each weight >= 0.05), each at least 0.05
/// (max-norm) away from every objective in `avoid`.
pub fn sample_new_objectives(k: usize, seed: u64, avoid: &[Objective]) -> Vec<Objective> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(k);
    while out.len() < k {
        let (a, b): (f64, f64) = (rng.random(), rng.random());
        let (lo, hi) = (a.min(b), a.max(b));
        let w = [lo, hi - lo, 1.0 - hi];
        if w.iter().any(|&x| x < 0.05) {
            continue;
        }
        let rounded = w.map(|x| (x * 1e4).round() / 1e4);
        let fixed = [rounded[0], rounded[1], 1.0 - rounded[0] - rounded[1]];
        let far = |p: &Objective| fixed.iter().zip(p).any(|(x, y)| (x - y).abs() >= 0.05);
        if avoid.iter().all(far) && out.iter().all(far) {
            out.push(fixed);
        }
    }
    out
}

/// A reward curve: one value per iteration, with the wall seconds elapsed at its end.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Curve {
    /// Mean per-step rollout reward on the objective, per iteration.
    pub rewards: Vec<f64>,
    /// Wall seconds since the run started, at the end of each iteration.
    pub seconds: Vec<f64>,
}

impl Curve {
    /// Trailing moving average over `window` iterations.
    pub fn smoothed(&self, window: usize) -> Vec<f64> {
        let w = window.max(1);
        (0..self.rewards.len())
            .map(|i| {
                let lo = (i + 1).saturating_sub(w);
                let s = &self.rewards[lo..=i];
                s.iter().sum::<f64>() / s.len() as f64
            })
            .collect()
    }
}

/// Iterations (from 1; 0 when the first value already does) until `smoothed` reaches
/// `target`; `None` if it never does.
pub fn iterations_to(smoothed: &[f64], target: f64) -> Option<usize> {
    smoothed.iter().position(|&r| r >= target)
}

/// `max(0, (before - worst after) / |before|)`.
pub fn worst_relative_drop(before: f64, after: &[f64]) -> f64 {
    let worst = after.iter().copied().fold(f64::INFINITY, f64::min);
    if !worst.is_finite() || before == 0.0 {
        return 0.0;
    }
    ((before - worst) / before.abs()).max(0.0)
}

/// Per-objective results of the speed comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObjectiveResult {
    /// The new objective.
    pub objective: Objective,
    /// First rollout reward of the MOCC model.
    pub mocc_initial: f64,
    /// First rollout reward of the from-scratch policy.
    pub scratch_initial: f64,
    /// The common target (99% of the maximum gain).
    pub target: f64,
    /// MOCC's iterations to the target (`None`: not within its budget).
    pub mocc_iterations: Option<usize>,
    /// The from-scratch policy's iterations to the target.
    pub scratch_iterations: Option<usize>,
    /// MOCC's wall seconds to the target.
    pub mocc_seconds: Option<f64>,
}

/// The pool objective whose throughput and latency weights differ most from `new`'s: the
/// application whose trade-off adapting to `new` would move away from. The loss weight is left
/// out because `1 - loss` is close to 1 for every reasonable policy on most networks, so a
/// loss-heavy old objective barely registers forgetting.
pub fn default_old_objective(pool: &[Objective], new: &Objective) -> Objective {
    let distance = |w: &Objective| (w[0] - new[0]).abs() + (w[1] - new[1]).abs();
    pool.iter()
        .copied()
        .max_by(|a, b| distance(a).total_cmp(&distance(b)))
        .unwrap_or([1.0 / 3.0; 3])
}

/// Compares one objective's curves against the common 99%-of-maximum-gain target.
pub fn compare(
    objective: Objective,
    mocc: &Curve,
    scratch: &Curve,
    window: usize,
) -> ObjectiveResult {
    let sm = mocc.smoothed(window);
    let ss = scratch.smoothed(window);
    let r0 = scratch.rewards.first().copied().unwrap_or(0.0);
    let best = sm
        .iter()
        .chain(&ss)
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    let target = r0 + 0.99 * (best - r0);
    let mocc_iterations = iterations_to(&sm, target);
    ObjectiveResult {
        objective,
        mocc_initial: mocc.rewards.first().copied().unwrap_or(f64::NAN),
        scratch_initial: r0,
        target,
        mocc_iterations,
        scratch_iterations: iterations_to(&ss, target),
        mocc_seconds: mocc_iterations.map(|i| mocc.seconds.get(i).copied().unwrap_or(0.0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampled_objectives_are_valid_distinct_and_away_from_the_pool() {
        let pool = vec![[0.6, 0.3, 0.1], [1.0 / 3.0; 3]];
        let ws = sample_new_objectives(6, 3, &pool);
        assert_eq!(ws.len(), 6);
        for w in &ws {
            mocc_policy::objective::validate(w).unwrap();
            assert!(w.iter().all(|&x| x >= 0.049), "{w:?}");
            for p in &pool {
                assert!(w.iter().zip(p).any(|(a, b)| (a - b).abs() >= 0.05));
            }
        }
        assert_eq!(ws, sample_new_objectives(6, 3, &pool), "seeded");
    }

    #[test]
    fn the_default_old_objective_has_the_opposite_trade_off() {
        let pool = vec![[0.1, 0.1, 0.8], [0.8, 0.1, 0.1], [0.4, 0.3, 0.3]];
        // Latency-leaning new objective: the throughput-heavy one, not the loss-heavy one.
        assert_eq!(
            default_old_objective(&pool, &[0.26, 0.563, 0.177]),
            [0.8, 0.1, 0.1]
        );
    }

    #[test]
    fn curve_metrics_on_hand_values() {
        let c = Curve {
            rewards: vec![0.0, 1.0, 2.0, 3.0],
            seconds: vec![1.0, 2.0, 3.0, 4.0],
        };
        assert_eq!(c.smoothed(2), vec![0.0, 0.5, 1.5, 2.5]);
        assert_eq!(iterations_to(&[0.1, 0.5, 0.9], 0.5), Some(1));
        assert_eq!(iterations_to(&[0.1, 0.5], 0.95), None);
        assert!((worst_relative_drop(0.8, &[0.7, 0.6, 0.9]) - 0.25).abs() < 1e-12);
        assert_eq!(worst_relative_drop(0.8, &[0.9]), 0.0);
        // MOCC starts near the best; scratch climbs from 0.2 to 0.8 over 4 iterations.
        let mocc = Curve {
            rewards: vec![0.79, 0.8, 0.8],
            seconds: vec![0.5, 1.0, 1.5],
        };
        let scratch = Curve {
            rewards: vec![0.2, 0.4, 0.6, 0.8, 0.8],
            seconds: vec![0.1; 5],
        };
        let r = compare([0.2, 0.3, 0.5], &mocc, &scratch, 1);
        // target = 0.2 + 0.99 * 0.6 = 0.794
        assert!((r.target - 0.794).abs() < 1e-12);
        assert_eq!(r.mocc_iterations, Some(1));
        assert_eq!(r.scratch_iterations, Some(3));
        assert_eq!(r.mocc_seconds, Some(1.0));
        assert!((r.mocc_initial / r.scratch_initial - 3.95).abs() < 1e-9);
    }
}
