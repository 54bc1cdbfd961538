//! The one judge of a queue: whether an MI saw its path without one. The mode switch asks it
//! against the connection's lowest latency (warm-up MIs included, never rising: Copa's switch
//! must not follow a competitor's queue), base-RTT probes against the latency baseline (the
//! one the `latency ratio` feature divides by). The two references differ by design; the test
//! is one.

/// Whether an MI whose mean latency is `latency_s` (0 without RTT samples) saw its path
/// without a queue: a sampled latency at most `ratio` times `reference_s`.
pub fn queue_free(latency_s: f64, reference_s: f64, ratio: f64) -> bool {
    latency_s > 0.0 && latency_s <= ratio * reference_s
}

#[cfg(test)]
mod tests {
    use super::queue_free;

    #[test]
    fn a_sampled_latency_within_the_ratio_of_the_reference_sees_the_path() {
        assert!(queue_free(0.044, 0.04, 1.1));
        assert!(!queue_free(0.0441, 0.04, 1.1));
        // No samples: no judgement of the path.
        assert!(!queue_free(0.0, 0.04, 1.1));
        assert!(!queue_free(f64::NAN, 0.04, 1.1));
    }
}
