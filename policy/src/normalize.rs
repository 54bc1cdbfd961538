//! Observation normalization with frozen statistics: `clip((x - mean) / sqrt(var + eps))`.
//!
//! The trainer's running statistics and an exported policy normalize through [`normalize_value`],
//! so a deployed controller sees bit-for-bit the inputs the network saw in the gym.

use serde::{Deserialize, Serialize};

/// Normalized values are clipped to +-this by default (Stable-Baselines3's `clip_obs`).
pub const DEFAULT_OBS_CLIP: f32 = 10.0;
/// Added to the variance before the square root by default.
pub const DEFAULT_OBS_EPS: f64 = 1e-8;

/// `clip((x - mean) / std, -clip, clip)` computed in f64 and rounded to f32 before clipping.
#[inline]
pub fn normalize_value(x: f32, mean: f64, std: f64, clip: f32) -> f32 {
    let z = (f64::from(x) - mean) / std;
    (z as f32).clamp(-clip, clip)
}

/// Frozen per-component statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Normalization {
    /// Per-component mean.
    pub mean: Vec<f64>,
    /// Per-component variance.
    pub var: Vec<f64>,
    /// Added to the variance before the square root.
    pub epsilon: f64,
    /// Normalized values are clipped to +-clip.
    pub clip: f32,
}

impl Normalization {
    /// Checks lengths and values; the message names the field.
    pub fn validate(&self, dim: usize) -> Result<(), (String, String)> {
        let bad = |field: &str, message: String| Err((field.to_string(), message));
        if self.mean.len() != dim {
            return bad(
                "mean",
                format!("has {} values, the observation has {dim}", self.mean.len()),
            );
        }
        if self.var.len() != dim {
            return bad(
                "var",
                format!("has {} values, the observation has {dim}", self.var.len()),
            );
        }
        if let Some(i) = self.mean.iter().position(|m| !m.is_finite()) {
            return bad(
                &format!("mean[{i}]"),
                format!("must be finite (got {})", self.mean[i]),
            );
        }
        if let Some(i) = self.var.iter().position(|v| !(v.is_finite() && *v >= 0.0)) {
            return bad(
                &format!("var[{i}]"),
                format!("must be finite and >= 0 (got {})", self.var[i]),
            );
        }
        if !(self.epsilon.is_finite() && self.epsilon >= 0.0) {
            return bad(
                "epsilon",
                format!("must be finite and >= 0 (got {})", self.epsilon),
            );
        }
        if let Some(i) = self.var.iter().position(|v| v + self.epsilon <= 0.0) {
            return bad(
                &format!("var[{i}]"),
                "var + epsilon must be > 0".to_string(),
            );
        }
        if !(self.clip.is_finite() && self.clip > 0.0) {
            return bad(
                "clip",
                format!("must be finite and > 0 (got {})", self.clip),
            );
        }
        Ok(())
    }

    /// Precomputes the standard deviations.
    pub fn normalizer(&self) -> Normalizer {
        Normalizer {
            mean: self.mean.clone(),
            std: self.var.iter().map(|v| (v + self.epsilon).sqrt()).collect(),
            clip: self.clip,
        }
    }
}

/// Statistics ready to apply.
#[derive(Debug, Clone, PartialEq)]
pub struct Normalizer {
    mean: Vec<f64>,
    std: Vec<f64>,
    clip: f32,
}

impl Normalizer {
    /// Number of components.
    pub fn dim(&self) -> usize {
        self.mean.len()
    }

    /// Normalizes one observation `src` into `dst` (both `dim` long).
    pub fn apply(&self, src: &[f32], dst: &mut [f32]) {
        for (((d, &x), &m), &s) in dst.iter_mut().zip(src).zip(&self.mean).zip(&self.std) {
            *d = normalize_value(x, m, s, self.clip);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_values_and_clipping() {
        let n = Normalization {
            mean: vec![1.0, 0.0, 0.0],
            var: vec![3.99, 0.0, 0.99],
            epsilon: 0.0,
            clip: 10.0,
        };
        assert!(
            n.validate(3).is_err(),
            "var 0 with epsilon 0 divides by zero"
        );
        let n = Normalization { epsilon: 1e-2, ..n };
        n.validate(3).unwrap();
        let mut out = [0.0; 3];
        n.normalizer().apply(&[5.0, 0.05, -30.0], &mut out);
        // (5-1)/sqrt(4) = 2; 0.05/sqrt(0.01) = 0.5; -30/sqrt(1) clipped to -10.
        assert!((out[0] - 2.0).abs() < 1e-6, "{out:?}");
        assert!((out[1] - 0.5).abs() < 1e-6, "{out:?}");
        assert_eq!(out[2], -10.0);
    }

    #[test]
    fn validation_names_fields() {
        let n = Normalization {
            mean: vec![0.0, f64::NAN],
            var: vec![1.0, 1.0],
            epsilon: 1e-8,
            clip: 10.0,
        };
        assert_eq!(n.validate(2).unwrap_err().0, "mean[1]");
        assert_eq!(n.validate(3).unwrap_err().0, "mean");
        let n = Normalization {
            mean: vec![0.0],
            var: vec![-1.0],
            epsilon: 1e-8,
            clip: 10.0,
        };
        assert_eq!(n.validate(1).unwrap_err().0, "var[0]");
    }
}
