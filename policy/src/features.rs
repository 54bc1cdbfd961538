//! Aurora's monitor-interval metrics, selectable by name.
//!
//! Definitions and guards follow PCC-RL's `sender_obs.py`: every metric of an empty interval is
//! finite, `latency ratio` divides by the latency baseline ([`crate::baseline`]: the
//! connection's minimum MI latency, or a windowed one), and an observation value is the metric
//! divided by the metric's scale.

use crate::baseline::{read_peak_ratio, PathEstimate};
use crate::mi::{MetricsVersion, MonitorInterval};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// One observation feature, named as in Aurora (`peak delivery ratio`, `recent min ratio` and
/// `standing latency ratio` are ours).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Feature {
    /// `send rate`: bits/s sent, scaled by 1e-7.
    SendRate,
    /// `recv rate`: bits/s acknowledged, scaled by 1e-7.
    RecvRate,
    /// `send dur`: seconds.
    SendDur,
    /// `recv dur`: seconds.
    RecvDur,
    /// `avg latency`: mean RTT of the MI, seconds.
    AvgLatency,
    /// `loss ratio`: lost / (lost + acked).
    LossRatio,
    /// `latency increase`: second-half mean RTT minus first-half mean RTT, seconds.
    LatencyIncrease,
    /// `ack latency inflation`: latency increase / recv dur.
    AckLatencyInflation,
    /// `sent latency inflation`: latency increase / send dur.
    SentLatencyInflation,
    /// `conn min latency`: the latency baseline, seconds.
    ConnMinLatency,
    /// `latency ratio`: avg latency / baseline.
    LatencyRatio,
    /// `send ratio`: send rate / recv rate (1 when undefined or above 1000).
    SendRatio,
    /// `peak delivery ratio` (not in Aurora): send rate / the highest delivery rate of the last
    /// `seconds` of a windowed baseline, or of the connection for `connection_min` (1 before
    /// any delivery). Below 1 a sender has room the path
    /// recently gave; at the floor after a fall it reads far below 1, where every Aurora
    /// feature reads as at a path's capacity.
    PeakDeliveryRatio,
    /// `recent min ratio` (not in Aurora): the lowest MI mean latency of the last 5 s
    /// ([`crate::baseline::RECENT_LATENCY_WINDOW_S`]) over the latency baseline (1 before any
    /// RTT sample). Near 1 when a queue drained within the window (flows that yield to delay
    /// empty theirs in a base-RTT probe), above 1 when one stood through it (a loss-based
    /// competitor's, or a base-RTT step the baseline has not taken), below 1 when the baseline
    /// rose within it (a restart, or a windowed baseline shorter than 5 s).
    RecentMinRatio,
    /// `standing latency ratio` (not in Aurora): the lowest MI mean latency of the last 5 s over
    /// the connection's lowest (1 before any RTT sample), whatever the baseline. Near 1 where
    /// the queue drains within 5 s (a lone flow that backs off or probes, or flows that yield
    /// to delay and probe together); above 1 where a queue stands through it that the
    /// sender's own back-off and probes do not drain, as a loss-based competitor's (akin to
    /// Copa's test for its competitive mode: 5 s here, 5 RTTs in Copa), or after a base-RTT
    /// increase.
    StandingLatencyRatio,
}

/// Errors naming a feature list entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FeatureError {
    /// A name that is not one of Aurora's metrics.
    #[error("unknown feature {name:?}; known features: {known}")]
    Unknown { name: String, known: String },
    /// The same feature twice.
    #[error("feature {0:?} is listed twice")]
    Duplicate(String),
    /// No feature at all.
    #[error("the feature list is empty")]
    Empty,
}

impl Feature {
    /// Every feature, in a fixed order.
    pub const ALL: [Feature; 15] = [
        Feature::SendRate,
        Feature::RecvRate,
        Feature::SendDur,
        Feature::RecvDur,
        Feature::AvgLatency,
        Feature::LossRatio,
        Feature::LatencyIncrease,
        Feature::AckLatencyInflation,
        Feature::SentLatencyInflation,
        Feature::ConnMinLatency,
        Feature::LatencyRatio,
        Feature::SendRatio,
        Feature::PeakDeliveryRatio,
        Feature::RecentMinRatio,
        Feature::StandingLatencyRatio,
    ];

    /// Aurora's name of the feature.
    pub fn name(self) -> &'static str {
        match self {
            Feature::SendRate => "send rate",
            Feature::RecvRate => "recv rate",
            Feature::SendDur => "send dur",
            Feature::RecvDur => "recv dur",
            Feature::AvgLatency => "avg latency",
            Feature::LossRatio => "loss ratio",
            Feature::LatencyIncrease => "latency increase",
            Feature::AckLatencyInflation => "ack latency inflation",
            Feature::SentLatencyInflation => "sent latency inflation",
            Feature::ConnMinLatency => "conn min latency",
            Feature::LatencyRatio => "latency ratio",
            Feature::SendRatio => "send ratio",
            Feature::PeakDeliveryRatio => "peak delivery ratio",
            Feature::RecentMinRatio => "recent min ratio",
            Feature::StandingLatencyRatio => "standing latency ratio",
        }
    }

    /// Divisor applied to the metric to form the observation value (Aurora's `scale`).
    pub fn scale(self) -> f64 {
        match self {
            Feature::SendRate | Feature::RecvRate => 1e7,
            _ => 1.0,
        }
    }

    /// The unscaled metric of `mi`, given the path estimate in force after `mi`.
    pub fn value(self, mi: &MonitorInterval, path: &PathEstimate, version: MetricsVersion) -> f64 {
        let baseline_s = path.baseline_s;
        match self {
            Feature::SendRate => mi.send_rate_bps(),
            Feature::RecvRate => version.recv_rate_bps(mi),
            Feature::SendDur => mi.send_dur_s(),
            Feature::RecvDur => mi.recv_dur_s(),
            Feature::AvgLatency => mi.avg_latency_s(),
            Feature::LossRatio => mi.loss_ratio(),
            Feature::LatencyIncrease => mi.rtt.latency_increase_s(),
            Feature::AckLatencyInflation => {
                per_second(mi.rtt.latency_increase_s(), mi.recv_dur_s())
            }
            Feature::SentLatencyInflation => {
                per_second(mi.rtt.latency_increase_s(), mi.send_dur_s())
            }
            Feature::ConnMinLatency => baseline_s,
            Feature::LatencyRatio => {
                if baseline_s > 0.0 {
                    mi.avg_latency_s() / baseline_s
                } else {
                    1.0
                }
            }
            Feature::SendRatio => {
                let thr = version.recv_rate_bps(mi);
                let send = mi.send_rate_bps();
                if thr > 0.0 && send < 1000.0 * thr {
                    send / thr
                } else {
                    1.0
                }
            }
            Feature::PeakDeliveryRatio => {
                if path.peak_delivery_pps > 0.0 {
                    read_peak_ratio(
                        mi.send_rate_pps() / path.peak_delivery_pps,
                        path.peak_ratio_exponent,
                    )
                } else {
                    1.0
                }
            }
            Feature::RecentMinRatio => {
                if path.recent_min_latency_s > 0.0 && baseline_s > 0.0 {
                    path.recent_min_latency_s / baseline_s
                } else {
                    1.0
                }
            }
            Feature::StandingLatencyRatio => {
                if path.recent_min_latency_s > 0.0 && path.lowest_latency_s > 0.0 {
                    path.recent_min_latency_s / path.lowest_latency_s
                } else {
                    1.0
                }
            }
        }
    }
}

fn per_second(x: f64, dur: f64) -> f64 {
    if dur > 0.0 {
        x / dur
    } else {
        0.0
    }
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Feature {
    type Err = FeatureError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim();
        Feature::ALL
            .into_iter()
            .find(|f| f.name() == wanted)
            .ok_or_else(|| FeatureError::Unknown {
                name: s.to_string(),
                known: Feature::ALL.map(Feature::name).join(", "),
            })
    }
}

/// An ordered, duplicate-free list of features: one observation row per MI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureSet {
    features: Vec<Feature>,
}

impl FeatureSet {
    /// Aurora's default input: `sent latency inflation, latency ratio, send ratio`.
    pub fn aurora() -> Self {
        Self {
            features: vec![
                Feature::SentLatencyInflation,
                Feature::LatencyRatio,
                Feature::SendRatio,
            ],
        }
    }

    /// Builds a set from features, refusing duplicates and emptiness.
    pub fn new(features: Vec<Feature>) -> Result<Self, FeatureError> {
        if features.is_empty() {
            return Err(FeatureError::Empty);
        }
        for (i, f) in features.iter().enumerate() {
            if features[..i].contains(f) {
                return Err(FeatureError::Duplicate(f.name().to_string()));
            }
        }
        Ok(Self { features })
    }

    /// Whether a feature reads the recent minimum latency ([`Feature::RecentMinRatio`],
    /// [`Feature::StandingLatencyRatio`]), which the latency baseline then keeps.
    pub fn reads_recent_latency(&self) -> bool {
        self.features
            .iter()
            .any(|f| matches!(f, Feature::RecentMinRatio | Feature::StandingLatencyRatio))
    }

    /// Parses Aurora names.
    pub fn from_names<S: AsRef<str>>(names: &[S]) -> Result<Self, FeatureError> {
        let features = names
            .iter()
            .map(|n| n.as_ref().parse())
            .collect::<Result<Vec<_>, _>>()?;
        Self::new(features)
    }

    /// Number of features per MI.
    pub fn len(&self) -> usize {
        self.features.len()
    }

    /// Always false: a set holds at least one feature.
    pub fn is_empty(&self) -> bool {
        self.features.is_empty()
    }

    /// The features in order.
    pub fn features(&self) -> &[Feature] {
        &self.features
    }

    /// Names in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.features.iter().map(|f| f.name()).collect()
    }

    /// Writes the scaled observation row of `mi` into `out` (length `len()`).
    pub fn write_row(
        &self,
        mi: &MonitorInterval,
        path: &PathEstimate,
        version: MetricsVersion,
        out: &mut [f32],
    ) {
        for (slot, f) in out.iter_mut().zip(&self.features) {
            *slot = (f.value(mi, path, version) / f.scale()) as f32;
        }
    }
}

impl Serialize for FeatureSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.features.iter().map(|f| f.name()))
    }
}

impl<'de> Deserialize<'de> for FeatureSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let names = Vec::<String>::deserialize(d)?;
        FeatureSet::from_names(&names).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mi::test_interval as mi;

    /// A path estimate with the given baseline and no delivery yet.
    fn at(baseline_s: f64) -> PathEstimate {
        PathEstimate {
            baseline_s,
            peak_delivery_pps: 0.0,
            recent_min_latency_s: 0.0,
            lowest_latency_s: 0.0,
            peak_ratio_exponent: 1.0,
        }
    }

    #[test]
    fn names_round_trip_and_unknown_is_listed() {
        for f in Feature::ALL {
            assert_eq!(f.name().parse::<Feature>(), Ok(f));
        }
        let err = "latency rati".parse::<Feature>().unwrap_err();
        assert!(err.to_string().contains("latency ratio"), "{err}");
        assert!(matches!(
            FeatureSet::from_names(&["send ratio", "send ratio"]),
            Err(FeatureError::Duplicate(_))
        ));
    }

    const A: MetricsVersion = MetricsVersion::Aurora;
    const D: MetricsVersion = MetricsVersion::Delivered;

    #[test]
    fn empty_interval_matches_both_versions_guards() {
        let empty = MonitorInterval::default();
        let set = FeatureSet::aurora();
        let mut row = [9.0f32; 3];
        // Aurora: baseline 0 -> latency ratio 1.
        set.write_row(&empty, &at(A.empty_baseline_s()), A, &mut row);
        assert_eq!(row, [0.0, 1.0, 1.0]);
        // Delivered: baseline 1e4 -> latency ratio 0 / 1e4 = 0.
        set.write_row(&empty, &at(D.empty_baseline_s()), D, &mut row);
        assert_eq!(row, [0.0, 0.0, 1.0]);
    }

    #[test]
    fn aurora_recv_rate_counts_one_packet_less() {
        // 0.5 s, 5 packets acked: Aurora counts 4 -> 8 pkt/s; delivered 10 pkt/s.
        let m = mi(0.0, 0.5, 10.0, 5.0, &[0.1]);
        assert_eq!(A.throughput_pps(&m), 8.0);
        assert_eq!(D.throughput_pps(&m), 10.0);
        // Nothing acked: Aurora's value is negative, and send ratio falls back to 1.
        let none = mi(0.0, 0.5, 3.0, 0.0, &[]);
        assert_eq!(A.throughput_pps(&none), -2.0);
        assert_eq!(Feature::SendRatio.value(&none, &at(0.1), A), 1.0);
    }

    #[test]
    fn hand_computed_features() {
        // 0.5 s MI, 10 sent, 5 acked, RTTs 0.1,0.1,0.2,0.2 -> increase 0.1, inflation 0.2/s.
        let m = mi(0.0, 0.5, 10.0, 5.0, &[0.1, 0.1, 0.2, 0.2]);
        let eps = 1e-12;
        assert!((Feature::SentLatencyInflation.value(&m, &at(0.1), A) - 0.2).abs() < eps);
        assert!((Feature::LatencyRatio.value(&m, &at(0.1), A) - 1.5).abs() < eps);
        // Aurora: 10 sent / 4 counted as received; delivered: 10 / 5.
        assert!((Feature::SendRatio.value(&m, &at(0.1), A) - 2.5).abs() < eps);
        assert!((Feature::SendRatio.value(&m, &at(0.1), D) - 2.0).abs() < eps);
        assert_eq!(
            Feature::SendRate.value(&m, &at(0.1), A),
            8.0 * 10.0 * 1500.0 / 0.5
        );
        let mut row = [0.0f32; 1];
        FeatureSet::new(vec![Feature::SendRate])
            .unwrap()
            .write_row(&m, &at(0.1), A, &mut row);
        assert_eq!(row[0], (240_000.0 / 1e7) as f32);
        // send ratio guard: nothing acked -> 1.
        let none = mi(0.0, 0.5, 3.0, 0.0, &[]);
        assert_eq!(Feature::SendRatio.value(&none, &at(0.1), D), 1.0);
    }

    #[test]
    fn peak_delivery_ratio_by_hand() {
        // 0.5 s MI, 10 sent: 20 pkt/s against a peak of 80 pkt/s -> 0.25.
        let m = mi(0.0, 0.5, 10.0, 5.0, &[0.1]);
        let path = PathEstimate {
            baseline_s: 0.1,
            peak_delivery_pps: 80.0,
            recent_min_latency_s: 0.0,
            lowest_latency_s: 0.0,
            peak_ratio_exponent: 1.0,
        };
        let f = Feature::PeakDeliveryRatio;
        assert!((f.value(&m, &path, A) - 0.25).abs() < 1e-12);
        // Read on the trains' exponent 0.5: the square root, 0.5.
        let compressed = PathEstimate {
            peak_ratio_exponent: 0.5,
            ..path
        };
        assert!((f.value(&m, &compressed, A) - 0.5).abs() < 1e-12);
        // No delivery yet: 1, as send ratio without acknowledgements.
        assert_eq!(f.value(&m, &at(0.1), A), 1.0);
        assert_eq!("peak delivery ratio".parse::<Feature>(), Ok(f));
    }

    #[test]
    fn recent_min_ratio_by_hand() {
        let f = Feature::RecentMinRatio;
        let m = mi(0.0, 0.5, 10.0, 5.0, &[0.15]);
        // The lowest latency of the last 5 s is 60 ms over a 40 ms baseline: 1.5.
        let path = PathEstimate {
            recent_min_latency_s: 0.06,
            ..at(0.04)
        };
        assert!((f.value(&m, &path, D) - 1.5).abs() < 1e-12);
        // Before any RTT sample, or without a baseline: 1.
        assert_eq!(f.value(&m, &at(0.04), D), 1.0);
        let no_baseline = PathEstimate {
            recent_min_latency_s: 0.06,
            ..at(0.0)
        };
        assert_eq!(f.value(&m, &no_baseline, A), 1.0);
        assert_eq!("recent min ratio".parse::<Feature>(), Ok(f));
    }

    #[test]
    fn standing_latency_ratio_by_hand() {
        let f = Feature::StandingLatencyRatio;
        let m = mi(0.0, 0.5, 10.0, 5.0, &[0.15]);
        // The lowest latency of the last 5 s is 140 ms; the connection's lowest 40 ms: 3.5,
        // whatever the baseline (here one that followed the queue up to 120 ms).
        let path = PathEstimate {
            recent_min_latency_s: 0.14,
            lowest_latency_s: 0.04,
            ..at(0.12)
        };
        assert!((f.value(&m, &path, D) - 3.5).abs() < 1e-12);
        // Before any RTT sample: 1.
        assert_eq!(f.value(&m, &at(0.04), D), 1.0);
        assert_eq!("standing latency ratio".parse::<Feature>(), Ok(f));
        let reads = FeatureSet::new(vec![Feature::LatencyRatio, f]).unwrap();
        assert!(reads.reads_recent_latency());
    }
}
