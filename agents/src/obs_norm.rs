//! Running mean and variance of observations (parallel Welford), frozen at evaluation.

use crate::collective::Collective;
use serde::{Deserialize, Serialize};

/// Running statistics of each observation component.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunningMeanStd {
    /// Per-component mean.
    pub mean: Vec<f64>,
    /// Per-component (population) variance.
    pub var: Vec<f64>,
    /// Number of samples folded in (starts at a tiny epsilon, as in SB3).
    pub count: f64,
}

/// Normalized values are clipped to +-this (SB3's `clip_obs`).
pub const OBS_CLIP: f32 = mocc_policy::DEFAULT_OBS_CLIP;
/// Added to the variance before the square root.
pub const OBS_EPS: f64 = mocc_policy::DEFAULT_OBS_EPS;

impl RunningMeanStd {
    /// Fresh statistics for `dim` components (mean 0, var 1).
    pub fn new(dim: usize) -> Self {
        Self {
            mean: vec![0.0; dim],
            var: vec![1.0; dim],
            count: 1e-4,
        }
    }

    /// Number of components.
    pub fn dim(&self) -> usize {
        self.mean.len()
    }

    /// Folds in a batch `[n, dim]` (row-major).
    pub fn update(&mut self, batch: &[f32]) {
        let d = self.dim();
        let n = batch.len() / d;
        if n == 0 {
            return;
        }
        let nf = n as f64;
        let mut means = vec![0.0; d];
        let mut vars = vec![0.0; d];
        for j in 0..d {
            let col = batch.iter().skip(j).step_by(d).map(|&x| f64::from(x));
            means[j] = col.clone().sum::<f64>() / nf;
            vars[j] = col.map(|x| (x - means[j]).powi(2)).sum::<f64>() / nf;
        }
        self.merge(&means, &vars, nf);
    }

    /// [`Self::update`] with the union of every rank's `batch` (the ranks may hold different
    /// numbers of rows, none at all included): the same statistics on every rank. Every rank
    /// must call it, in the same order.
    pub fn update_across(&mut self, batch: &[f32], world: &dyn Collective) {
        if world.ranks() == 1 {
            return self.update(batch);
        }
        let sums = world.sum_f64(&self.deviation_sums(batch));
        self.fold_deviation_sums(&sums);
    }

    /// `batch`'s row count, then per component the sums of the deviations from the current
    /// mean and of their squares (`1 + 2 * dim` numbers; the first is the row count). Sums of
    /// deviations from a mean every rank shares keep the variance from being the difference
    /// of two large numbers.
    pub fn deviation_sums(&self, batch: &[f32]) -> Vec<f64> {
        let d = self.dim();
        let mut local = vec![0.0; 1 + 2 * d];
        for row in batch.chunks_exact(d) {
            local[0] += 1.0;
            for (j, &x) in row.iter().enumerate() {
                let dev = f64::from(x) - self.mean[j];
                local[1 + j] += dev;
                local[1 + d + j] += dev * dev;
            }
        }
        local
    }

    /// Folds in the samples whose [`Self::deviation_sums`] (added over the ranks) are `sums`.
    pub fn fold_deviation_sums(&mut self, sums: &[f64]) {
        let d = self.dim();
        let nf = sums[0];
        if nf == 0.0 {
            return;
        }
        let shift: Vec<f64> = (0..d).map(|j| sums[1 + j] / nf).collect();
        let vars: Vec<f64> = (0..d)
            .map(|j| (sums[1 + d + j] / nf - shift[j] * shift[j]).max(0.0))
            .collect();
        let means: Vec<f64> = (0..d).map(|j| self.mean[j] + shift[j]).collect();
        self.merge(&means, &vars, nf);
    }

    /// Folds in `nf` samples of per-component mean `means` and population variance `vars`
    /// (Chan et al.'s parallel combination).
    fn merge(&mut self, means: &[f64], vars: &[f64], nf: f64) {
        let total = self.count + nf;
        for j in 0..self.dim() {
            let delta = means[j] - self.mean[j];
            let m2 =
                self.var[j] * self.count + vars[j] * nf + delta * delta * self.count * nf / total;
            self.mean[j] += delta * nf / total;
            self.var[j] = m2 / total;
        }
        self.count += nf;
    }

    /// The statistics of the first `n` values of a row (the actor's observation, when rows carry
    /// a centralized critic's global state after it).
    pub fn prefix(&self, n: usize) -> RunningMeanStd {
        let n = n.min(self.dim());
        RunningMeanStd {
            mean: self.mean[..n].to_vec(),
            var: self.var[..n].to_vec(),
            count: self.count,
        }
    }

    /// These statistics widened to `dim` components: the new ones start at mean 0 and variance 1
    /// (a centralized critic's global state after an actor's observation; its values are
    /// already ratios of order one) and share the samples' count.
    pub fn widened(&self, dim: usize) -> RunningMeanStd {
        let mut mean = self.mean.clone();
        let mut var = self.var.clone();
        mean.resize(dim.max(self.dim()), 0.0);
        var.resize(dim.max(self.dim()), 1.0);
        RunningMeanStd {
            mean,
            var,
            count: self.count,
        }
    }

    /// The frozen statistics, as an exported policy stores them.
    pub fn frozen(&self) -> mocc_policy::Normalization {
        mocc_policy::Normalization {
            mean: self.mean.clone(),
            var: self.var.clone(),
            epsilon: OBS_EPS,
            clip: OBS_CLIP,
        }
    }

    /// Normalizes `src` into `dst` (both `[n, dim]`), clipping to +-`OBS_CLIP`.
    pub fn normalize(&self, src: &[f32], dst: &mut [f32]) {
        let d = self.dim();
        for (row_in, row_out) in src.chunks_exact(d).zip(dst.chunks_exact_mut(d)) {
            for j in 0..d {
                let std = (self.var[j] + OBS_EPS).sqrt();
                row_out[j] = mocc_policy::normalize_value(row_in[j], self.mean[j], std, OBS_CLIP);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_combine_like_one_pass() {
        let data: Vec<f32> = (0..40).map(|i| ((i * 37) % 11) as f32 * 0.5).collect();
        let mut a = RunningMeanStd::new(2);
        a.update(&data[..16]);
        a.update(&data[16..]);
        let mut b = RunningMeanStd::new(2);
        b.update(&data);
        for j in 0..2 {
            assert!((a.mean[j] - b.mean[j]).abs() < 1e-9);
            assert!((a.var[j] - b.var[j]).abs() < 1e-9);
        }
        // Against a direct computation (the 1e-4 prior count is negligible).
        let col: Vec<f64> = data.iter().step_by(2).map(|&x| f64::from(x)).collect();
        let m = col.iter().sum::<f64>() / col.len() as f64;
        let v = col.iter().map(|x| (x - m).powi(2)).sum::<f64>() / col.len() as f64;
        assert!((b.mean[0] - m).abs() < 1e-4 && (b.var[0] - v).abs() < 1e-3);
    }

    #[test]
    fn normalize_clips() {
        let s = RunningMeanStd {
            mean: vec![1.0],
            var: vec![4.0],
            count: 10.0,
        };
        let mut out = [0.0f32; 3];
        s.normalize(&[3.0, 1.0, 1e6], &mut out);
        assert!((out[0] - 1.0).abs() < 1e-6);
        assert_eq!(out[1], 0.0);
        assert_eq!(out[2], OBS_CLIP);
    }

    #[test]
    fn ranks_fold_the_union_of_their_batches() {
        use crate::collective::tests::ThreadRanks;
        let data: Vec<f32> = (0..42)
            .map(|i| ((i * 37) % 11) as f32 * 0.5 + 3.0)
            .collect();
        let mut whole = RunningMeanStd::new(2);
        whole.update(&data[..10]);
        whole.update(&data[10..]);
        // Rank 0 holds 2 rows of the second batch, rank 1 14 and rank 2 none.
        let parts: [&[f32]; 3] = [&data[10..14], &data[14..], &[]];
        let ranks = ThreadRanks::group(3);
        let results: Vec<RunningMeanStd> = std::thread::scope(|s| {
            let handles: Vec<_> = ranks
                .into_iter()
                .map(|r| {
                    let first = &data[..10];
                    let mine = parts[r.rank()];
                    s.spawn(move || {
                        let mut stats = RunningMeanStd::new(2);
                        stats.update(first);
                        stats.update_across(mine, &r);
                        stats
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("no panic"))
                .collect()
        });
        for r in &results {
            assert_eq!(r, &results[0], "every rank holds the same statistics");
            assert_eq!(r.count, whole.count);
            for j in 0..2 {
                assert!((r.mean[j] - whole.mean[j]).abs() < 1e-12);
                assert!((r.var[j] - whole.var[j]).abs() < 1e-12);
            }
        }
    }
}
