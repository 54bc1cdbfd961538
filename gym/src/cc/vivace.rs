//! PCC Vivace (Dong et al., NSDI 2018): rate-based online learning. Each monitor interval (MI,
//! about one smoothed RTT) sends at one rate and scores it with the latency-aware utility
//! `u(x) = x^t - b x dRTT/dT - c x L` (x in Mbit/s, t = 0.9, b = 900, c = 11.35). The sender
//! starts by doubling its rate each MI until utility falls, then probes: two pairs of MIs at
//! `r (1 + e)` and `r (1 - e)` (e = 0.05) in random order; when both pairs agree it moves along
//! the utility gradient by `m theta0 gamma`, where the confidence amplifier `m` grows while
//! consecutive steps keep their direction, and the dynamic boundary caps a step at `omega r`,
//! `omega = 0.05 + 0.1 k` after `k` consecutive capped steps.

use super::{Ack, Loss, Srtt, PACKET_BITS as BYTES_PER_PACKET_BITS};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Utility exponent of throughput.
pub const T: f64 = 0.9;
/// Latency-gradient coefficient.
pub const B: f64 = 900.0;
/// Loss coefficient.
pub const C: f64 = 11.35;
/// Probing step.
pub const EPSILON: f64 = 0.05;
/// Rate change (Mbit/s) per unit of utility gradient.
pub const THETA0: f64 = 1.0;
/// Initial dynamic boundary (fraction of the rate).
pub const OMEGA0: f64 = 0.05;
/// Boundary increase per consecutive capped step.
pub const OMEGA_STEP: f64 = 0.1;
/// Lowest rate (packets/s).
pub const MIN_RATE_PPS: f64 = 2.0;
/// Starting rate (packets/s).
pub const START_RATE_PPS: f64 = 20.0;

/// Vivace's utility of an MI sent at `rate_pps` with RTT gradient `drtt_dt` (s/s) and loss
/// rate `loss`.
pub fn utility(rate_pps: f64, drtt_dt: f64, loss: f64) -> f64 {
    let x = rate_pps * BYTES_PER_PACKET_BITS / 1e6;
    x.powf(T) - B * x * drtt_dt - C * x * loss
}

/// Least-squares slope of `y` against `x` (0 with fewer than two distinct x).
pub fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    if points.len() < 2 {
        return 0.0;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    if sxx > 0.0 {
        sxy / sxx
    } else {
        0.0
    }
}

/// One monitor interval in flight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Mi {
    rate_pps: f64,
    start_s: f64,
    end_s: f64,
    acked: u64,
    lost: u64,
    /// (send time, RTT) of the acked packets.
    rtts: Vec<(f64, f64)>,
}

/// Where the rate search stands.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
enum Phase {
    /// Doubling until utility falls.
    Starting,
    /// Two randomized pairs around the base rate.
    Probing,
    /// Moving along the gradient.
    Moving,
}

/// PCC Vivace's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Vivace {
    phase: Phase,
    /// The base rate the search is at (packets/s).
    rate_pps: f64,
    /// The rate of the MI being sent.
    sending_pps: f64,
    srtt: Srtt,
    /// MIs sent and not yet scored, oldest first.
    pending: VecDeque<Mi>,
    /// Rates still to try in this probing round.
    plan: VecDeque<f64>,
    /// Utilities of the finished probing MIs: (rate, utility).
    probes: Vec<(f64, f64)>,
    /// Last scored (rate, utility) in Starting and Moving.
    last: Option<(f64, f64)>,
    amplifier: f64,
    direction: f64,
    boundary_hits: u32,
    rng: u64,
}

impl Default for Vivace {
    fn default() -> Self {
        Self {
            phase: Phase::Starting,
            rate_pps: START_RATE_PPS,
            sending_pps: START_RATE_PPS,
            srtt: Srtt::default(),
            pending: VecDeque::new(),
            plan: VecDeque::new(),
            probes: Vec::new(),
            last: None,
            amplifier: 1.0,
            direction: 0.0,
            boundary_hits: 0,
            rng: 0x9E37_79B9_7F4A_7C15,
        }
    }
}

impl Vivace {
    /// A fresh sender whose probing order is drawn from `seed` (flows of one run should differ).
    pub fn with_seed(seed: u64) -> Self {
        // SplitMix64 finalizer: distinct, nonzero xorshift states for nearby seeds.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        Self {
            rng: z | 1,
            ..Self::default()
        }
    }

    /// Rate-based: no window limit.
    pub fn cwnd(&self) -> f64 {
        f64::INFINITY
    }

    /// The rate of the MI being sent (packets/s).
    pub fn pacing_pps(&self) -> f64 {
        self.sending_pps
    }

    /// The base rate of the search (packets/s).
    pub fn rate_pps(&self) -> f64 {
        self.rate_pps
    }

    fn coin(&mut self) -> bool {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng & 1 == 1
    }

    /// One acknowledged packet.
    pub fn on_ack(&mut self, ack: &Ack) {
        self.srtt.update(ack.rtt_s);
        if let Some(mi) = self.mi_of(ack.sent_s) {
            mi.acked += 1;
            mi.rtts.push((ack.sent_s, ack.rtt_s));
        }
        self.advance(ack.now_s, ack.sent_s);
    }

    /// One lost packet.
    pub fn on_loss(&mut self, loss: &Loss) {
        if let Some(mi) = self.mi_of(loss.sent_s) {
            mi.lost += 1;
        }
        self.advance(loss.now_s, loss.sent_s);
    }

    fn mi_of(&mut self, sent_s: f64) -> Option<&mut Mi> {
        self.pending
            .iter_mut()
            .rev()
            .find(|m| m.start_s <= sent_s && sent_s < m.end_s)
    }

    /// Scores MIs whose packets have all come back (feedback for a packet sent after their end
    /// arrived) and starts a new MI when the current one's time is up.
    fn advance(&mut self, now: f64, sent_s: f64) {
        while self
            .pending
            .front()
            .is_some_and(|m| m.end_s <= sent_s && m.end_s <= now)
        {
            if let Some(mi) = self.pending.pop_front() {
                self.score(&mi);
            }
        }
        if self.pending.back().is_none_or(|m| now >= m.end_s) {
            self.start_mi(now);
        }
    }

    fn start_mi(&mut self, now: f64) {
        let rtt = self.srtt.get().unwrap_or(0.1);
        self.sending_pps = match self.phase {
            Phase::Probing => match self.plan.pop_front() {
                Some(r) => r,
                None => self.rate_pps,
            },
            _ => self.rate_pps,
        };
        self.pending.push_back(Mi {
            rate_pps: self.sending_pps,
            start_s: now,
            // Long enough for a few packets at low rates.
            end_s: now + rtt.max(5.0 / self.sending_pps).max(1e-3),
            acked: 0,
            lost: 0,
            rtts: Vec::new(),
        });
    }

    fn score(&mut self, mi: &Mi) {
        let resolved = (mi.acked + mi.lost) as f64;
        if resolved == 0.0 {
            // Nothing came back (e.g. an MI of an off period): a probing round that lost one of
            // its MIs starts over, or it would wait for it forever.
            if self.phase == Phase::Probing {
                self.begin_probing();
            }
            return;
        }
        let u = utility(mi.rate_pps, slope(&mi.rtts), mi.lost as f64 / resolved);
        let same = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
        // MIs sent before the last decision (at a rate the search has left) are not scored.
        let current = match self.phase {
            Phase::Starting => self.last.is_none_or(|(r, _)| mi.rate_pps > r),
            Phase::Probing => {
                let r = self.rate_pps;
                same(mi.rate_pps, r * (1.0 + EPSILON)) || same(mi.rate_pps, r * (1.0 - EPSILON))
            }
            Phase::Moving => same(mi.rate_pps, self.rate_pps),
        };
        if !current {
            return;
        }
        match self.phase {
            Phase::Starting => match self.last {
                Some((r, best)) if u < best => {
                    self.rate_pps = r;
                    self.begin_probing();
                }
                _ => {
                    self.last = Some((mi.rate_pps, u));
                    self.rate_pps = mi.rate_pps * 2.0;
                }
            },
            Phase::Probing => {
                self.probes.push((mi.rate_pps, u));
                if self.probes.len() == 4 {
                    self.decide_from_probes();
                }
            }
            Phase::Moving => {
                let (r0, u0) = self.last.unwrap_or((mi.rate_pps, u));
                if u < u0 || same(mi.rate_pps, r0) {
                    self.amplifier = 1.0;
                    self.boundary_hits = 0;
                    self.begin_probing();
                } else {
                    let gamma = (u - u0) / ((mi.rate_pps - r0) * BYTES_PER_PACKET_BITS / 1e6);
                    self.last = Some((mi.rate_pps, u));
                    self.step(gamma);
                }
            }
        }
    }

    fn begin_probing(&mut self) {
        self.phase = Phase::Probing;
        self.probes.clear();
        self.plan.clear();
        let (up, down) = (
            self.rate_pps * (1.0 + EPSILON),
            self.rate_pps * (1.0 - EPSILON),
        );
        for _ in 0..2 {
            if self.coin() {
                self.plan.extend([up, down]);
            } else {
                self.plan.extend([down, up]);
            }
        }
    }

    fn decide_from_probes(&mut self) {
        let r = self.rate_pps;
        let better_up: Vec<bool> = self
            .probes
            .chunks(2)
            .map(|pair| {
                let (a, b) = (pair[0], pair[1]);
                if a.0 > b.0 {
                    a.1 > b.1
                } else {
                    b.1 > a.1
                }
            })
            .collect();
        if better_up.iter().all(|&x| x == better_up[0]) {
            let mean = |up: bool| {
                let us: Vec<f64> = self
                    .probes
                    .iter()
                    .filter(|p| (p.0 > r) == up)
                    .map(|p| p.1)
                    .collect();
                us.iter().sum::<f64>() / us.len().max(1) as f64
            };
            let (up, down) = (mean(true), mean(false));
            let gamma = (up - down) / (2.0 * EPSILON * r * BYTES_PER_PACKET_BITS / 1e6);
            self.phase = Phase::Moving;
            self.step(gamma);
            // The next MI, at the new rate, is compared with the better probe.
            self.last = Some(if up >= down {
                (r * (1.0 + EPSILON), up)
            } else {
                (r * (1.0 - EPSILON), down)
            });
        } else {
            self.begin_probing();
        }
    }

    /// Moves the base rate along `gamma` with the confidence amplifier and dynamic boundary.
    fn step(&mut self, gamma: f64) {
        let direction = gamma.signum();
        if direction == self.direction && direction != 0.0 {
            self.amplifier += 1.0;
        } else {
            self.amplifier = 1.0;
        }
        self.direction = direction;
        let change_mbps = self.amplifier * THETA0 * gamma;
        let change_pps = change_mbps * 1e6 / BYTES_PER_PACKET_BITS;
        let omega = OMEGA0 + OMEGA_STEP * f64::from(self.boundary_hits);
        let cap = omega * self.rate_pps;
        let bounded = if change_pps.abs() > cap {
            self.boundary_hits += 1;
            cap * direction
        } else {
            self.boundary_hits = 0;
            change_pps
        };
        self.rate_pps = (self.rate_pps + bounded).max(MIN_RATE_PPS);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utility_and_slope_hand_values() {
        // 100 pkt/s = 1.2 Mbit/s: 1.2^0.9, minus 900 * 1.2 * 0.01, minus 11.35 * 1.2 * 0.1.
        let u = utility(100.0, 0.01, 0.1);
        let expect = 1.2f64.powf(0.9) - 900.0 * 1.2 * 0.01 - 11.35 * 1.2 * 0.1;
        assert!((u - expect).abs() < 1e-12, "{u}");
        assert!((slope(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)]) - 2.0).abs() < 1e-12);
        assert_eq!(slope(&[(1.0, 1.0)]), 0.0);
    }

    #[test]
    fn a_probing_round_that_loses_an_mi_starts_over() {
        let mut v = Vivace {
            rate_pps: 100.0,
            ..Vivace::default()
        };
        v.begin_probing();
        let first = v.plan.front().copied().unwrap();
        v.plan.clear();
        let empty = Mi {
            rate_pps: first,
            start_s: 0.0,
            end_s: 0.1,
            acked: 0,
            lost: 0,
            rtts: Vec::new(),
        };
        v.score(&empty);
        assert_eq!(v.plan.len(), 4, "a new round of two pairs is planned");
        assert_eq!(v.phase, Phase::Probing);
    }

    #[test]
    fn step_is_amplified_and_bounded() {
        let mut v = Vivace {
            rate_pps: 100.0,
            ..Vivace::default()
        };
        // A huge gradient is capped at 5% of the rate, then 15% after one capped step.
        v.step(1e6);
        assert!((v.rate_pps - 105.0).abs() < 1e-9);
        v.step(1e6);
        assert!((v.rate_pps - 105.0 * 1.15).abs() < 1e-9);
        // A small gradient moves by m theta0 gamma (converted to packets/s).
        let before = v.rate_pps;
        v.step(0.012);
        let expect = 3.0 * 0.012 * 1e6 / BYTES_PER_PACKET_BITS;
        assert!(
            (v.rate_pps - before - expect).abs() < 1e-9,
            "{}",
            v.rate_pps - before
        );
    }
}
