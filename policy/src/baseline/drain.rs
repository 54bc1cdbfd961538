//! Whether an MI was drained ([`is_drained`]): sent well below the peak delivery rate, with
//! little loss and a flat RTT, so that its latency is the path's base RTT now.

use crate::mi::MonitorInterval;

/// RTT change, as a fraction of the latency baseline in force, below which the RTT counts as
/// flat: within an MI (second half against first half) and against the MI before.
pub const FLAT_RTT_FRACTION: f64 = 0.02;

/// Absolute RTT change (s) that always counts as flat: host jitter of up to a millisecond moves
/// the half means by a fraction of that.
pub const FLAT_RTT_FLOOR_S: f64 = 0.0005;

/// Highest loss ratio of a drained MI: a sender overflowing a full drop-tail queue sees a flat
/// RTT too, but loses packets.
pub const DRAINED_MAX_LOSS: f64 = 0.05;

/// What [`is_drained`] compares an MI against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DrainReference {
    /// The latency baseline in force before the MI (s).
    pub baseline_s: f64,
    /// Mean latency of the sender's previous MI with RTT samples (s).
    pub previous_latency_s: f64,
    /// The window's highest delivery rate (packets/s).
    pub peak_delivery_pps: f64,
}

/// Whether `mi` was drained: sent at no more than `drain_fraction` of the peak delivery rate,
/// with at most [`DRAINED_MAX_LOSS`] lost, and an RTT that stayed flat (within
/// [`FLAT_RTT_FRACTION`] of the baseline, or [`FLAT_RTT_FLOOR_S`]) within the MI and against the
/// MI before. A queue of the sender's own packets drains while it sends below the delivery
/// rate, so its RTT falls: by `(1 - rate / capacity)` of the MI's length per MI. A tolerance
/// taken from the baseline rather than from the (queue-inflated) RTT keeps a slow drain from
/// passing. A sender within about 2% of a capacity that dropped below half the peak still
/// cannot tell its standing queue from a base-RTT step; only a deeper back-off drains it.
pub fn is_drained(mi: &MonitorInterval, r: &DrainReference, drain_fraction: f64) -> bool {
    let latency = mi.avg_latency_s();
    if mi.rtt.count < 2 || latency <= 0.0 || r.peak_delivery_pps <= 0.0 || r.baseline_s <= 0.0 {
        return false;
    }
    let tolerance = (FLAT_RTT_FRACTION * r.baseline_s).max(FLAT_RTT_FLOOR_S);
    mi.send_rate_pps() <= drain_fraction * r.peak_delivery_pps
        && mi.loss_ratio() <= DRAINED_MAX_LOSS
        && mi.rtt.latency_increase_s().abs() <= tolerance
        && (latency - r.previous_latency_s).abs() <= tolerance
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mi::test_interval as mi;

    #[test]
    fn drained_needs_a_peak_a_baseline_and_two_samples() {
        let flat = mi(0.0, 1.0, 10.0, 10.0, &[0.0100, 0.0100, 0.0104, 0.0104]);
        let reference = DrainReference {
            baseline_s: 0.01,
            previous_latency_s: 0.0102,
            peak_delivery_pps: 100.0,
        };
        // Within the 0.5 ms floor: flat.
        assert!(is_drained(&flat, &reference, 0.5));
        let no_peak = DrainReference {
            peak_delivery_pps: 0.0,
            ..reference
        };
        assert!(!is_drained(&flat, &no_peak, 0.5));
        let no_baseline = DrainReference {
            baseline_s: 0.0,
            ..reference
        };
        assert!(!is_drained(&flat, &no_baseline, 0.5));
        let one_sample = mi(0.0, 1.0, 10.0, 10.0, &[0.01]);
        assert!(!is_drained(&one_sample, &reference, 0.5));
        // 10 pkt/s is above a twentieth of the 100 pkt/s peak.
        assert!(!is_drained(&flat, &reference, 0.05));
    }
}
