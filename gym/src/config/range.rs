//! Scalar parameters of a scenario: a fixed value or a range sampled per episode (uniform, or
//! Aurora's exponential queue range), as YAML writes them.

use crate::error::ScenarioError;
use crate::limits::fmt_number;
use serde::{Deserialize, Serialize};

/// A scalar parameter: a fixed value or a uniform range sampled per episode.
/// In YAML: a number, or `{min: A, max: B}`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Range {
    /// The same value every episode.
    Fixed(f64),
    /// `U(min, max)` per episode.
    Uniform(UniformRange),
}

/// Bounds of a uniform range.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UniformRange {
    /// Lower bound.
    pub min: f64,
    /// Upper bound (>= min).
    pub max: f64,
}

impl Range {
    /// `U(min, max)`.
    pub const fn uniform(min: f64, max: f64) -> Self {
        Range::Uniform(UniformRange { min, max })
    }

    /// Smallest value the range can produce.
    pub fn min(&self) -> f64 {
        match self {
            Range::Fixed(v) => *v,
            Range::Uniform(u) => u.min,
        }
    }

    /// Largest value the range can produce.
    pub fn max(&self) -> f64 {
        match self {
            Range::Fixed(v) => *v,
            Range::Uniform(u) => u.max,
        }
    }

    /// Checks the range lies in `[lo, hi]` (with `lo_open`: strictly above `lo`) and min <= max.
    pub(super) fn check(
        &self,
        field: &str,
        lo: f64,
        lo_open: bool,
        hi: f64,
    ) -> Result<(), ScenarioError> {
        let bound = |which: &str, v: f64| -> Result<(), ScenarioError> {
            let name = match self {
                Range::Fixed(_) => field.to_string(),
                Range::Uniform(_) => format!("{field}.{which}"),
            };
            let below = if lo_open { v <= lo } else { v < lo };
            if !v.is_finite() || below || v > hi {
                let interval = if lo_open { "(" } else { "[" };
                return Err(ScenarioError::invalid(
                    name,
                    format!(
                        "must lie in {interval}{}, {}] (got {})",
                        fmt_number(lo),
                        fmt_number(hi),
                        fmt_number(v)
                    ),
                ));
            }
            Ok(())
        };
        bound("min", self.min())?;
        bound("max", self.max())?;
        if self.min() > self.max() {
            return Err(ScenarioError::invalid(
                format!("{field}.min"),
                format!("min {} is greater than max {}", self.min(), self.max()),
            ));
        }
        Ok(())
    }
}

/// Queue capacity in packets. In YAML: a number, `{min: A, max: B}` or
/// `{exp_min: A, exp_max: B}`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(untagged)]
pub enum QueueRange {
    /// The same capacity every episode.
    Fixed(f64),
    /// `floor(U(min, max))` packets.
    Uniform(UniformRange),
    /// Aurora: `1 + floor(exp(U(exp_min, exp_max)))` packets.
    AuroraExp(AuroraExpRange),
}

/// Exponent bounds of Aurora's queue sampling.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuroraExpRange {
    /// Lower bound of the exponent.
    pub exp_min: f64,
    /// Upper bound of the exponent (>= exp_min).
    pub exp_max: f64,
}

/// Reads a number or a map whose keys must come from `keys`; the error of an unknown key names
/// it and lists the expected ones (untagged enums would only say "no variant matched").
struct NumberOrMap {
    keys: &'static [&'static str],
    expecting: &'static str,
}

enum NumberOrMapValue {
    Number(f64),
    Map([Option<f64>; 2], usize),
}

impl<'de> serde::de::Visitor<'de> for NumberOrMap {
    type Value = NumberOrMapValue;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.expecting)
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(NumberOrMapValue::Number(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(NumberOrMapValue::Number(v as f64))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(NumberOrMapValue::Number(v as f64))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        // keys come in pairs: [lo, hi] of one form; `form` is the pair index (0 or 1).
        let mut values = [None, None];
        let mut form = None;
        while let Some(key) = map.next_key::<String>()? {
            let Some(pos) = self.keys.iter().position(|k| *k == key) else {
                return Err(serde::de::Error::unknown_field(&key, self.keys));
            };
            let (pair, slot) = (pos / 2, pos % 2);
            if form.is_some_and(|f| f != pair) {
                return Err(serde::de::Error::custom(format!(
                    "`{key}` cannot be combined with `{}`",
                    self.keys[form.unwrap_or(0) * 2]
                )));
            }
            form = Some(pair);
            if values[slot].is_some() {
                return Err(serde::de::Error::duplicate_field(self.keys[pos]));
            }
            values[slot] = Some(map.next_value::<f64>()?);
        }
        let pair = form.unwrap_or(0);
        for (slot, v) in values.iter().enumerate() {
            if v.is_none() {
                return Err(serde::de::Error::missing_field(self.keys[pair * 2 + slot]));
            }
        }
        Ok(NumberOrMapValue::Map(values, pair))
    }
}

impl<'de> Deserialize<'de> for Range {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = d.deserialize_any(NumberOrMap {
            keys: &["min", "max"],
            expecting: "a number or {min: A, max: B}",
        })?;
        Ok(match v {
            NumberOrMapValue::Number(x) => Range::Fixed(x),
            NumberOrMapValue::Map([min, max], _) => Range::Uniform(UniformRange {
                min: min.unwrap_or_default(),
                max: max.unwrap_or_default(),
            }),
        })
    }
}

impl<'de> Deserialize<'de> for QueueRange {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = d.deserialize_any(NumberOrMap {
            keys: &["min", "max", "exp_min", "exp_max"],
            expecting: "a number, {min: A, max: B} or {exp_min: A, exp_max: B}",
        })?;
        Ok(match v {
            NumberOrMapValue::Number(x) => QueueRange::Fixed(x),
            NumberOrMapValue::Map([lo, hi], 0) => QueueRange::Uniform(UniformRange {
                min: lo.unwrap_or_default(),
                max: hi.unwrap_or_default(),
            }),
            NumberOrMapValue::Map([lo, hi], _) => QueueRange::AuroraExp(AuroraExpRange {
                exp_min: lo.unwrap_or_default(),
                exp_max: hi.unwrap_or_default(),
            }),
        })
    }
}

pub(super) fn one_range() -> Range {
    Range::Fixed(1.0)
}
pub(super) fn zero_range() -> Range {
    Range::Fixed(0.0)
}
pub(super) fn is_zero_range(r: &Range) -> bool {
    *r == Range::Fixed(0.0)
}
pub(super) fn one() -> f64 {
    1.0
}
pub(super) fn is_one(p: &f64) -> bool {
    *p == 1.0
}
pub(super) fn is_zero(v: &f64) -> bool {
    *v == 0.0
}
