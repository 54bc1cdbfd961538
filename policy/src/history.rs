//! The observation a policy sees: the feature rows of the last `eta` MIs, oldest first.

use crate::baseline::{BaselineKind, CapacityTrains, LatencyBaseline};
use crate::features::FeatureSet;
use crate::mi::MetricsVersion;
use crate::mi::MonitorInterval;
use serde::{Deserialize, Serialize};

/// What the agent observes: Aurora metrics per MI, how many MIs, and the latency-ratio baseline.
///
/// The one type for it: a gym scenario's `observation:` and an export's `policy.json` (beside
/// the metric version and the normalization statistics) both hold it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObservationConfig {
    /// Aurora metric names, per MI (default: sent latency inflation, latency ratio, send ratio).
    #[serde(default = "FeatureSet::aurora")]
    pub features: FeatureSet,
    /// Number of MIs in the observation, oldest first (eta; Aurora: 10).
    #[serde(default = "default_history_len")]
    pub history_len: usize,
    /// Baseline of `latency ratio`: `connection_min` (Aurora), `{windowed_min: {seconds: S}}` or
    /// `{drain_aware: {seconds: S, drain_fraction: F}}`.
    #[serde(default)]
    pub latency_baseline: BaselineKind,
    /// Packet trains at each MI's start, whose rate lifts `peak delivery ratio`'s reference to
    /// a share of the bottleneck's rate ([`CapacityTrains`]); none: the flow's own peak.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_trains: Option<CapacityTrains>,
}

fn default_history_len() -> usize {
    10
}

impl Default for ObservationConfig {
    fn default() -> Self {
        Self {
            features: FeatureSet::aurora(),
            history_len: default_history_len(),
            latency_baseline: BaselineKind::ConnectionMin,
            capacity_trains: None,
        }
    }
}

/// Most MIs an observation may hold.
pub const MAX_HISTORY_LEN: usize = 4096;

impl ObservationConfig {
    /// Length of one observation (`history_len x features`).
    pub fn obs_len(&self) -> usize {
        self.history_len * self.features.len()
    }

    /// A fresh history for one connection, with metrics as `version` defines them.
    pub fn builder(&self, version: MetricsVersion) -> ObservationBuilder {
        ObservationBuilder::new(
            self.features.clone(),
            self.history_len,
            self.latency_baseline,
            version,
        )
        .with_capacity_trains(self.capacity_trains)
    }

    /// Packets the sender sends back to back at each MI's start (1: none).
    pub fn train_packets(&self) -> u32 {
        self.capacity_trains.map_or(1, |t| t.packets)
    }

    /// Checks every value; the error is (field, message), the field relative to this section.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if !(1..=MAX_HISTORY_LEN).contains(&self.history_len) {
            return Err((
                "history_len",
                format!(
                    "must lie in [1, {MAX_HISTORY_LEN}] (got {})",
                    self.history_len
                ),
            ));
        }
        self.latency_baseline.validate()?;
        self.capacity_trains
            .as_ref()
            .map_or(Ok(()), CapacityTrains::validate)
    }
}

/// Turns a stream of MIs into observations: keeps the latency baseline and the history.
///
/// A new connection's history holds `eta` empty MIs (Aurora's `SenderHistory`), whose rows are
/// the features of an empty interval under the empty baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "SavedBuilder")]
pub struct ObservationBuilder {
    features: FeatureSet,
    version: MetricsVersion,
    history_len: usize,
    baseline: LatencyBaseline,
    rows: Vec<f32>,
}

/// An [`ObservationBuilder`] as saved, before [`ObservationBuilder::baseline_for`] holds its
/// baseline to what its features read.
#[derive(Deserialize)]
struct SavedBuilder {
    features: FeatureSet,
    version: MetricsVersion,
    history_len: usize,
    baseline: LatencyBaseline,
    rows: Vec<f32>,
}

impl From<SavedBuilder> for ObservationBuilder {
    fn from(saved: SavedBuilder) -> Self {
        Self {
            baseline: Self::baseline_for(&saved.features, saved.baseline),
            features: saved.features,
            version: saved.version,
            history_len: saved.history_len,
            rows: saved.rows,
        }
    }
}

impl ObservationBuilder {
    /// A builder for `history_len` (>= 1) MIs of `features`.
    pub fn new(
        features: FeatureSet,
        history_len: usize,
        mode: BaselineKind,
        version: MetricsVersion,
    ) -> Self {
        let history_len = history_len.max(1);
        let baseline = Self::baseline_for(&features, LatencyBaseline::new(mode, version));
        let mut builder = Self {
            rows: vec![0.0; history_len * features.len()],
            features,
            version,
            history_len,
            baseline,
        };
        builder.reset();
        builder
    }

    /// `baseline`, keeping what `features` read (the recent minimum and the connection's lowest
    /// latency of `recent min ratio` and `standing latency ratio`).
    fn baseline_for(features: &FeatureSet, baseline: LatencyBaseline) -> LatencyBaseline {
        if features.reads_recent_latency() {
            baseline.tracking_recent()
        } else {
            baseline
        }
    }

    /// The same builder, its baseline's peak lifted by `trains`
    /// ([`LatencyBaseline::with_capacity`]).
    pub fn with_capacity_trains(mut self, trains: Option<CapacityTrains>) -> Self {
        self.baseline = self.baseline.with_capacity(trains);
        self
    }

    /// Starts a new connection: empty baseline, history of empty MIs.
    pub fn reset(&mut self) {
        self.baseline.reset();
        let k = self.features.len();
        let path = self.baseline.estimate();
        let empty = MonitorInterval::default();
        for row in self.rows.chunks_exact_mut(k) {
            self.features.write_row(&empty, &path, self.version, row);
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
        self.record_with(mi, true);
    }

    /// [`ObservationBuilder::record`], where the MI may restart a drain-aware baseline only
    /// when `may_restart`.
    pub fn record_with(&mut self, mi: &MonitorInterval, may_restart: bool) {
        let path = self.baseline.observe_with(mi, may_restart);
        let k = self.features.len();
        self.rows.copy_within(k.., 0);
        let n = self.rows.len();
        self.features
            .write_row(mi, &path, self.version, &mut self.rows[n - k..]);
    }

    /// Restarts the latency baseline: the next MI with RTT samples and the ones after set it
    /// (base-RTT probes that take their baseline from the probe).
    pub fn restart_baseline(&mut self) {
        self.baseline.restart();
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
            BaselineKind::ConnectionMin,
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

    /// A builder reading `recent min ratio` keeps the recent window through a save and load,
    /// and one loaded without it (hand-written JSON) keeps one from then on; a builder that
    /// does not read it saves none.
    #[test]
    fn the_recent_window_survives_a_save_and_is_kept_when_a_save_lacks_it() {
        let mi = |end: f64, rtt: f64| crate::mi::test_interval(end - 1.0, end, 10.0, 10.0, &[rtt]);
        let reads = FeatureSet::new(vec![Feature::RecentMinRatio]).unwrap();
        let mut b = ObservationBuilder::new(
            reads,
            1,
            BaselineKind::ConnectionMin,
            MetricsVersion::Delivered,
        );
        // 40 ms, then 80 ms for 6 s: the 40 ms sample leaves the window, the baseline keeps it.
        b.record(&mi(1.0, 0.04));
        for end in 2..=7 {
            b.record(&mi(f64::from(end), 0.08));
        }
        assert_eq!(b.last_row(), &[2.0]);
        let saved = serde_json::to_value(&b).unwrap();
        assert_eq!(
            saved["baseline"]["recent"],
            serde_json::json!([[7.0, 0.08]])
        );
        let loaded: ObservationBuilder = serde_json::from_value(saved.clone()).unwrap();
        assert_eq!(loaded, b);
        // Without the window in the save: kept again from the next MI on.
        let mut lacking = saved;
        lacking["baseline"]
            .as_object_mut()
            .unwrap()
            .remove("recent");
        let mut loaded: ObservationBuilder = serde_json::from_value(lacking).unwrap();
        loaded.record(&mi(8.0, 0.1));
        assert_eq!(loaded.last_row(), &[2.5]);
        // A builder without the feature saves no window.
        let plain = ObservationBuilder::new(
            FeatureSet::aurora(),
            1,
            BaselineKind::ConnectionMin,
            MetricsVersion::Delivered,
        );
        let saved = serde_json::to_value(&plain).unwrap();
        assert!(saved["baseline"].get("recent").is_none(), "{saved}");
    }
}
