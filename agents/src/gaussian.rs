//! The policy's action distribution: a diagonal Gaussian N(mean, exp(log_std)^2). One owner for
//! sampling during rollouts (on the host, from the learner's checkpointed RNG) and for the
//! log-density and entropy the PPO loss differentiates (on tensors).

use crate::numerics::{self, Numerics};
use rand::Rng;
use tch::{Kind, Tensor};

/// `0.5 * ln(2 pi)`.
pub const HALF_LN_2PI: f64 = 0.918_938_533_204_672_8;

/// A standard normal draw (Box-Muller, the cosine branch), one per call.
pub fn standard_normal<R: Rng>(rng: &mut R) -> f32 {
    standard_normal_f64(rng) as f32
}

/// [`standard_normal`] before its rounding to f32.
pub fn standard_normal_f64<R: Rng>(rng: &mut R) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// An action drawn from N(mean, exp(log_std)^2) and its log-density.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// The action.
    pub action: f32,
    /// `log N(action; mean, exp(log_std)^2)`.
    pub log_prob: f32,
}

/// Draws one action around `mean` with standard deviation `std = exp(log_std)` (passed in so a
/// batch computes it once).
pub fn sample<R: Rng>(mean: f32, std: f32, log_std: f32, rng: &mut R) -> Sample {
    let eps = standard_normal(rng);
    Sample {
        action: mean + std * eps,
        log_prob: log_prob_of_noise(eps, log_std),
    }
}

/// The log-density of `mean + exp(log_std) * eps`: `-eps^2 / 2 - log_std - ln(2 pi) / 2`
/// (what [`log_prob`] gives for that action, without the round trip through the action).
pub fn log_prob_of_noise(eps: f32, log_std: f32) -> f32 {
    (-0.5 * f64::from(eps).powi(2) - f64::from(log_std) - HALF_LN_2PI) as f32
}

/// Log density of `action` under N(mean, exp(log_std)^2), summed over the action dimension.
pub fn log_prob(numerics: Numerics, action: &Tensor, mean: &Tensor, log_std: &Tensor) -> Tensor {
    let var = numerics::exp(numerics, &(log_std * 2.0));
    let sq = (action - mean).square();
    let lp = -(sq / (var * 2.0)) - log_std - 0.5 * (2.0 * std::f64::consts::PI).ln();
    lp.sum_dim_intlist(-1, false, Kind::Float)
}

/// Entropy of N(mean, exp(log_std)^2), summed over the action dimension.
pub fn entropy(log_std: &Tensor) -> Tensor {
    (log_std + 0.5 + 0.5 * (2.0 * std::f64::consts::PI).ln()).sum_dim_intlist(
        -1,
        false,
        Kind::Float,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn formulas_match_hand_values() {
        let a = Tensor::from_slice(&[1.0f32]).view([1, 1]);
        let m = Tensor::from_slice(&[0.0f32]).view([1, 1]);
        let s = Tensor::from_slice(&[0.0f32]).view([1, 1]);
        // log N(1; 0, 1) = -0.5 - 0.5 ln(2 pi)
        let expect = -0.5 - 0.5 * (2.0 * std::f64::consts::PI).ln();
        let lp = log_prob(Numerics::Native, &a, &m, &s).double_value(&[0]);
        assert!((lp - expect).abs() < 1e-6, "{lp}");
        assert!((HALF_LN_2PI - 0.5 * (2.0 * std::f64::consts::PI).ln()).abs() < 1e-15);
        let h = entropy(&s).double_value(&[0]);
        assert!((h - (0.5 + 0.5 * (2.0 * std::f64::consts::PI).ln())).abs() < 1e-6);
    }

    #[test]
    fn a_sample_carries_the_log_density_of_its_action() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for (mean, log_std) in [(0.0f32, 0.0f32), (0.7, -1.2), (-2.0, 0.4)] {
            let std = log_std.exp();
            let s = sample(mean, std, log_std, &mut rng);
            let t = |v: f32| Tensor::from_slice(&[v]).view([1, 1]);
            let lp =
                log_prob(Numerics::Native, &t(s.action), &t(mean), &t(log_std)).double_value(&[0]);
            assert!(
                (lp - f64::from(s.log_prob)).abs() < 1e-4,
                "{lp} vs {}",
                s.log_prob
            );
        }
    }

    #[test]
    fn standard_normal_draws_have_unit_moments() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let xs: Vec<f64> = (0..20_000)
            .map(|_| f64::from(standard_normal(&mut rng)))
            .collect();
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64;
        assert!(mean.abs() < 0.03, "{mean}");
        assert!((var - 1.0).abs() < 0.04, "{var}");
    }
}
