//! Statistics of evaluation results. For one evaluation: the median and Spearman's rank
//! correlation that targets read. Over training seeds, as the field reports learned-policy
//! results (rliable: Agarwal et al., "Deep Reinforcement Learning at the Edge of the
//! Statistical Precipice", NeurIPS 2021): the interquartile mean, percentile confidence
//! intervals from a stratified bootstrap, and the probability of improvement.
//!
//! Scores come as tasks of runs (`[task][run]`): a task is one measured quantity (a target's
//! check), a run one training seed. Every function is deterministic: the bootstrap draws from
//! a ChaCha stream of a given seed.

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The mean of `values` (None when empty).
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The median of `values`, the mean of the two middle ones for an even count (None when
/// empty). NaN sorts last.
pub fn median(values: &[f64]) -> Option<f64> {
    let sorted = sorted(values);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// `values` in ascending order (NaN last).
fn sorted(values: &[f64]) -> Vec<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

/// The `q` quantile (0..=1) of `values` by linear interpolation between order statistics, as
/// NumPy's default `percentile` (None when empty).
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    let s = sorted(values);
    if s.is_empty() {
        return None;
    }
    let pos = q.clamp(0.0, 1.0) * (s.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    Some(s[lo] + (s[hi] - s[lo]) * (pos - lo as f64))
}

/// Ranks from 1, ties sharing the mean of the ranks they span.
pub fn ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut out = vec![0.0; values.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && values[order[j + 1]] == values[order[i]] {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            out[k] = rank;
        }
        i = j + 1;
    }
    out
}

/// Spearman's rank correlation of `x` and `y` (the Pearson correlation of their ranks, ties
/// averaged). None for fewer than two pairs, unequal lengths, or a side without spread (a
/// policy that ignores its objective gives no ranking at all).
pub fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() != y.len() || x.len() < 2 {
        return None;
    }
    let (rx, ry) = (ranks(x), ranks(y));
    let (mx, my) = (mean(&rx)?, mean(&ry)?);
    let mut sxy = 0.0;
    let mut sxx = 0.0;
    let mut syy = 0.0;
    for (a, b) in rx.iter().zip(&ry) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

/// The interquartile mean: the mean of what is left after cutting `floor(n / 4)` values from
/// each end of the sorted values (SciPy's `trim_mean(values, 0.25)`, rliable's IQM). None when
/// empty.
pub fn iqm(values: &[f64]) -> Option<f64> {
    let s = sorted(values);
    let cut = s.len() / 4;
    mean(&s[cut..s.len() - cut])
}

/// The interquartile mean over every run of every task (rliable's aggregate IQM).
pub fn aggregate_iqm(tasks: &[Vec<f64>]) -> Option<f64> {
    iqm(&tasks.concat())
}

/// A confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Interval {
    /// Its lower end.
    pub low: f64,
    /// Its upper end.
    pub high: f64,
}

/// How a bootstrap resamples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bootstrap {
    /// Replicates drawn (rliable: 50,000).
    pub replicates: usize,
    /// Coverage of the interval (0.95).
    pub confidence: f64,
    /// Seed of the draws.
    pub seed: u64,
}

impl Default for Bootstrap {
    fn default() -> Self {
        Self {
            replicates: 50_000,
            confidence: 0.95,
            seed: 0,
        }
    }
}

impl Bootstrap {
    /// The percentile interval of `statistic` over replicates of `tasks`, each replicate drawing
    /// every task's runs with replacement from that task's own runs (stratified by task, as
    /// rliable's `StratifiedBootstrap`). None when a task has no runs or the statistic is
    /// undefined on a replicate.
    pub fn interval(
        &self,
        tasks: &[Vec<f64>],
        statistic: impl Fn(&[Vec<f64>]) -> Option<f64>,
    ) -> Option<Interval> {
        if tasks.is_empty() || tasks.iter().any(Vec::is_empty) || self.replicates == 0 {
            return None;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut replicate: Vec<Vec<f64>> = tasks.iter().map(|t| vec![0.0; t.len()]).collect();
        let mut values = Vec::with_capacity(self.replicates);
        for _ in 0..self.replicates {
            for (drawn, runs) in replicate.iter_mut().zip(tasks) {
                for slot in drawn.iter_mut() {
                    *slot = runs[below(&mut rng, runs.len())];
                }
            }
            values.push(statistic(&replicate)?);
        }
        let tail = (1.0 - self.confidence) / 2.0;
        Some(Interval {
            low: quantile(&values, tail)?,
            high: quantile(&values, 1.0 - tail)?,
        })
    }
}

/// A uniform draw from `0..n` (n > 0), without modulo bias.
fn below(rng: &mut ChaCha8Rng, n: usize) -> usize {
    let n = n as u64;
    let zone = u64::MAX - u64::MAX % n;
    loop {
        let v = rng.next_u64();
        if v < zone {
            return (v % n) as usize;
        }
    }
}

/// The probability that a run of `x` scores above a run of `y` on the same task, ties counting
/// one half (the Mann-Whitney U statistic over `nx x ny`), averaged over the tasks (rliable's
/// `probability_of_improvement`). `x` and `y` hold the same tasks in the same order; None when
/// they do not or a task has no runs on one side.
pub fn probability_of_improvement(x: &[Vec<f64>], y: &[Vec<f64>]) -> Option<f64> {
    if x.len() != y.len() || x.is_empty() {
        return None;
    }
    let per_task: Option<Vec<f64>> = x
        .iter()
        .zip(y)
        .map(|(xs, ys)| {
            if xs.is_empty() || ys.is_empty() {
                return None;
            }
            let mut wins = 0.0;
            for a in xs {
                for b in ys {
                    wins += if a > b {
                        1.0
                    } else if a == b {
                        0.5
                    } else {
                        0.0
                    };
                }
            }
            Some(wins / (xs.len() * ys.len()) as f64)
        })
        .collect();
    mean(&per_task?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_quantiles_by_hand() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.25), Some(2.0));
        assert_eq!(quantile(&[0.0, 10.0], 0.3), Some(3.0));
    }

    #[test]
    fn ranks_share_ties() {
        assert_eq!(ranks(&[10.0, 30.0, 20.0, 20.0]), vec![1.0, 4.0, 2.5, 2.5]);
    }

    #[test]
    fn spearman_by_hand() {
        // Ranks differ by one swap: rho = 1 - 6 * 2 / (4 * 15) = 0.8.
        let rho = spearman(&[1.0, 2.0, 3.0, 4.0], &[1.0, 3.0, 2.0, 4.0]).unwrap();
        assert!((rho - 0.8).abs() < 1e-12, "{rho}");
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[9.0, 5.0, 1.0]), Some(-1.0));
        // No spread on one side: no ranking.
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[5.0, 5.0, 5.0]), None);
        assert_eq!(spearman(&[1.0], &[1.0]), None);
    }

    #[test]
    fn interquartile_mean_trims_a_quarter_from_each_end() {
        // Six values: one cut from each end, the mean of 2, 3, 4, 5.
        assert_eq!(iqm(&[6.0, 1.0, 5.0, 2.0, 4.0, 3.0]), Some(3.5));
        // An outlier does not move it.
        assert_eq!(iqm(&[1.0, 2.0, 3.0, 4.0, 5.0, 1000.0]), Some(3.5));
        // Fewer than four values: nothing cut.
        assert_eq!(iqm(&[1.0, 2.0, 6.0]), Some(3.0));
        // Eight values: two from each end.
        assert_eq!(iqm(&[0.0, 0.0, 1.0, 2.0, 3.0, 4.0, 9.0, 9.0]), Some(2.5));
        assert_eq!(iqm(&[]), None);
        assert_eq!(
            aggregate_iqm(&[vec![1.0, 2.0], vec![3.0, 4.0, 5.0, 6.0]]),
            Some(3.5)
        );
    }

    #[test]
    fn bootstrap_interval_of_two_runs_spans_them() {
        // Means of two draws from {0, 1}: 0 (1/4), 0.5 (1/2), 1 (1/4); the 2.5% and 97.5%
        // quantiles are the ends.
        let b = Bootstrap {
            replicates: 4000,
            ..Bootstrap::default()
        };
        let ci = b.interval(&[vec![0.0, 1.0]], |t| mean(&t[0])).unwrap();
        assert_eq!(
            ci,
            Interval {
                low: 0.0,
                high: 1.0
            }
        );
        // Identical runs: no spread.
        let flat = b.interval(&[vec![0.7; 6]], |t| iqm(&t[0])).unwrap();
        assert_eq!(
            flat,
            Interval {
                low: 0.7,
                high: 0.7
            }
        );
        assert_eq!(b.interval(&[vec![]], |t| mean(&t[0])), None);
    }

    #[test]
    fn bootstrap_is_stratified_and_repeatable() {
        // Task 0 always draws 0, task 1 always 10: every replicate's mean of all runs is 5
        // (an unstratified draw would mix the tasks' counts).
        let tasks = vec![vec![0.0, 0.0, 0.0], vec![10.0, 10.0, 10.0]];
        let b = Bootstrap {
            replicates: 500,
            ..Bootstrap::default()
        };
        let ci = b.interval(&tasks, aggregate_iqm).unwrap();
        assert_eq!(
            ci,
            Interval {
                low: 5.0,
                high: 5.0
            }
        );
        let spread = vec![vec![0.1, 0.5, 0.9, 0.3, 0.7, 0.2]];
        let once = b.interval(&spread, |t| iqm(&t[0]));
        assert_eq!(once, b.interval(&spread, |t| iqm(&t[0])));
        let other = Bootstrap { seed: 1, ..b }.interval(&spread, |t| iqm(&t[0]));
        assert_ne!(once, other);
        let ci = once.unwrap();
        let point = iqm(&spread[0]).unwrap();
        assert!(ci.low <= point && point <= ci.high, "{ci:?} {point}");
    }

    #[test]
    fn probability_of_improvement_by_hand() {
        // 1 < 2 (0), 2 = 2 (1/2), 3 > 2 (1): 1.5 of 3.
        assert_eq!(
            probability_of_improvement(&[vec![1.0, 2.0, 3.0]], &[vec![2.0]]),
            Some(0.5)
        );
        // Averaged over tasks: 1 and 0.
        assert_eq!(
            probability_of_improvement(&[vec![5.0], vec![0.0]], &[vec![1.0], vec![1.0]]),
            Some(0.5)
        );
        // 2 of the 4 pairs won, none tied.
        assert_eq!(
            probability_of_improvement(&[vec![1.0, 4.0]], &[vec![2.0, 3.0]]),
            Some(0.5)
        );
        assert_eq!(probability_of_improvement(&[vec![1.0]], &[]), None);
        assert_eq!(probability_of_improvement(&[vec![]], &[vec![1.0]]), None);
    }
}
