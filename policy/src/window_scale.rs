//! [`WindowScale`]: Orca's action (Abbasloo, Yen and Chao, "Classic meets modern", SIGCOMM
//! 2020). The learned sender runs Cubic underneath, which reacts to every ack and loss as it
//! always does; once per monitor interval the agent's action multiplies Cubic's congestion
//! window, and Cubic goes on from the window it was given.

use crate::error::{invalid, RateError};
use serde::{Deserialize, Serialize};

/// Largest `max_exponent` a rule may set: a factor of 2^8 a decision.
pub const MAX_WINDOW_EXPONENT: f64 = 8.0;

/// The window a decision leaves is Cubic's window times
/// `2^clamp(delta_scale * a, -max_exponent, max_exponent)`. Orca's agent outputs
/// `a` in [-1, 1] and sets `cwnd = 4^a cwnd_tcp` (its released agent's `map_action`), which is
/// `delta_scale = 2`, `max_exponent = 2` here; this framework's Gaussian actions are not
/// bounded, so the clamp bounds them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowScale {
    /// Largest base-2 exponent of a decision's factor, in (0, [`MAX_WINDOW_EXPONENT`]]
    /// (Orca: 2, a factor of 1/4 to 4).
    #[serde(default = "default_max_exponent")]
    pub max_exponent: f64,
}

fn default_max_exponent() -> f64 {
    2.0
}

impl Default for WindowScale {
    fn default() -> Self {
        Self {
            max_exponent: default_max_exponent(),
        }
    }
}

impl WindowScale {
    /// Checks the parameters; errors name the field under `window_scale`.
    pub(crate) fn validate(&self) -> Result<(), RateError> {
        if !(self.max_exponent > 0.0 && self.max_exponent <= MAX_WINDOW_EXPONENT) {
            return invalid(
                "window_scale.max_exponent",
                format!(
                    "must lie in (0, {MAX_WINDOW_EXPONENT}] (got {})",
                    self.max_exponent
                ),
            );
        }
        Ok(())
    }

    /// The factor action `action` multiplies the window by, with the rule's `delta_scale`; a
    /// NaN action keeps the window (factor 1).
    pub fn factor(&self, delta_scale: f64, action: f64) -> f64 {
        let exponent = delta_scale * action;
        if exponent.is_nan() {
            return 1.0;
        }
        exponent.clamp(-self.max_exponent, self.max_exponent).exp2()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orca_mapping_by_hand() {
        let orca = WindowScale::default();
        // Orca: 4^a for a in [-1, 1] is delta_scale 2.
        assert_eq!(orca.factor(2.0, 1.0), 4.0);
        assert_eq!(orca.factor(2.0, -1.0), 0.25);
        assert_eq!(orca.factor(2.0, 0.0), 1.0);
        assert!((orca.factor(2.0, 0.5) - 2.0).abs() < 1e-15);
        // Unbounded actions are clamped to the exponent's range.
        assert_eq!(orca.factor(2.0, 7.0), 4.0);
        assert_eq!(orca.factor(2.0, -7.0), 0.25);
        assert_eq!(orca.factor(2.0, f64::NAN), 1.0);
        let narrow = WindowScale { max_exponent: 0.5 };
        assert!((narrow.factor(1.0, 3.0) - 2f64.sqrt()).abs() < 1e-15);
    }

    #[test]
    fn exponents_out_of_range_are_named() {
        for bad in [0.0, -1.0, 9.0, f64::NAN] {
            let e = WindowScale { max_exponent: bad }.validate().unwrap_err();
            assert!(e.to_string().contains("window_scale.max_exponent"), "{e}");
        }
        assert!(WindowScale::default().validate().is_ok());
    }
}
