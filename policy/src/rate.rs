//! Aurora's rate-update rule: multiplicative steps scaled by `delta_scale`, then clamped.

use serde::{Deserialize, Serialize};

/// Invalid rate-rule parameters.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RateError {
    /// A field outside its domain.
    #[error("{field}: {message}")]
    Invalid {
        /// The offending field.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
}

/// `d = delta_scale * a`; `rate *= 1 + d` when `d >= 0`, else `rate /= 1 - d`; then clamp.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateRule {
    /// Scale applied to the action (Aurora: 0.025).
    #[serde(default = "default_delta_scale")]
    pub delta_scale: f64,
    /// Lowest rate the rule produces, packets/s (Aurora: 40).
    #[serde(default = "default_min_rate")]
    pub min_rate_pps: f64,
    /// Highest rate the rule produces, packets/s (Aurora: 1000).
    #[serde(default = "default_max_rate")]
    pub max_rate_pps: f64,
}

fn default_delta_scale() -> f64 {
    0.025
}
fn default_min_rate() -> f64 {
    40.0
}
fn default_max_rate() -> f64 {
    1000.0
}

impl Default for RateRule {
    fn default() -> Self {
        Self {
            delta_scale: default_delta_scale(),
            min_rate_pps: default_min_rate(),
            max_rate_pps: default_max_rate(),
        }
    }
}

impl RateRule {
    /// Checks the parameters; errors name the field.
    pub fn validate(&self) -> Result<(), RateError> {
        let invalid = |field, message: String| Err(RateError::Invalid { field, message });
        if !(self.delta_scale.is_finite() && self.delta_scale > 0.0) {
            return invalid(
                "delta_scale",
                format!("must be > 0 (got {})", self.delta_scale),
            );
        }
        if !(self.min_rate_pps.is_finite() && self.min_rate_pps > 0.0) {
            return invalid(
                "min_rate_pps",
                format!("must be > 0 (got {})", self.min_rate_pps),
            );
        }
        if !(self.max_rate_pps.is_finite() && self.max_rate_pps >= self.min_rate_pps) {
            return invalid(
                "max_rate_pps",
                format!(
                    "must be finite and >= min_rate_pps {} (got {})",
                    self.min_rate_pps, self.max_rate_pps
                ),
            );
        }
        Ok(())
    }

    /// Clamps a rate to the limits (NaN becomes the minimum).
    pub fn clamp(&self, rate_pps: f64) -> f64 {
        if rate_pps.is_nan() {
            self.min_rate_pps
        } else if rate_pps > self.max_rate_pps {
            self.max_rate_pps
        } else if rate_pps < self.min_rate_pps {
            self.min_rate_pps
        } else {
            rate_pps
        }
    }

    /// The next rate after action `action`. A NaN action leaves the rate unchanged (then clamped);
    /// infinite actions saturate at the limits.
    pub fn apply(&self, rate_pps: f64, action: f64) -> f64 {
        let action = if action.is_nan() { 0.0 } else { action };
        let delta = action * self.delta_scale;
        let next = if delta >= 0.0 {
            rate_pps * (1.0 + delta)
        } else {
            rate_pps / (1.0 - delta)
        };
        self.clamp(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn hand_computed_steps() {
        let r = RateRule::default();
        assert_eq!(r.apply(100.0, 0.0), 100.0);
        assert!((r.apply(100.0, 4.0) - 110.0).abs() < 1e-12);
        assert!((r.apply(110.0, -4.0) - 100.0).abs() < 1e-12);
        assert_eq!(r.apply(990.0, 10.0), 1000.0);
        assert_eq!(r.apply(41.0, -10.0), 40.0);
        assert_eq!(r.apply(100.0, f64::NAN), 100.0);
        assert_eq!(r.clamp(f64::NAN), 40.0);
        assert_eq!(r.apply(100.0, f64::INFINITY), 1000.0);
        assert_eq!(r.apply(100.0, f64::NEG_INFINITY), 40.0);
    }

    #[test]
    fn validation_names_fields() {
        let bad = RateRule {
            min_rate_pps: 0.0,
            ..RateRule::default()
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("min_rate_pps"));
        let bad = RateRule {
            max_rate_pps: 10.0,
            ..RateRule::default()
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("max_rate_pps"));
    }

    proptest! {
        #[test]
        fn rate_stays_in_limits(rate in 1.0f64..5000.0, a in -1e6f64..1e6) {
            let r = RateRule::default();
            let next = r.apply(rate, a);
            prop_assert!((40.0..=1000.0).contains(&next));
        }

        #[test]
        fn opposite_actions_cancel(rate in 50.0f64..900.0, a in 0.0f64..1.0) {
            let r = RateRule::default();
            let up = rate * (1.0 + a * r.delta_scale);
            prop_assume!(up <= 1000.0);
            let back = r.apply(r.apply(rate, a), -a);
            prop_assert!((back - rate).abs() < 1e-9 * rate);
        }
    }
}
