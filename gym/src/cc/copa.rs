//! Copa (Arun and Balakrishnan, NSDI 2018), default mode with delta = 0.5: the target rate is
//! `1 / (delta * d_q)` where the queueing delay `d_q = RTT_standing - RTT_min` (the standing
//! RTT is the minimum over the last srtt/2, RTT_min the minimum over 10 s); the window moves
//! towards it by `v / (delta * cwnd)` per ack, the velocity `v` doubling after three round
//! trips in the same direction and resetting to 1 when the direction changes.

use super::{Ack, Loss, Srtt, INITIAL_CWND, INITIAL_PACING_PPS, MIN_CWND};
use mocc_policy::monotone_window::MinWindow;
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
    /// The same window's minimum, kept incrementally (rebuilt from `samples` when a snapshot
    /// written before it existed is restored).
    #[serde(default)]
    min_filter: MinWindow,
    #[serde(with = "crate::serde_float")]
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
            min_filter: MinWindow::default(),
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
        if self.min_filter.is_empty() {
            for &(t, rtt) in &self.samples {
                self.min_filter.push(t, rtt);
            }
        }
        self.samples.push_back((now, ack.rtt_s));
        self.min_filter.push(now, ack.rtt_s);
        let horizon = now - MIN_RTT_WINDOW_S;
        while self.samples.front().is_some_and(|&(t, _)| t < horizon) {
            self.samples.pop_front();
        }
        self.min_filter.expire(now, MIN_RTT_WINDOW_S);
        let srtt = self.srtt.get().unwrap_or(ack.rtt_s);
        let min_rtt = self.min_filter.extreme().unwrap_or(f64::INFINITY);
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

    /// An ack at `now` for a packet with round trip `rtt`.
    fn ack_with(now: f64, rtt: f64, delivered: u64, inflight: usize) -> Ack {
        Ack {
            now_s: now,
            rtt_s: rtt,
            sent_s: now - rtt,
            delivered,
            delivered_at_send: 0,
            delivered_time_at_send_s: 0.0,
            inflight,
        }
    }

    #[test]
    fn the_min_filter_matches_a_scan_of_the_window() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let mut filter = MinWindow::default();
        let mut all: Vec<(f64, f64)> = Vec::new();
        let mut t = 0.0;
        for _ in 0..5000 {
            t += rng.random_range(0.0..0.05);
            // Repeated values exercise the ties.
            let rtt = (rng.random_range(0.0..20.0f64)).floor() * 0.01 + 0.05;
            all.push((t, rtt));
            filter.push(t, rtt);
            filter.expire(t, 2.0);
            let scan = all
                .iter()
                .filter(|s| s.0 >= t - 2.0)
                .map(|s| s.1)
                .fold(f64::INFINITY, f64::min);
            assert_eq!(filter.extreme(), Some(scan), "at t = {t}");
        }
        assert!(MinWindow::default().extreme().is_none());
    }

    #[test]
    fn a_restored_snapshot_without_the_filter_rebuilds_it() {
        let ack = |now, rtt, delivered| ack_with(now, rtt, delivered, 10);
        let mut a = Copa::default();
        for i in 0..50 {
            a.on_ack(&ack(
                f64::from(i) * 0.01,
                0.1 + 0.001 * f64::from(i % 7),
                i as u64,
            ));
        }
        let mut b = a.clone();
        b.min_filter = MinWindow::default();
        for i in 50..80 {
            let k = ack(
                f64::from(i) * 0.01,
                0.12 - 0.0005 * f64::from(i % 5),
                i as u64,
            );
            a.on_ack(&k);
            b.on_ack(&k);
        }
        assert_eq!(a, b);
    }

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
        let ack = |now, rtt, delivered| ack_with(now, rtt, delivered, 40);
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
