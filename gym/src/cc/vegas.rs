//! TCP Vegas (Brakmo and Peterson, 1995): once per round trip, compare the expected rate
//! `cwnd / base_rtt` with the actual `cwnd / rtt`; their difference in packets queued,
//! `diff = cwnd (rtt - base_rtt) / rtt`, is kept between alpha = 2 and beta = 4.

use super::{window_pacing, Ack, Loss, Srtt, INITIAL_CWND, MIN_CWND};
use serde::{Deserialize, Serialize};

/// Lower bound of queued packets.
pub const ALPHA: f64 = 2.0;
/// Upper bound of queued packets.
pub const BETA: f64 = 4.0;
/// Slow start ends once this many packets queue.
pub const GAMMA: f64 = 1.0;

/// Vegas's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Vegas {
    cwnd: f64,
    slow_start: bool,
    #[serde(with = "crate::serde_float")]
    base_rtt_s: f64,
    #[serde(with = "crate::serde_float")]
    round_min_rtt_s: f64,
    round_end_delivered: u64,
    srtt: Srtt,
    #[serde(with = "crate::serde_float")]
    recovery_start_s: f64,
}

impl Default for Vegas {
    fn default() -> Self {
        Self {
            cwnd: INITIAL_CWND,
            slow_start: true,
            base_rtt_s: f64::INFINITY,
            round_min_rtt_s: f64::INFINITY,
            round_end_delivered: 0,
            srtt: Srtt::default(),
            recovery_start_s: f64::NEG_INFINITY,
        }
    }
}

/// Vegas's `diff`: packets of this window sitting in queues.
pub fn queued_packets(cwnd: f64, base_rtt_s: f64, rtt_s: f64) -> f64 {
    cwnd * (rtt_s - base_rtt_s) / rtt_s
}

impl Vegas {
    /// Congestion window (packets).
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    /// Pacing rate (packets/s).
    pub fn pacing_pps(&self) -> f64 {
        window_pacing(
            self.cwnd,
            self.srtt,
            if self.slow_start { 2.0 } else { 1.2 },
        )
    }

    /// One acknowledged packet.
    pub fn on_ack(&mut self, ack: &Ack) {
        self.srtt.update(ack.rtt_s);
        self.base_rtt_s = self.base_rtt_s.min(ack.rtt_s);
        self.round_min_rtt_s = self.round_min_rtt_s.min(ack.rtt_s);
        if self.slow_start {
            self.cwnd += 1.0;
        }
        if ack.delivered < self.round_end_delivered {
            return;
        }
        // A round trip ended: adjust once, on its smallest RTT.
        let diff = queued_packets(self.cwnd, self.base_rtt_s, self.round_min_rtt_s);
        if self.slow_start {
            if diff > GAMMA {
                self.slow_start = false;
                self.cwnd =
                    (self.cwnd * self.base_rtt_s / self.round_min_rtt_s + 1.0).max(MIN_CWND);
            }
        } else if diff < ALPHA {
            self.cwnd += 1.0;
        } else if diff > BETA {
            self.cwnd = (self.cwnd - 1.0).max(MIN_CWND);
        }
        self.round_end_delivered = ack.delivered + ack.inflight as u64;
        self.round_min_rtt_s = f64::INFINITY;
    }

    /// One lost packet: Reno's halving, once per window.
    pub fn on_loss(&mut self, loss: &Loss) {
        if loss.sent_s <= self.recovery_start_s {
            return;
        }
        self.recovery_start_s = loss.now_s;
        self.slow_start = false;
        self.cwnd = (self.cwnd / 2.0).max(MIN_CWND);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_diff_and_adjustments() {
        // 20 packets, base 100 ms, measured 125 ms: 20 * 25 / 125 = 4 queued.
        assert!((queued_packets(20.0, 0.1, 0.125) - 4.0).abs() < 1e-12);
        let mut v = Vegas {
            slow_start: false,
            cwnd: 20.0,
            base_rtt_s: 0.1,
            ..Vegas::default()
        };
        let ack = |rtt: f64, delivered: u64| Ack {
            now_s: 1.0,
            rtt_s: rtt,
            sent_s: 1.0 - rtt,
            delivered,
            delivered_at_send: 0,
            delivered_time_at_send_s: 0.0,
            inflight: 20,
        };
        // diff = 20 * 0.05 / 0.15 = 6.67 > beta: shrink by one.
        v.on_ack(&ack(0.15, 1));
        assert_eq!(v.cwnd(), 19.0);
        // Within the round (delivered < 21) nothing changes.
        v.on_ack(&ack(0.101, 5));
        assert_eq!(v.cwnd(), 19.0);
        // Next round: diff = 19 * 0.001 / 0.101 < alpha: grow by one.
        v.on_ack(&ack(0.101, 21));
        assert_eq!(v.cwnd(), 20.0);
        v.on_loss(&Loss {
            now_s: 2.0,
            sent_s: 1.9,
            inflight: 10,
        });
        assert_eq!(v.cwnd(), 10.0);
    }
}
