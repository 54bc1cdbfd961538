//! LeoCC (Lai et al., 2025): BBR v1 made aware of LEO reconfigurations. Starlink reconfigures
//! its satellite-to-ground paths on a global schedule (every 15 s); a companion process tells
//! the sender when. On each reconfiguration the sender lowers its rate for a moment (half its
//! rate until the new path's samples come back), forgets its bandwidth and RTT model (the new
//! path shares neither with the old one), and re-enters Startup with a window of half its
//! current BDP, so it finds the new path's rate in a few round trips instead of the several
//! ProbeBW cycles BBR v1 needs after a step up, or the ten seconds its RTT filter holds an
//! old, lower base RTT. Median filters of five samples in front of the bandwidth and RTT
//! model smooth the noisy samples a LEO path gives.
//!
//! In the gym the companion's signal comes from the path description: every scheduled step
//! of the link and every start of a handover outage is a reconfiguration (`PathHints`).

use super::bbr::Bbr;
use super::{Ack, Loss, PathHints};
use serde::{Deserialize, Serialize};

/// Samples of each median filter.
pub const MEDIAN_OF: usize = 5;
/// The window after a reconfiguration, in BDPs of the model before it.
pub const RESTART_CWND_BDPS: f64 = 0.5;
/// The rate until the new path's samples come back, as a share of the rate before.
pub const RESTART_RATE_FACTOR: f64 = 0.5;

/// LeoCC's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeoCc {
    bbr: Bbr,
    /// The last reconfiguration acted on (s).
    seen_reconfiguration_s: Option<f64>,
    /// Reconfigurations acted on.
    restarts: u64,
}

impl Default for LeoCc {
    fn default() -> Self {
        Self {
            bbr: Bbr::with_median_filters(MEDIAN_OF),
            seen_reconfiguration_s: None,
            restarts: 0,
        }
    }
}

impl LeoCc {
    /// The BBR state underneath.
    pub fn bbr(&self) -> &Bbr {
        &self.bbr
    }

    /// Reconfigurations it restarted on.
    pub fn restarts(&self) -> u64 {
        self.restarts
    }

    /// Congestion window (packets).
    pub fn cwnd(&self) -> f64 {
        self.bbr.cwnd()
    }

    /// Pacing rate (packets/s).
    pub fn pacing_pps(&self) -> f64 {
        self.bbr.pacing_pps()
    }

    /// The companion's news: a reconfiguration not seen before restarts the model. The first
    /// one the flow hears of counts only if it came after the flow started sending (`now_s`
    /// within one RTT of it); one from before the flow's start is history.
    pub fn on_path_hints(&mut self, hints: &PathHints) {
        let Some(at) = hints.last_reconfiguration_s else {
            return;
        };
        match self.seen_reconfiguration_s {
            Some(seen) if at <= seen => {}
            None if self.bbr.rt_prop_s().is_infinite() => {
                // Nothing learned yet: the reconfiguration happened before this flow's model.
                self.seen_reconfiguration_s = Some(at);
            }
            _ => {
                self.seen_reconfiguration_s = Some(at);
                self.restarts += 1;
                self.bbr
                    .restart_after_reconfiguration(RESTART_CWND_BDPS, RESTART_RATE_FACTOR);
            }
        }
    }

    /// One acknowledged packet.
    pub fn on_ack(&mut self, ack: &Ack) {
        self.bbr.on_ack(ack);
    }

    /// One lost packet (BBR v1 ignores losses).
    pub fn on_loss(&mut self, loss: &Loss) {
        self.bbr.on_loss(loss);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(now_s: f64, delivered: u64) -> Ack {
        Ack {
            now_s,
            rtt_s: 0.05,
            sent_s: now_s - 0.05,
            delivered,
            delivered_at_send: delivered.saturating_sub(5),
            delivered_time_at_send_s: now_s - 0.05,
            inflight: 5,
        }
    }

    #[test]
    fn a_reconfiguration_restarts_startup_with_half_the_bdp() {
        let mut l = LeoCc::default();
        let hints = |at: f64| PathHints {
            last_reconfiguration_s: Some(at),
            sent_in_handover: false,
        };
        // A reconfiguration before the flow learned anything is history.
        l.on_path_hints(&hints(0.5));
        assert_eq!(l.restarts(), 0);
        for i in 1..=400u64 {
            l.on_ack(&ack(1.0 + i as f64 * 0.01, i));
        }
        let bdp = l.bbr().bdp();
        assert!(bdp > 5.0, "{bdp}");
        let rate = l.pacing_pps();
        l.on_path_hints(&hints(4.9));
        assert_eq!(l.restarts(), 1);
        assert_eq!(l.bbr().mode(), crate::cc::bbr::Mode::Startup);
        assert!(
            (l.cwnd() - (0.5 * bdp).max(4.0)).abs() < 1e-9,
            "{}",
            l.cwnd()
        );
        assert!((l.pacing_pps() - 0.5 * rate).abs() < 1e-9);
        assert!(l.bbr().rt_prop_s().is_infinite());
        // The same news again changes nothing.
        l.on_path_hints(&hints(4.9));
        assert_eq!(l.restarts(), 1);
    }
}
