//! mocc-policy: the deployable half of mocc.
//!
//! Everything a sender needs to turn raw monitor-interval (MI) counts into the next sending rate
//! lives here, so that the simulator used for training (`mocc-gym`) and a deployed controller run
//! the very same code: MI statistics ([`MonitorInterval`]), Aurora's metrics by name
//! ([`Feature`]), the latency-ratio baseline ([`LatencyBaseline`]), the observation history
//! ([`ObservationBuilder`]) and the rate-update rule ([`RateRule`]).
//!
//! This crate never depends on libtorch.

pub mod features;
pub mod history;
pub mod mi;
pub mod rate;

pub use features::{
    BaselineMode, Feature, FeatureError, FeatureSet, LatencyBaseline, MetricsVersion,
    NO_BASELINE_LATENCY_S,
};
pub use history::ObservationBuilder;
pub use mi::{MonitorInterval, RttSummary, BYTES_PER_PACKET};
pub use rate::{RateError, RateRule};
