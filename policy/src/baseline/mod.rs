//! The latency baseline that `latency ratio` divides by (Aurora's `conn min latency`).
//!
//! Aurora takes the minimum MI latency of the whole connection. A windowed minimum follows a
//! base-RTT increase after its window. The drain-aware minimum also follows it as soon as the
//! sender has shown that no queue of its own is left: an MI sent well below the delivery rate
//! the path recently gave, whose RTT stayed flat while its own queue would have drained,
//! measures the path as it is now.

mod capacity;
mod drain;
mod kind;
#[cfg(test)]
mod tests;
mod tracker;

pub use capacity::{
    read_peak_ratio, CapacityTrains, CapacityWindow, MAX_TRAIN_PACKETS, MAX_TRAIN_SAMPLES,
};
pub use drain::{
    is_drained, DrainReference, DRAINED_MAX_LOSS, FLAT_RTT_FLOOR_S, FLAT_RTT_FRACTION,
};
pub use kind::{BaselineKind, MAX_DRAIN_FRACTION, MAX_WINDOW_S};
pub use tracker::{LatencyBaseline, PathEstimate, RECENT_LATENCY_WINDOW_S};
