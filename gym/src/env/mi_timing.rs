//! How long a learned sender's MIs last before the clock has RTT samples, and the host's MI
//! jitter.

use rand::Rng;

/// A sender's one-way delay as its MI clock first estimates it: the link's plus half its own
/// access path's round trip.
pub(super) fn one_way_estimate(link_delay_s: f64, extra_rtt_s: f64) -> f64 {
    if extra_rtt_s > 0.0 {
        link_delay_s + 0.5 * extra_rtt_s
    } else {
        link_delay_s
    }
}

/// An MI length with the host's timing jitter: `d * U(1 - j, 1 + j)` (no draw when `j` is 0).
pub(super) fn jittered<R: Rng>(d: f64, j: f64, rng: &mut R) -> f64 {
    if j > 0.0 {
        d * rng.random_range(1.0 - j..=1.0 + j)
    } else {
        d
    }
}
