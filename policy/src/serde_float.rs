//! Snapshot fields that may hold an infinite `f64` (JSON has no infinity): `+inf` is written as
//! `null` and `-inf` as the string `"-inf"`; finite values are plain numbers, so snapshots
//! without infinities are unchanged.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Deserialize)]
#[serde(untagged)]
enum Stored {
    Number(f64),
    Text(String),
}

/// Serializes a possibly infinite `f64`.
pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if *v == f64::NEG_INFINITY {
        "-inf".serialize(s)
    } else {
        v.is_finite().then_some(*v).serialize(s)
    }
}

/// Reads what [`serialize`] wrote.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    match Option::<Stored>::deserialize(d)? {
        None => Ok(f64::INFINITY),
        Some(Stored::Number(v)) => Ok(v),
        Some(Stored::Text(t)) if t == "-inf" => Ok(f64::NEG_INFINITY),
        Some(Stored::Text(t)) if t == "inf" => Ok(f64::INFINITY),
        Some(Stored::Text(t)) => Err(serde::de::Error::custom(format!(
            "expected a number, null (infinity) or \"-inf\", got {t:?}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct T {
        #[serde(with = "super")]
        x: f64,
    }

    #[test]
    fn infinities_round_trip_and_finite_values_stay_numbers() {
        for x in [1.5, 0.0, -2.0, f64::INFINITY, f64::NEG_INFINITY] {
            let text = serde_json::to_string(&T { x }).unwrap();
            let back: T = serde_json::from_str(&text).unwrap();
            assert_eq!(back.x, x, "{text}");
        }
        assert_eq!(
            serde_json::to_string(&T { x: 1.5 }).unwrap(),
            r#"{"x":1.5}"#
        );
        assert!(serde_json::from_str::<T>(r#"{"x":"nan"}"#).is_err());
    }
}
