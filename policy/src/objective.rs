//! The objective an application gives a multi-objective policy: the weights of throughput,
//! latency and loss, positive and summing to 1. One owner for its rules: validation, parsing
//! from `a,b,c`, and equality within rounding.

use crate::actor::OBJECTIVE_DIM;

/// Weights of (throughput, latency, loss).
pub type Objective = [f64; OBJECTIVE_DIM];

/// An objective that is not three positive weights summing to 1.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("objective: {0}")]
pub struct ObjectiveError(pub String);

/// Checks an objective: three positive finite weights summing to 1 within 1e-6.
pub fn validate(w: &Objective) -> Result<(), String> {
    if w.iter().any(|x| !x.is_finite() || *x <= 0.0) {
        return Err(format!("weights must be positive (got {w:?})"));
    }
    let sum: f64 = w.iter().sum();
    if (sum - 1.0).abs() > 1e-6 {
        return Err(format!("weights must sum to 1 (got {w:?}, sum {sum})"));
    }
    Ok(())
}

/// [`validate`] with the message prefixed by the field it came from: `field: message`.
pub fn validate_field(field: &str, w: &Objective) -> Result<(), String> {
    validate(w).map_err(|m| format!("{field}: {m}"))
}

/// Parses `a,b,c` (throughput, latency, loss) into an objective and validates it.
pub fn parse(s: &str) -> Result<Objective, String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let [a, b, c] = parts.as_slice() else {
        return Err(format!(
            "expected three comma-separated weights (throughput, latency, loss), got {s:?}"
        ));
    };
    let num = |x: &str| {
        x.parse::<f64>()
            .map_err(|_| format!("not a number: {x:?} in {s:?}"))
    };
    let w = [num(a)?, num(b)?, num(c)?];
    validate(&w)?;
    Ok(w)
}

/// Equal within 1e-9 per weight.
pub fn same(a: &Objective, b: &Objective) -> bool {
    a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_objectives_are_positive_and_sum_to_one() {
        assert!(validate(&[0.5, 0.3, 0.2]).is_ok());
        assert!(validate(&[0.5, 0.5, 0.0]).unwrap_err().contains("positive"));
        assert!(validate(&[0.5, 0.5, 0.5]).unwrap_err().contains("sum to 1"));
        assert!(validate(&[f64::NAN, 0.5, 0.5]).is_err());
        let e = validate_field("adapt.pool[2]", &[1.0, 1.0, 1.0]).unwrap_err();
        assert!(e.starts_with("adapt.pool[2]: "), "{e}");
    }

    #[test]
    fn parsing_reads_three_weights_and_validates_them() {
        assert_eq!(parse(" 0.6, 0.3 ,0.1").unwrap(), [0.6, 0.3, 0.1]);
        assert!(parse("0.6,0.4").unwrap_err().contains("three"));
        assert!(parse("0.6,x,0.1").unwrap_err().contains("not a number"));
        assert!(parse("0.6,0.6,0.1").unwrap_err().contains("sum to 1"));
    }

    #[test]
    fn sameness_tolerates_rounding_only() {
        assert!(same(&[0.2, 0.3, 0.5], &[0.2 + 1e-12, 0.3, 0.5 - 1e-12]));
        assert!(!same(&[0.2, 0.3, 0.5], &[0.21, 0.29, 0.5]));
    }
}
