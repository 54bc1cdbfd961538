//! What sets a controlled flow's rate: a learned policy ([`PolicyDriver`], the deployed
//! `mocc_policy::Controller`), a constant rate, or any [`RateDriver`]: a rule that maps finished
//! monitor intervals to the next rate.

use mocc_policy::MonitorInterval;
pub use mocc_policy::{PolicyDriver, RateDriver};

/// A constant rate, its MIs sized like an Aurora agent's (half the last mean RTT, a few
/// one-way delays before the first sample), so its statistics are comparable.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConstantRate {
    rate_pps: f64,
    mi_s: f64,
}

impl ConstantRate {
    /// MIs last this many mean RTTs once sampled.
    pub const RTT_FACTOR: f64 = 0.5;
    /// MIs before the first RTT sample last this many one-way delays.
    pub const INITIAL_DELAY_FACTOR: f64 = 3.0;

    /// Paces at `rate_pps`.
    pub fn new(rate_pps: f64) -> Self {
        Self {
            rate_pps,
            mi_s: 0.0,
        }
    }
}

impl RateDriver for ConstantRate {
    fn start(&mut self, one_way_delay_s: f64) -> f64 {
        self.mi_s = Self::INITIAL_DELAY_FACTOR * one_way_delay_s;
        self.rate_pps
    }

    fn mi_duration_s(&self) -> f64 {
        mocc_policy::mi::floored_mi_duration_s(self.mi_s, 0.0, self.rate_pps)
    }

    fn on_mi(&mut self, mi: &MonitorInterval) -> f64 {
        if mi.rtt.mean_s > 0.0 {
            self.mi_s = Self::RTT_FACTOR * mi.rtt.mean_s;
        }
        self.rate_pps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_constant_rate_sizes_its_mis_from_the_delay_then_the_rtt() {
        let mut c = ConstantRate::new(300.0);
        assert_eq!(c.start(0.02), 300.0);
        assert!((c.mi_duration_s() - 0.06).abs() < 1e-12);
        let mi = MonitorInterval {
            rtt: mocc_policy::RttSummary::from_samples(&[0.05, 0.07]),
            ..MonitorInterval::default()
        };
        assert_eq!(c.on_mi(&mi), 300.0);
        assert!((c.mi_duration_s() - 0.03).abs() < 1e-12);
    }
}
