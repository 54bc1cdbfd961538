//! The checks every scenario value passes; each error names the field.

use crate::error::ScenarioError;

/// Checks an objective vector: three positive finite weights summing to 1 within 1e-6.
pub fn validate_objective(field: &str, w: &[f64; 3]) -> Result<(), ScenarioError> {
    mocc_policy::objective::validate(w).map_err(|m| ScenarioError::invalid(field, m))
}

pub(super) fn positive(field: &str, v: f64) -> Result<(), ScenarioError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(ScenarioError::invalid(
            field,
            format!("must be > 0 (got {v})"),
        ))
    }
}

pub(super) fn non_negative(field: &str, v: f64) -> Result<(), ScenarioError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(ScenarioError::invalid(
            field,
            format!("must be >= 0 (got {v})"),
        ))
    }
}

pub(super) fn probability(field: &str, v: f64) -> Result<(), ScenarioError> {
    if (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(ScenarioError::invalid(
            field,
            format!("must lie in [0, 1] (got {v})"),
        ))
    }
}
