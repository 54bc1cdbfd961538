//! BBRv3 (draft-ietf-ccwg-bbr, Linux's tcp_bbr v3): BBR's model-based control with bounds
//! learned from loss.
//!
//! - **Model**: `max_bw`, the maximum delivery rate over the last two ProbeBW cycles; `min_rtt`
//!   over 10 s; long-term bounds `inflight_hi` (the inflight at which loss exceeded 2%) and
//!   short-term bounds `bw_lo` / `inflight_lo` (cut by beta = 0.7 in each round with loss while
//!   not probing, reset when a probe starts). The bandwidth used is `min(max_bw, bw_lo)`.
//! - **States**: Startup (pacing gain 2.77, cwnd gain 2), left when the bandwidth grew less
//!   than 25% in three rounds or a round lost more than 2% (at least six packets); Drain
//!   (pacing gain 0.35) until the inflight is at most one BDP; ProbeBW's four phases, in order:
//!   DOWN (0.9) until the inflight fits under the headroom, CRUISE (1.0, inflight at most 85%
//!   of `inflight_hi`) until it is time to probe (a wall-clock wait of 2-3 s, drawn per cycle,
//!   or as many rounds as Reno would take, at most 63), REFILL (1.0) for one round, UP (1.25,
//!   cwnd gain 2.25, `inflight_hi` raised by 1, 2, 4, ... packets a round) until a round's loss
//!   rate exceeds 2% (then `inflight_hi` falls to the inflight it reached, at least 0.7 of the
//!   target) or the inflight exceeds 1.25 BDP after one min_rtt; ProbeRTT (cwnd half a BDP
//!   for 200 ms and a round) when the 5 s minimum RTT was not refreshed.
//!
//! Losses are known one RTT after sending in this simulator (see the module docs of `cc`), as
//! a sender that infers them from later acknowledgements would.

use super::bbr::MIN_PIPE_CWND;
use super::{Ack, CcRng, Loss, INITIAL_CWND, INITIAL_PACING_PPS};
use serde::{Deserialize, Serialize};

/// Startup's pacing gain (4 ln 2, rounded as Linux does).
pub const STARTUP_PACING_GAIN: f64 = 2.77;
/// Drain's pacing gain.
pub const DRAIN_PACING_GAIN: f64 = 0.35;
/// Window gain everywhere but ProbeBW UP.
pub const CWND_GAIN: f64 = 2.0;
/// Window gain in ProbeBW UP.
pub const UP_CWND_GAIN: f64 = 2.25;
/// Pacing gains of DOWN, CRUISE, REFILL, UP.
pub const DOWN_GAIN: f64 = 0.9;
/// Pacing gain of ProbeBW UP.
pub const UP_GAIN: f64 = 1.25;
/// The loss rate a round may have before the inflight is too high.
pub const LOSS_THRESH: f64 = 0.02;
/// Multiplicative cut of the bounds on loss.
pub const BETA: f64 = 0.7;
/// Share of `inflight_hi` left free while cruising.
pub const HEADROOM: f64 = 0.15;
/// Losses in a Startup round that, above the loss threshold, end Startup.
pub const STARTUP_FULL_LOSS_COUNT: u64 = 6;
/// Window in ProbeRTT, in BDPs.
pub const PROBE_RTT_CWND_GAIN: f64 = 0.5;
/// Time spent in ProbeRTT (s).
pub const PROBE_RTT_DURATION_S: f64 = 0.2;
/// ProbeRTT comes when the minimum RTT of this window was not refreshed (s).
pub const PROBE_RTT_INTERVAL_S: f64 = 5.0;
/// Window of the min_rtt filter (s).
pub const MIN_RTT_WINDOW_S: f64 = 10.0;
/// Pacing below the estimate by this share (keeps the queue drained).
pub const PACING_MARGIN: f64 = 0.01;
/// Shortest wall-clock wait between bandwidth probes (s); a random share of a second more.
pub const PROBE_WAIT_BASE_S: f64 = 2.0;
/// The most rounds between probes for Reno coexistence.
pub const MAX_RENO_ROUNDS: f64 = 63.0;

/// BBRv3's states; ProbeBW's phases are states of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mode {
    /// Exponential search for the bottleneck rate.
    Startup,
    /// Drains the queue Startup built.
    Drain,
    /// ProbeBW: leaves headroom, draining any queue.
    Down,
    /// ProbeBW: holds the estimated bandwidth.
    Cruise,
    /// ProbeBW: refills the pipe for a round before probing.
    Refill,
    /// ProbeBW: probes for more bandwidth.
    Up,
    /// Drains the pipe to refresh the minimum RTT.
    ProbeRtt,
}

impl Mode {
    fn is_probe_bw(self) -> bool {
        matches!(self, Mode::Down | Mode::Cruise | Mode::Refill | Mode::Up)
    }

    /// Whether the bandwidth is being probed (losses then set `inflight_hi`, not the lower
    /// bounds).
    fn is_probing_bw(self) -> bool {
        matches!(self, Mode::Startup | Mode::Refill | Mode::Up)
    }
}

/// BBRv3's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bbr3 {
    mode: Mode,
    /// The delivery-rate maxima of this and the last ProbeBW cycle (packets/s).
    max_bw_slots: [f64; 2],
    cycle_count: u64,
    #[serde(with = "crate::serde_float")]
    bw_lo: f64,
    #[serde(with = "crate::serde_float")]
    inflight_lo: f64,
    #[serde(with = "crate::serde_float")]
    inflight_hi: f64,
    /// The largest delivery rate and delivered count of a sample in this round.
    bw_latest: f64,
    inflight_latest: f64,
    #[serde(with = "crate::serde_float")]
    min_rtt_s: f64,
    min_rtt_stamp_s: f64,
    #[serde(with = "crate::serde_float")]
    probe_rtt_min_s: f64,
    probe_rtt_min_stamp_s: f64,
    /// Whether the 5 s minimum had expired when the last sample came (before it refreshed it).
    #[serde(default)]
    probe_rtt_expired: bool,
    round: u64,
    next_round_delivered: u64,
    round_start_inflight: f64,
    acked_in_round: u64,
    lost_in_round: u64,
    full_bw: f64,
    full_bw_count: u32,
    filled_pipe: bool,
    cycle_stamp_s: f64,
    bw_probe_wait_s: f64,
    rounds_since_bw_probe: u64,
    #[serde(with = "crate::serde_float")]
    bw_probe_up_cnt: f64,
    bw_probe_up_acks: f64,
    bw_probe_up_rounds: u32,
    /// Whether the current probe may still set `inflight_hi` (once per probe).
    bw_probe_samples: bool,
    probe_rtt_done_s: Option<f64>,
    probe_rtt_round_done: bool,
    prior_cwnd: f64,
    cwnd: f64,
    pacing_pps: f64,
    rng: CcRng,
}

impl Default for Bbr3 {
    fn default() -> Self {
        Self::with_seed(0)
    }
}

impl Bbr3 {
    /// A fresh sender whose random probe waits are drawn from `seed`.
    pub fn with_seed(seed: u64) -> Self {
        Self {
            mode: Mode::Startup,
            max_bw_slots: [0.0; 2],
            cycle_count: 0,
            bw_lo: f64::INFINITY,
            inflight_lo: f64::INFINITY,
            inflight_hi: f64::INFINITY,
            bw_latest: 0.0,
            inflight_latest: 0.0,
            min_rtt_s: f64::INFINITY,
            min_rtt_stamp_s: 0.0,
            probe_rtt_min_s: f64::INFINITY,
            probe_rtt_min_stamp_s: 0.0,
            probe_rtt_expired: false,
            round: 0,
            next_round_delivered: 0,
            round_start_inflight: 0.0,
            acked_in_round: 0,
            lost_in_round: 0,
            full_bw: 0.0,
            full_bw_count: 0,
            filled_pipe: false,
            cycle_stamp_s: 0.0,
            bw_probe_wait_s: PROBE_WAIT_BASE_S,
            rounds_since_bw_probe: 0,
            bw_probe_up_cnt: f64::INFINITY,
            bw_probe_up_acks: 0.0,
            bw_probe_up_rounds: 0,
            bw_probe_samples: false,
            probe_rtt_done_s: None,
            probe_rtt_round_done: false,
            prior_cwnd: INITIAL_CWND,
            cwnd: INITIAL_CWND,
            pacing_pps: 0.0,
            rng: CcRng::seeded(seed),
        }
    }

    /// The state.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The bandwidth the model uses, `min(max_bw, bw_lo)` (packets/s).
    pub fn bw_pps(&self) -> f64 {
        self.max_bw().min(self.bw_lo)
    }

    /// The maximum delivery rate of the last two cycles (packets/s).
    pub fn max_bw(&self) -> f64 {
        self.max_bw_slots[0].max(self.max_bw_slots[1])
    }

    /// The long-term inflight bound (packets; infinite until a loss sets it).
    pub fn inflight_hi(&self) -> f64 {
        self.inflight_hi
    }

    /// The minimum RTT (s).
    pub fn min_rtt_s(&self) -> f64 {
        self.min_rtt_s
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

    fn pacing_gain(&self) -> f64 {
        match self.mode {
            Mode::Startup => STARTUP_PACING_GAIN,
            Mode::Drain => DRAIN_PACING_GAIN,
            Mode::Down => DOWN_GAIN,
            Mode::Up => UP_GAIN,
            Mode::Cruise | Mode::Refill | Mode::ProbeRtt => 1.0,
        }
    }

    fn cwnd_gain(&self) -> f64 {
        match self.mode {
            Mode::Up => UP_CWND_GAIN,
            _ => CWND_GAIN,
        }
    }

    /// The inflight for `gain` x the bandwidth-delay product (packets).
    fn inflight_for(&self, gain: f64) -> f64 {
        let bw = self.bw_pps();
        if bw > 0.0 && self.min_rtt_s.is_finite() {
            gain * bw * self.min_rtt_s
        } else {
            INITIAL_CWND
        }
    }

    /// One BDP, at least the initial window before the model has one.
    pub fn bdp(&self) -> f64 {
        self.inflight_for(1.0)
    }

    fn inflight_with_headroom(&self) -> f64 {
        if self.inflight_hi.is_infinite() {
            return f64::INFINITY;
        }
        let headroom = (HEADROOM * self.inflight_hi).max(1.0);
        (self.inflight_hi - headroom).max(MIN_PIPE_CWND)
    }

    /// One acknowledged packet.
    pub fn on_ack(&mut self, ack: &Ack) {
        let round_start = self.update_round(ack);
        self.acked_in_round += 1;
        self.update_model(ack);
        if round_start {
            self.end_of_round_signals();
        }
        self.check_startup_done(round_start);
        self.check_drain_done(ack);
        self.update_probe_bw_phase(ack, round_start);
        self.update_probe_rtt(ack, round_start);
        self.update_cwnd(ack);
        self.update_pacing();
    }

    /// One lost packet: counted for the round; above the threshold, the inflight is too high.
    pub fn on_loss(&mut self, loss: &Loss) {
        self.lost_in_round += 1;
        if !self.round_loss_too_high() {
            return;
        }
        match self.mode {
            Mode::Startup if self.lost_in_round >= STARTUP_FULL_LOSS_COUNT && !self.filled_pipe => {
                self.filled_pipe = true;
                self.inflight_hi = self.bdp().max(self.inflight_latest);
                self.mode = Mode::Drain;
            }
            Mode::Up | Mode::Refill if self.bw_probe_samples => {
                self.bw_probe_samples = false;
                let tx_in_flight = loss.inflight as f64 + 1.0;
                self.inflight_hi = tx_in_flight.max(BETA * self.inflight_for(1.0));
                if self.mode == Mode::Up {
                    self.start_down(loss.now_s);
                }
            }
            _ => {}
        }
        self.update_pacing();
    }

    /// The round's loss rate: losses over the packets resolved in it, or over the inflight at
    /// its start when fewer came back.
    fn round_loss_too_high(&self) -> bool {
        let resolved = (self.acked_in_round + self.lost_in_round) as f64;
        let base = resolved.max(self.round_start_inflight).max(1.0);
        self.lost_in_round as f64 > LOSS_THRESH * base
    }

    fn update_round(&mut self, ack: &Ack) -> bool {
        if ack.delivered_at_send < self.next_round_delivered {
            return false;
        }
        self.next_round_delivered = ack.delivered;
        self.round += 1;
        self.rounds_since_bw_probe += 1;
        true
    }

    fn update_model(&mut self, ack: &Ack) {
        if let Some(rate) = ack.delivery_rate_pps() {
            self.bw_latest = self.bw_latest.max(rate);
            let slot = &mut self.max_bw_slots[(self.cycle_count % 2) as usize];
            *slot = slot.max(rate);
        }
        self.inflight_latest = self.inflight_latest.max(ack.delivered_since_send() as f64);
        let now = ack.now_s;
        self.probe_rtt_expired = now > self.probe_rtt_min_stamp_s + PROBE_RTT_INTERVAL_S;
        if ack.rtt_s <= self.probe_rtt_min_s || self.probe_rtt_expired {
            self.probe_rtt_min_s = ack.rtt_s;
            self.probe_rtt_min_stamp_s = now;
        }
        if self.probe_rtt_min_s <= self.min_rtt_s || now > self.min_rtt_stamp_s + MIN_RTT_WINDOW_S {
            self.min_rtt_s = self.probe_rtt_min_s;
            self.min_rtt_stamp_s = self.probe_rtt_min_stamp_s;
        }
    }

    /// At a round's end: cuts the short-term bounds after a round with loss (outside probing),
    /// then starts the next round's counts.
    fn end_of_round_signals(&mut self) {
        if self.lost_in_round > 0 && !self.mode.is_probing_bw() {
            if self.bw_lo.is_infinite() {
                self.bw_lo = self.max_bw();
            }
            if self.inflight_lo.is_infinite() {
                self.inflight_lo = self.cwnd;
            }
            self.bw_lo = self.bw_latest.max(BETA * self.bw_lo);
            self.inflight_lo = self.inflight_latest.max(BETA * self.inflight_lo);
        }
        self.bw_latest = 0.0;
        self.inflight_latest = 0.0;
        self.acked_in_round = 0;
        self.lost_in_round = 0;
        self.round_start_inflight = self.cwnd;
    }

    fn check_startup_done(&mut self, round_start: bool) {
        if self.mode != Mode::Startup || !round_start || self.filled_pipe {
            return;
        }
        let bw = self.max_bw();
        if bw >= self.full_bw * 1.25 {
            self.full_bw = bw;
            self.full_bw_count = 0;
            return;
        }
        self.full_bw_count += 1;
        if self.full_bw_count >= 3 {
            self.filled_pipe = true;
            self.mode = Mode::Drain;
        }
    }

    fn check_drain_done(&mut self, ack: &Ack) {
        if self.mode == Mode::Drain && (ack.inflight as f64) <= self.bdp() {
            self.start_down(ack.now_s);
        }
    }

    fn update_probe_bw_phase(&mut self, ack: &Ack, round_start: bool) {
        let now = ack.now_s;
        let inflight = ack.inflight as f64;
        if self.mode.is_probe_bw() && !self.round_loss_too_high() {
            if self.inflight_hi.is_finite() && inflight > self.inflight_hi {
                self.inflight_hi = inflight;
            }
            if self.mode == Mode::Up {
                self.raise_inflight_hi(round_start);
            }
        }
        let mode = self.mode;
        let probe_started = matches!(mode, Mode::Down | Mode::Cruise) && self.time_to_probe(now);
        match mode {
            Mode::Down
                if !probe_started
                    && inflight <= self.inflight_with_headroom()
                    && inflight <= self.inflight_for(1.0) =>
            {
                self.mode = Mode::Cruise;
            }
            Mode::Refill if round_start => self.start_up(now),
            Mode::Up
                if now - self.cycle_stamp_s > self.min_rtt_s
                    && inflight > self.inflight_for(UP_GAIN) =>
            {
                self.start_down(now);
            }
            _ => {}
        }
    }

    /// Starts REFILL when the wall-clock wait or Reno's rounds have passed.
    fn time_to_probe(&mut self, now: f64) -> bool {
        let reno_rounds = self.inflight_for(1.0).min(MAX_RENO_ROUNDS);
        if now - self.cycle_stamp_s >= self.bw_probe_wait_s
            || self.rounds_since_bw_probe as f64 >= reno_rounds
        {
            self.start_refill();
            return true;
        }
        false
    }

    fn start_down(&mut self, now: f64) {
        self.cycle_count += 1;
        let next = (self.cycle_count % 2) as usize;
        self.max_bw_slots[next] = 0.0;
        self.bw_probe_up_cnt = f64::INFINITY;
        self.bw_probe_wait_s = PROBE_WAIT_BASE_S + self.rng.uniform();
        self.rounds_since_bw_probe = 0;
        self.cycle_stamp_s = now;
        self.mode = Mode::Down;
    }

    fn start_refill(&mut self) {
        self.bw_lo = f64::INFINITY;
        self.inflight_lo = f64::INFINITY;
        self.bw_probe_up_rounds = 0;
        self.bw_probe_up_acks = 0.0;
        self.mode = Mode::Refill;
    }

    fn start_up(&mut self, now: f64) {
        self.bw_probe_samples = true;
        self.cycle_stamp_s = now;
        self.mode = Mode::Up;
        self.raise_inflight_hi_slope();
    }

    /// UP raises `inflight_hi` by 1, 2, 4, ... packets per round while the window is full.
    fn raise_inflight_hi(&mut self, round_start: bool) {
        if self.inflight_hi.is_finite() && self.cwnd >= self.inflight_hi {
            self.bw_probe_up_acks += 1.0;
            if self.bw_probe_up_acks >= self.bw_probe_up_cnt {
                let delta = (self.bw_probe_up_acks / self.bw_probe_up_cnt).floor();
                self.bw_probe_up_acks -= delta * self.bw_probe_up_cnt;
                self.inflight_hi += delta;
            }
        }
        if round_start {
            self.raise_inflight_hi_slope();
        }
    }

    fn raise_inflight_hi_slope(&mut self) {
        let growth = f64::from(1u32 << self.bw_probe_up_rounds.min(30));
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.bw_probe_up_cnt = (self.cwnd / growth).max(1.0);
    }

    fn update_probe_rtt(&mut self, ack: &Ack, round_start: bool) {
        let now = ack.now_s;
        if self.probe_rtt_expired && self.mode != Mode::ProbeRtt && self.filled_pipe {
            self.prior_cwnd = self.cwnd;
            self.probe_rtt_done_s = None;
            self.mode = Mode::ProbeRtt;
        }
        if self.mode != Mode::ProbeRtt {
            return;
        }
        let target = self.probe_rtt_cwnd();
        match self.probe_rtt_done_s {
            None if (ack.inflight as f64) <= target => {
                self.probe_rtt_done_s = Some(now + PROBE_RTT_DURATION_S);
                self.probe_rtt_round_done = false;
                self.next_round_delivered = ack.delivered;
            }
            Some(done) => {
                if round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done && now >= done {
                    self.probe_rtt_min_stamp_s = now;
                    self.cwnd = self.cwnd.max(self.prior_cwnd);
                    self.bw_lo = f64::INFINITY;
                    self.inflight_lo = f64::INFINITY;
                    self.start_down(now);
                    self.mode = Mode::Cruise;
                }
            }
            _ => {}
        }
    }

    fn probe_rtt_cwnd(&self) -> f64 {
        self.inflight_for(PROBE_RTT_CWND_GAIN).max(MIN_PIPE_CWND)
    }

    fn update_cwnd(&mut self, ack: &Ack) {
        let target = self.inflight_for(self.cwnd_gain()) + 3.0;
        self.cwnd = if self.filled_pipe {
            (self.cwnd + 1.0).min(target)
        } else if self.cwnd < target || (ack.delivered as f64) < INITIAL_CWND {
            self.cwnd + 1.0
        } else {
            self.cwnd
        };
        let cap = match self.mode {
            Mode::Down | Mode::Refill | Mode::Up => self.inflight_hi,
            Mode::Cruise => self.inflight_with_headroom(),
            Mode::ProbeRtt => self.inflight_with_headroom().min(self.probe_rtt_cwnd()),
            Mode::Startup | Mode::Drain => f64::INFINITY,
        };
        self.cwnd = self.cwnd.min(cap).min(self.inflight_lo).max(MIN_PIPE_CWND);
    }

    /// `gain x bw x (1 - margin)`, never lowered in Startup, from `gain x initial cwnd / RTT`
    /// at the first RTT sample.
    fn update_pacing(&mut self) {
        if self.pacing_pps == 0.0 && self.min_rtt_s.is_finite() {
            self.pacing_pps = STARTUP_PACING_GAIN * INITIAL_CWND / self.min_rtt_s;
        }
        let bw = self.bw_pps();
        if bw > 0.0 {
            let rate = self.pacing_gain() * bw * (1.0 - PACING_MARGIN);
            self.pacing_pps = if self.filled_pipe {
                rate
            } else {
                self.pacing_pps.max(rate)
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bounds_follow_the_draft_hand_values() {
        let mut b = Bbr3 {
            max_bw_slots: [100.0, 80.0],
            min_rtt_s: 0.1,
            inflight_hi: 40.0,
            ..Bbr3::default()
        };
        assert_eq!(b.bdp(), 10.0);
        // Headroom: 15% of inflight_hi, at least one packet.
        assert!((b.inflight_with_headroom() - 34.0).abs() < 1e-12);
        // A round with loss outside probing cuts bw_lo to max(latest, 0.7 x max_bw).
        b.mode = Mode::Cruise;
        b.bw_latest = 50.0;
        b.inflight_latest = 3.0;
        b.cwnd = 20.0;
        b.lost_in_round = 1;
        b.end_of_round_signals();
        assert!((b.bw_lo - 70.0).abs() < 1e-12);
        assert!((b.inflight_lo - 14.0).abs() < 1e-12);
        assert!((b.bw_pps() - 70.0).abs() < 1e-12);
        // Probing resets them.
        b.start_refill();
        assert!(b.bw_lo.is_infinite() && b.inflight_lo.is_infinite());
    }

    #[test]
    fn the_loss_threshold_is_two_percent_of_the_round() {
        let mut b = Bbr3 {
            round_start_inflight: 100.0,
            ..Bbr3::default()
        };
        b.lost_in_round = 2;
        assert!(!b.round_loss_too_high(), "2 of 100 is not above 2%");
        b.lost_in_round = 3;
        assert!(b.round_loss_too_high());
    }
}
