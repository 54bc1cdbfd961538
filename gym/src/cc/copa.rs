//! Copa (Arun and Balakrishnan, NSDI 2018), default mode with delta = 0.5: the target rate is
//! `1 / (delta * d_q)` where the queueing delay `d_q = RTT_standing - RTT_min` (the standing
//! RTT is the minimum over the last srtt/2, RTT_min the minimum over 10 s); the window moves
//! towards it by `v / (delta * cwnd)` per ack, the velocity `v` doubling after three round
//! trips in the same direction and resetting to 1 when the direction changes.

use super::{Ack, Loss, Srtt, INITIAL_CWND, INITIAL_PACING_PPS, MIN_CWND};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Copa's delta (default mode).
pub const DELTA: f64 = 0.5;
/// Window of the RTT_min filter (s).
pub const MIN_RTT_WINDOW_S: f64 = 10.0;

/// Copa's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Copa {
    cwnd: f64,
    velocity: f64,
    direction: i8,
    same_direction_rounds: u32,
    round_start_cwnd: f64,
    round_end_delivered: u64,
    slow_start: bool,
    srtt: Srtt,
    /// (time, rtt) samples of the last 10 s, oldest first.
    samples: VecDeque<(f64, f64)>,
    standing_rtt_s: f64,
}

impl Default for Copa {
    fn default() -> Self {
        Self {
            cwnd: INITIAL_CWND,
            velocity: 1.0,
            direction: 0,
            same_direction_rounds: 0,
            round_start_cwnd: INITIAL_CWND,
            round_end_delivered: 0,
            slow_start: true,
            srtt: Srtt::default(),
            samples: VecDeque::new(),
            standing_rtt_s: f64::INFINITY,
        }
    }
}

/// Copa's target rate (packets/s) for a queueing delay; infinite without queueing.
pub fn target_rate_pps(queueing_delay_s: f64) -> f64 {
    if queueing_delay_s > 0.0 {
        1.0 / (DELTA * queueing_delay_s)
    } else {
        f64::INFINITY
    }
}

impl Copa {
    /// Congestion window (packets).
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    /// Pacing rate: `2 cwnd / RTT_standing` packets/s.
    pub fn pacing_pps(&self) -> f64 {
        if self.standing_rtt_s.is_finite() && self.standing_rtt_s > 0.0 {
            2.0 * self.cwnd / self.standing_rtt_s
        } else {
            INITIAL_PACING_PPS
        }
    }

    /// One acknowledged packet.
    pub fn on_ack(&mut self, ack: &Ack) {
        self.srtt.update(ack.rtt_s);
        let now = ack.now_s;
        self.samples.push_back((now, ack.rtt_s));
        while self
            .samples
            .front()
            .is_some_and(|&(t, _)| t < now - MIN_RTT_WINDOW_S)
        {
            self.samples.pop_front();
        }
        let srtt = self.srtt.get().unwrap_or(ack.rtt_s);
        let min_rtt = self
            .samples
            .iter()
            .map(|s| s.1)
            .fold(f64::INFINITY, f64::min);
        self.standing_rtt_s = self
            .samples
            .iter()
            .rev()
            .take_while(|&&(t, _)| t >= now - srtt / 2.0)
            .map(|s| s.1)
            .fold(ack.rtt_s, f64::min);
        let target = target_rate_pps(self.standing_rtt_s - min_rtt);
        let current = self.cwnd / self.standing_rtt_s;
        if self.slow_start {
            if current > target {
                self.slow_start = false;
            } else {
                self.cwnd += 1.0;
            }
        } else {
            let step = self.velocity / (DELTA * self.cwnd);
            if current <= target {
                self.cwnd += step;
            } else {
                self.cwnd = (self.cwnd - step).max(MIN_CWND);
            }
        }
        if ack.delivered >= self.round_end_delivered {
            self.end_round(ack);
        }
    }

    /// Velocity bookkeeping once per round trip.
    fn end_round(&mut self, ack: &Ack) {
        let direction = if self.cwnd > self.round_start_cwnd {
            1
        } else if self.cwnd < self.round_start_cwnd {
            -1
        } else {
            0
        };
        if direction != 0 && direction == self.direction {
            self.same_direction_rounds += 1;
            if self.same_direction_rounds >= 3 {
                self.velocity = (self.velocity * 2.0).min(self.cwnd.max(1.0));
            }
        } else {
            self.velocity = 1.0;
            self.same_direction_rounds = 0;
        }
        self.direction = direction;
        self.round_start_cwnd = self.cwnd;
        self.round_end_delivered = ack.delivered + ack.inflight as u64;
    }

    /// Copa's default mode does not react to individual losses.
    pub fn on_loss(&mut self, _loss: &Loss) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_rate_hand_values() {
        // 20 ms of queueing: 1 / (0.5 * 0.02) = 100 packets/s.
        assert!((target_rate_pps(0.02) - 100.0).abs() < 1e-9);
        assert!(target_rate_pps(0.0).is_infinite());
    }

    #[test]
    fn window_shrinks_when_above_target_and_grows_below() {
        let mut c = Copa {
            slow_start: false,
            cwnd: 50.0,
            ..Copa::default()
        };
        let ack = |now: f64, rtt: f64, delivered: u64| Ack {
            now_s: now,
            rtt_s: rtt,
            sent_s: now - rtt,
            delivered,
            delivered_at_send: 0,
            delivered_time_at_send_s: 0.0,
            inflight: 40,
        };
        // Base RTT 100 ms seen, then 150 ms standing: d_q = 50 ms, target 40 pkt/s, current
        // 50 / 0.15 = 333 pkt/s: the window shrinks.
        c.on_ack(&ack(0.0, 0.1, 1));
        let before = c.cwnd();
        c.on_ack(&ack(1.0, 0.15, 2));
        assert!(c.cwnd() < before, "{} vs {before}", c.cwnd());
        // No queueing: target infinite, the window grows.
        let before = c.cwnd();
        c.on_ack(&ack(2.0, 0.1, 3));
        assert!(c.cwnd() > before);
    }
}
