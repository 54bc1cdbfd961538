//! The observation a policy sees: the feature rows of the last `eta` MIs, oldest first.

use crate::features::{BaselineMode, FeatureSet, LatencyBaseline, MetricsVersion};
use crate::mi::MonitorInterval;
use serde::{Deserialize, Serialize};

/// Turns a stream of MIs into observations: keeps the latency baseline and the history.
///
/// A new connection's history holds `eta` empty MIs (Aurora's `SenderHistory`), whose rows are
/// the features of an empty interval under the empty baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObservationBuilder {
    features: FeatureSet,
    version: MetricsVersion,
    history_len: usize,
    baseline: LatencyBaseline,
    rows: Vec<f32>,
}

impl ObservationBuilder {
    /// A builder for `history_len` (>= 1) MIs of `features`.
    pub fn new(
        features: FeatureSet,
        history_len: usize,
        mode: BaselineMode,
        version: MetricsVersion,
    ) -> Self {
        let history_len = history_len.max(1);
        let mut builder = Self {
            rows: vec![0.0; history_len * features.len()],
            features,
            version,
            history_len,
            baseline: LatencyBaseline::new(mode, version),
        };
        builder.reset();
        builder
    }

    /// Starts a new connection: empty baseline, history of empty MIs.
    pub fn reset(&mut self) {
        self.baseline.reset();
        let k = self.features.len();
        let baseline = self.baseline.current();
        let empty = MonitorInterval::default();
        for row in self.rows.chunks_exact_mut(k) {
            self.features.write_row(&empty, baseline, self.version, row);
        }
    }

    /// Length of one observation (`history_len * features`).
    pub fn obs_len(&self) -> usize {
        self.rows.len()
    }

    /// Number of MIs in the history.
    pub fn history_len(&self) -> usize {
        self.history_len
    }

    /// The feature set.
    pub fn features(&self) -> &FeatureSet {
        &self.features
    }

    /// The baseline in force (s).
    pub fn baseline_s(&self) -> f64 {
        self.baseline.current()
    }

    /// Folds a finished MI in: updates the baseline, drops the oldest row, appends the new one.
    pub fn record(&mut self, mi: &MonitorInterval) {
        let baseline = self.baseline.observe(mi);
        let k = self.features.len();
        self.rows.copy_within(k.., 0);
        let n = self.rows.len();
        self.features
            .write_row(mi, baseline, self.version, &mut self.rows[n - k..]);
    }

    /// The newest row (the features of the last recorded MI).
    pub fn last_row(&self) -> &[f32] {
        &self.rows[self.rows.len() - self.features.len()..]
    }

    /// The whole observation, oldest MI first.
    pub fn observation(&self) -> &[f32] {
        &self.rows
    }

    /// Copies the observation into `out` (length `obs_len()`).
    pub fn write_observation(&self, out: &mut [f32]) {
        out.copy_from_slice(&self.rows);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::Feature;
    use crate::mi::{RttSummary, BYTES_PER_PACKET};

    #[test]
    fn history_shifts_oldest_first() {
        let set = FeatureSet::new(vec![Feature::AvgLatency, Feature::SendRatio]).unwrap();
        let mut b = ObservationBuilder::new(
            set,
            3,
            BaselineMode::ConnectionMin,
            MetricsVersion::Delivered,
        );
        assert_eq!(b.observation(), &[0.0, 1.0, 0.0, 1.0, 0.0, 1.0]);
        for (i, rtt) in [0.1, 0.2].into_iter().enumerate() {
            let mi = MonitorInterval {
                bytes_sent: 4.0 * BYTES_PER_PACKET,
                bytes_acked: 2.0 * BYTES_PER_PACKET,
                send_start_s: i as f64,
                send_end_s: i as f64 + 1.0,
                recv_start_s: i as f64,
                recv_end_s: i as f64 + 1.0,
                rtt: RttSummary::from_samples(&[rtt]),
                ..Default::default()
            };
            b.record(&mi);
        }
        assert_eq!(b.observation(), &[0.0, 1.0, 0.1, 2.0, 0.2, 2.0]);
        assert_eq!(b.last_row(), &[0.2, 2.0]);
        b.reset();
        assert_eq!(b.observation(), &[0.0, 1.0, 0.0, 1.0, 0.0, 1.0]);
    }
}
