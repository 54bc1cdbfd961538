//! BBR v1 (Cardwell et al., 2016): a model of the path from a windowed maximum of delivery-rate
//! samples (BtlBw, 10 round trips) and a windowed minimum of RTTs (RTprop, 10 s); states
//! Startup (gain 2/ln 2), Drain, ProbeBW (pacing-gain cycle 5/4, 3/4, then six of 1) and
//! ProbeRTT (cwnd 4 for 200 ms when RTprop was not refreshed for 10 s). Pacing rate =
//! gain x BtlBw; cwnd = cwnd_gain x BtlBw x RTprop.

use super::{Ack, Loss, INITIAL_CWND, INITIAL_PACING_PPS};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Startup's gain, 2 / ln 2.
pub const HIGH_GAIN: f64 = 2.885_390_081_777_927;
/// ProbeBW's pacing-gain cycle.
pub const GAIN_CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// Round trips of the BtlBw max filter.
pub const BTLBW_ROUNDS: u64 = 10;
/// Seconds of the RTprop min filter.
pub const RTPROP_WINDOW_S: f64 = 10.0;
/// Time spent in ProbeRTT (s).
pub const PROBE_RTT_S: f64 = 0.2;
/// Window in ProbeRTT (packets).
pub const MIN_PIPE_CWND: f64 = 4.0;

/// BBR's state machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mode {
    /// Exponential search for the bottleneck rate.
    Startup,
    /// Drains the queue Startup built.
    Drain,
    /// Cruising with periodic probes.
    ProbeBw,
    /// Drains the pipe to refresh RTprop.
    ProbeRtt,
}

/// BBR's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bbr {
    mode: Mode,
    /// (round, delivery rate) samples of the last `BTLBW_ROUNDS` rounds.
    bw_samples: VecDeque<(u64, f64)>,
    btl_bw_pps: f64,
    #[serde(with = "crate::serde_float")]
    rt_prop_s: f64,
    rt_prop_stamp_s: f64,
    round: u64,
    next_round_delivered: u64,
    full_bw_pps: f64,
    full_bw_rounds: u32,
    filled_pipe: bool,
    cycle_index: usize,
    cycle_stamp_s: f64,
    probe_rtt_done_s: Option<f64>,
    prior_cwnd: f64,
    cwnd: f64,
    /// Pacing rate (packets/s); 0 before the first RTT sample.
    #[serde(default)]
    pacing_pps: f64,
    /// Samples of each median filter in front of the model (0: none; LeoCC's extra filters).
    #[serde(default, skip_serializing_if = "is_zero")]
    median_of: usize,
    /// The last raw delivery-rate and RTT samples, for the median filters.
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    recent_rates: VecDeque<f64>,
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    recent_rtts: VecDeque<f64>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Pushes `x` into a window of at most `n` samples and returns their median.
fn median_filtered(window: &mut VecDeque<f64>, n: usize, x: f64) -> f64 {
    window.push_back(x);
    while window.len() > n {
        window.pop_front();
    }
    let mut sorted: Vec<f64> = window.iter().copied().collect();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

impl Default for Bbr {
    fn default() -> Self {
        Self {
            mode: Mode::Startup,
            bw_samples: VecDeque::new(),
            btl_bw_pps: 0.0,
            rt_prop_s: f64::INFINITY,
            rt_prop_stamp_s: 0.0,
            round: 0,
            next_round_delivered: 0,
            full_bw_pps: 0.0,
            full_bw_rounds: 0,
            filled_pipe: false,
            cycle_index: 0,
            cycle_stamp_s: 0.0,
            probe_rtt_done_s: None,
            prior_cwnd: INITIAL_CWND,
            cwnd: INITIAL_CWND,
            pacing_pps: 0.0,
            median_of: 0,
            recent_rates: VecDeque::new(),
            recent_rtts: VecDeque::new(),
        }
    }
}

impl Bbr {
    /// BBR whose delivery-rate and RTT samples pass a median filter of `n` samples before
    /// the model sees them (LeoCC's smoothing of noisy LEO samples).
    pub fn with_median_filters(n: usize) -> Self {
        Self {
            median_of: n,
            ..Self::default()
        }
    }

    /// Starts over after a path reconfiguration (LeoCC): forgets the bandwidth and RTT model
    /// and re-enters Startup with a window of `cwnd_bdps` of the current BDP, pacing at
    /// `rate_factor` of the current rate until the new path's samples come back.
    pub fn restart_after_reconfiguration(&mut self, cwnd_bdps: f64, rate_factor: f64) {
        let cwnd = (cwnd_bdps * self.bdp()).max(MIN_PIPE_CWND);
        let pacing = rate_factor * self.pacing_pps();
        *self = Self {
            cwnd,
            prior_cwnd: cwnd,
            pacing_pps: pacing,
            round: self.round,
            next_round_delivered: self.next_round_delivered,
            ..Self::with_median_filters(self.median_of)
        };
    }

    /// The state.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The bottleneck-bandwidth estimate (packets/s).
    pub fn btl_bw_pps(&self) -> f64 {
        self.btl_bw_pps
    }

    /// The round-trip propagation estimate (s).
    pub fn rt_prop_s(&self) -> f64 {
        self.rt_prop_s
    }

    fn pacing_gain(&self) -> f64 {
        match self.mode {
            Mode::Startup => HIGH_GAIN,
            Mode::Drain => 1.0 / HIGH_GAIN,
            Mode::ProbeBw => GAIN_CYCLE[self.cycle_index],
            Mode::ProbeRtt => 1.0,
        }
    }

    fn cwnd_gain(&self) -> f64 {
        match self.mode {
            Mode::Startup | Mode::Drain => HIGH_GAIN,
            Mode::ProbeBw | Mode::ProbeRtt => 2.0,
        }
    }

    /// Estimated bandwidth-delay product (packets).
    pub fn bdp(&self) -> f64 {
        if self.btl_bw_pps > 0.0 && self.rt_prop_s.is_finite() {
            self.btl_bw_pps * self.rt_prop_s
        } else {
            INITIAL_CWND
        }
    }

    /// Congestion window (packets).
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    /// Pacing rate (packets/s).
    pub fn pacing_pps(&self) -> f64 {
        if self.pacing_pps > 0.0 {
            self.pacing_pps
        } else {
            INITIAL_PACING_PPS
        }
    }

    /// `gain x BtlBw`, never lowered before the pipe is full (BBR's startup rule), starting
    /// from `high_gain x initial cwnd / RTT` at the first RTT sample.
    fn update_pacing(&mut self) {
        if self.pacing_pps == 0.0 && self.rt_prop_s.is_finite() {
            self.pacing_pps = HIGH_GAIN * INITIAL_CWND / self.rt_prop_s;
        }
        if self.btl_bw_pps > 0.0 {
            let rate = self.pacing_gain() * self.btl_bw_pps;
            self.pacing_pps = if self.filled_pipe {
                rate
            } else {
                self.pacing_pps.max(rate)
            };
        }
    }

    /// One acknowledged packet.
    pub fn on_ack(&mut self, ack: &Ack) {
        let now = ack.now_s;
        let round_start = ack.delivered_at_send >= self.next_round_delivered;
        if round_start {
            self.next_round_delivered = ack.delivered;
            self.round += 1;
        }
        self.update_btl_bw(ack);
        let rt_prop_expired =
            self.rt_prop_s.is_finite() && now > self.rt_prop_stamp_s + RTPROP_WINDOW_S;
        let rtt = if self.median_of > 1 {
            median_filtered(&mut self.recent_rtts, self.median_of, ack.rtt_s)
        } else {
            ack.rtt_s
        };
        if rtt <= self.rt_prop_s || rt_prop_expired {
            self.rt_prop_s = rtt;
            self.rt_prop_stamp_s = now;
        }
        if round_start && !self.filled_pipe {
            self.check_full_pipe();
        }
        self.update_mode(ack, round_start, rt_prop_expired);
        self.update_cwnd(ack);
        self.update_pacing();
    }

    fn update_btl_bw(&mut self, ack: &Ack) {
        let Some(mut rate) = ack.delivery_rate_pps() else {
            return;
        };
        if self.median_of > 1 {
            rate = median_filtered(&mut self.recent_rates, self.median_of, rate);
        }
        self.bw_samples.push_back((self.round, rate));
        while self
            .bw_samples
            .front()
            .is_some_and(|&(r, _)| r + BTLBW_ROUNDS <= self.round)
        {
            self.bw_samples.pop_front();
        }
        self.btl_bw_pps = self.bw_samples.iter().map(|s| s.1).fold(0.0, f64::max);
    }

    fn check_full_pipe(&mut self) {
        if self.btl_bw_pps >= self.full_bw_pps * 1.25 {
            self.full_bw_pps = self.btl_bw_pps;
            self.full_bw_rounds = 0;
        } else {
            self.full_bw_rounds += 1;
            if self.full_bw_rounds >= 3 {
                self.filled_pipe = true;
            }
        }
    }

    fn update_mode(&mut self, ack: &Ack, round_start: bool, rt_prop_expired: bool) {
        let now = ack.now_s;
        let inflight = ack.inflight as f64;
        match self.mode {
            Mode::Startup if self.filled_pipe => self.mode = Mode::Drain,
            Mode::Drain if inflight <= self.bdp() => self.enter_probe_bw(now),
            Mode::ProbeBw => {
                let gain = GAIN_CYCLE[self.cycle_index];
                let elapsed = now - self.cycle_stamp_s > self.rt_prop_s;
                let advance = if gain > 1.0 {
                    elapsed && inflight >= gain * self.bdp()
                } else if gain < 1.0 {
                    elapsed || inflight <= self.bdp()
                } else {
                    elapsed
                };
                if advance {
                    self.cycle_index = (self.cycle_index + 1) % GAIN_CYCLE.len();
                    self.cycle_stamp_s = now;
                }
            }
            _ => {}
        }
        if rt_prop_expired && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.prior_cwnd = self.cwnd;
            self.probe_rtt_done_s = None;
        }
        if self.mode == Mode::ProbeRtt {
            match self.probe_rtt_done_s {
                None if inflight <= MIN_PIPE_CWND => {
                    self.probe_rtt_done_s = Some(now + PROBE_RTT_S);
                }
                Some(done) if now >= done && round_start => {
                    self.rt_prop_stamp_s = now;
                    self.cwnd = self.cwnd.max(self.prior_cwnd);
                    if self.filled_pipe {
                        self.enter_probe_bw(now);
                    } else {
                        self.mode = Mode::Startup;
                    }
                }
                _ => {}
            }
        }
    }

    fn enter_probe_bw(&mut self, now: f64) {
        self.mode = Mode::ProbeBw;
        // Start in a cruising phase (Linux picks a random one other than the drain phase).
        self.cycle_index = 2;
        self.cycle_stamp_s = now;
    }

    fn update_cwnd(&mut self, ack: &Ack) {
        if self.mode == Mode::ProbeRtt {
            self.cwnd = MIN_PIPE_CWND;
            return;
        }
        let target = self.cwnd_gain() * self.bdp() + 3.0;
        self.cwnd = if self.filled_pipe {
            (self.cwnd + 1.0).min(target)
        } else if self.cwnd < target || (ack.delivered as f64) < INITIAL_CWND {
            self.cwnd + 1.0
        } else {
            self.cwnd
        };
        self.cwnd = self.cwnd.max(MIN_PIPE_CWND);
    }

    /// BBR v1 keeps its model through random losses (its window is not loss-driven).
    pub fn on_loss(&mut self, _loss: &Loss) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flow_starting_late_does_not_begin_in_probe_rtt() {
        let mut b = Bbr::default();
        b.on_ack(&Ack {
            now_s: 12.1,
            rtt_s: 0.1,
            sent_s: 12.0,
            delivered: 1,
            delivered_at_send: 0,
            delivered_time_at_send_s: 12.0,
            inflight: 9,
        });
        assert_eq!(b.mode(), Mode::Startup);
        // Pacing starts at high_gain x initial window / RTT and does not fall in Startup.
        assert!(b.pacing_pps() >= HIGH_GAIN * INITIAL_CWND / 0.1 - 1e-9);
    }

    #[test]
    fn model_and_state_machine_on_a_steady_path() {
        // Acks of a path delivering 100 pkt/s with a 100 ms RTT (110 ms after 0.5 s, so RTprop
        // is not refreshed and expires 10 s later).
        let mut b = Bbr::default();
        let mut delivered = 0u64;
        let mut t = 0.1;
        let mut modes = Vec::new();
        while t < 12.0 {
            delivered += 1;
            let rtt = if t < 0.5 { 0.1 } else { 0.11 };
            b.on_ack(&Ack {
                now_s: t,
                rtt_s: rtt,
                sent_s: t - rtt,
                delivered,
                delivered_at_send: delivered.saturating_sub(10),
                delivered_time_at_send_s: t - 0.1,
                inflight: 10,
            });
            if modes.last() != Some(&b.mode()) {
                modes.push(b.mode());
            }
            t += 0.01;
        }
        assert!((b.btl_bw_pps() - 100.0).abs() < 1e-6, "{}", b.btl_bw_pps());
        // RTprop expired 10 s after its last 100 ms sample and took the current 110 ms.
        assert!((b.rt_prop_s() - 0.11).abs() < 1e-12);
        assert!((b.bdp() - 11.0).abs() < 1e-6);
        assert_eq!(
            &modes[..3],
            &[Mode::Startup, Mode::Drain, Mode::ProbeBw],
            "{modes:?}"
        );
        assert!(
            modes.contains(&Mode::ProbeRtt),
            "RTprop expires after 10 s: {modes:?}"
        );
    }
}
