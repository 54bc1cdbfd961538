//! The PCC family (Performance-oriented Congestion Control): rate-based online learning. Each
//! monitor interval (MI, about one smoothed RTT) sends at one rate and scores it with a utility
//! function; the sender starts by doubling its rate each MI until utility falls, then runs
//! randomized controlled trials: two pairs of MIs at `r (1 + e)` and `r (1 - e)` in random
//! order, and moves only when both pairs agree. The members differ in their utility and in how
//! they move:
//!
//! - **Allegro** (Dong et al., NSDI 2015): `u(x) = T sigmoid(L - 0.05) - x L` with `T = x (1 - L)`
//!   the throughput and `sigmoid(y) = 1 / (1 + e^(100 y))`: the utility collapses once loss
//!   passes 5%, so random loss below that costs no rate. It moves in growing steps
//!   `r_n = r_(n-1) (1 + n e_min)` until utility falls, then returns to the last rate and trials
//!   again; a trial that does not agree widens `e` by `e_min` = 0.01 up to 0.05.
//! - **Vivace** (Dong et al., NSDI 2018): `u(x) = x^t - b x dRTT/dT - c x L` (x in Mbit/s,
//!   t = 0.9, b = 900, c = 11.35); it moves along the utility gradient by `m theta0 gamma`,
//!   where the confidence amplifier `m` grows while consecutive steps keep their direction,
//!   and the dynamic boundary caps a step at `omega r`, `omega = 0.05 + 0.1 k` after `k`
//!   consecutive capped steps.
//! - **Proteus** (Meng et al., SIGCOMM 2020), the primary: Vivace's utility and control, the
//!   RTT gradient clipped at 0 (a draining queue earns nothing) and ignored within its
//!   tolerance (noise), as PCC-Uspace's Proteus does.
//! - **Proteus-S**, the scavenger: the primary's utility minus `d x sigma(RTT)` (d = 1500 per
//!   second of RTT deviation within the MI, PCC-Uspace's 0.0015 per microsecond): a primary
//!   or a loss-based flow sharing the link moves the RTT, and the scavenger yields to it.

use super::{Ack, CcRng, Loss, Srtt, PACKET_BITS as BYTES_PER_PACKET_BITS};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Utility exponent of throughput (Vivace, Proteus).
pub const T: f64 = 0.9;
/// Latency-gradient coefficient (Vivace, Proteus).
pub const B: f64 = 900.0;
/// Loss coefficient (Vivace, Proteus).
pub const C: f64 = 11.35;
/// RTT-deviation coefficient of Proteus-S (per second of deviation).
pub const D_SCAVENGER: f64 = 1500.0;
/// RTT gradients smaller than this (s/s) are noise to Proteus.
pub const PROTEUS_GRADIENT_TOLERANCE: f64 = 0.01;
/// RTT deviations smaller than this fraction of the MI's mean RTT are noise to Proteus-S.
pub const PROTEUS_DEVIATION_TOLERANCE: f64 = 0.02;
/// Allegro's sigmoid steepness.
pub const ALLEGRO_ALPHA: f64 = 100.0;
/// The loss rate at which Allegro's utility collapses.
pub const ALLEGRO_LOSS_KNEE: f64 = 0.05;
/// Vivace's probing step.
pub const EPSILON: f64 = 0.05;
/// Allegro's smallest (and first) probing step, and its rate-adjusting unit.
pub const ALLEGRO_EPSILON_MIN: f64 = 0.01;
/// Allegro's largest probing step.
pub const ALLEGRO_EPSILON_MAX: f64 = 0.05;
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

/// Which member of the family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PccFlavour {
    /// PCC Allegro.
    Allegro,
    /// PCC Vivace.
    Vivace,
    /// PCC Proteus, the primary.
    Proteus,
    /// PCC Proteus, the scavenger.
    ProteusScavenger,
}

/// What one MI measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MiStats {
    /// Sending rate (packets/s).
    pub rate_pps: f64,
    /// Least-squares slope of RTT against send time (s/s).
    pub rtt_gradient: f64,
    /// Standard deviation of the MI's RTT samples (s).
    pub rtt_deviation_s: f64,
    /// Mean RTT of the MI's samples (s).
    pub mean_rtt_s: f64,
    /// Lost over resolved packets.
    pub loss: f64,
}

/// Vivace's utility of an MI sent at `rate_pps` with RTT gradient `drtt_dt` (s/s) and loss
/// rate `loss`.
pub fn utility(rate_pps: f64, drtt_dt: f64, loss: f64) -> f64 {
    let x = mbps(rate_pps);
    x.powf(T) - B * x * drtt_dt - C * x * loss
}

/// Allegro's utility: `T sigmoid(L - 0.05) - x L`, in Mbit/s.
pub fn allegro_utility(rate_pps: f64, loss: f64) -> f64 {
    let x = mbps(rate_pps);
    let sigmoid = 1.0 / (1.0 + (ALLEGRO_ALPHA * (loss - ALLEGRO_LOSS_KNEE)).exp());
    x * (1.0 - loss) * sigmoid - x * loss
}

/// Proteus's primary utility: Vivace's with the RTT gradient clipped at 0 and ignored under
/// its tolerance.
pub fn proteus_utility(rate_pps: f64, drtt_dt: f64, loss: f64) -> f64 {
    let gradient = if drtt_dt < PROTEUS_GRADIENT_TOLERANCE {
        0.0
    } else {
        drtt_dt
    };
    utility(rate_pps, gradient, loss)
}

/// Proteus's scavenger utility: the primary's minus `d x sigma(RTT)`, the deviation ignored
/// under its tolerance of the mean RTT.
pub fn scavenger_utility(s: &MiStats) -> f64 {
    let deviation = if s.rtt_deviation_s < PROTEUS_DEVIATION_TOLERANCE * s.mean_rtt_s {
        0.0
    } else {
        s.rtt_deviation_s
    };
    proteus_utility(s.rate_pps, s.rtt_gradient, s.loss) - D_SCAVENGER * mbps(s.rate_pps) * deviation
}

impl PccFlavour {
    /// The utility of one MI.
    pub fn utility(self, s: &MiStats) -> f64 {
        match self {
            PccFlavour::Allegro => allegro_utility(s.rate_pps, s.loss),
            PccFlavour::Vivace => utility(s.rate_pps, s.rtt_gradient, s.loss),
            PccFlavour::Proteus => proteus_utility(s.rate_pps, s.rtt_gradient, s.loss),
            PccFlavour::ProteusScavenger => scavenger_utility(s),
        }
    }

    /// The probing step a trial starts with.
    fn first_epsilon(self) -> f64 {
        match self {
            PccFlavour::Allegro => ALLEGRO_EPSILON_MIN,
            _ => EPSILON,
        }
    }
}

fn vivace() -> PccFlavour {
    PccFlavour::Vivace
}

fn vivace_epsilon() -> f64 {
    EPSILON
}

fn mbps(rate_pps: f64) -> f64 {
    rate_pps * BYTES_PER_PACKET_BITS / 1e6
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

/// Mean and population standard deviation of the second values (0, 0 when empty).
fn mean_and_deviation(points: &[(f64, f64)]) -> (f64, f64) {
    if points.is_empty() {
        return (0.0, 0.0);
    }
    let n = points.len() as f64;
    let mean = points.iter().map(|p| p.1).sum::<f64>() / n;
    let var = points.iter().map(|p| (p.1 - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt())
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

impl Mi {
    /// What the MI measured, once some of its packets came back.
    fn stats(&self) -> Option<MiStats> {
        let resolved = (self.acked + self.lost) as f64;
        if resolved == 0.0 {
            return None;
        }
        let (mean_rtt_s, rtt_deviation_s) = mean_and_deviation(&self.rtts);
        Some(MiStats {
            rate_pps: self.rate_pps,
            rtt_gradient: slope(&self.rtts),
            rtt_deviation_s,
            mean_rtt_s,
            loss: self.lost as f64 / resolved,
        })
    }
}

/// Where the rate search stands.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
enum Phase {
    /// Doubling until utility falls.
    Starting,
    /// Two randomized pairs around the base rate.
    Probing,
    /// Moving in the direction the trial chose.
    Moving,
}

/// A PCC sender's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pcc {
    /// Absent in snapshots from before the family (they are Vivace's).
    #[serde(default = "vivace")]
    flavour: PccFlavour,
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
    /// The probing step of the current trial.
    #[serde(default = "vivace_epsilon")]
    epsilon: f64,
    /// Vivace's confidence amplifier; Allegro's step count in Moving.
    amplifier: f64,
    direction: f64,
    boundary_hits: u32,
    rng: CcRng,
}

impl Pcc {
    /// A fresh sender of `flavour` whose probing order is drawn from `seed` (flows of one run
    /// should differ).
    pub fn new(flavour: PccFlavour, seed: u64) -> Self {
        Self {
            flavour,
            phase: Phase::Starting,
            rate_pps: START_RATE_PPS,
            sending_pps: START_RATE_PPS,
            srtt: Srtt::default(),
            pending: VecDeque::new(),
            plan: VecDeque::new(),
            probes: Vec::new(),
            last: None,
            epsilon: flavour.first_epsilon(),
            amplifier: 1.0,
            direction: 0.0,
            boundary_hits: 0,
            rng: CcRng::seeded(seed),
        }
    }

    /// A fresh sender of `flavour` with the fixed probing order of an unseeded run.
    pub fn unseeded(flavour: PccFlavour) -> Self {
        Self {
            rng: CcRng::from_state(0x9E37_79B9_7F4A_7C15),
            ..Self::new(flavour, 0)
        }
    }

    /// Which member of the family.
    pub fn flavour(&self) -> PccFlavour {
        self.flavour
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
        let Some(stats) = mi.stats() else {
            // Nothing came back (e.g. an MI of an off period): a probing round that lost one of
            // its MIs starts over, or it would wait for it forever.
            if self.phase == Phase::Probing {
                self.begin_probing();
            }
            return;
        };
        let u = self.flavour.utility(&stats);
        let same = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
        // MIs sent before the last decision (at a rate the search has left) are not scored.
        let current = match self.phase {
            Phase::Starting => self.last.is_none_or(|(r, _)| mi.rate_pps > r),
            Phase::Probing => {
                let (r, e) = (self.rate_pps, self.epsilon);
                same(mi.rate_pps, r * (1.0 + e)) || same(mi.rate_pps, r * (1.0 - e))
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
                    // Allegro returns to the last rate that improved; Vivace stays.
                    if self.flavour == PccFlavour::Allegro {
                        self.rate_pps = r0;
                    }
                    self.amplifier = 1.0;
                    self.boundary_hits = 0;
                    self.begin_probing();
                } else {
                    self.last = Some((mi.rate_pps, u));
                    match self.flavour {
                        PccFlavour::Allegro => self.allegro_step(),
                        _ => {
                            let gamma = (u - u0) / mbps(mi.rate_pps - r0);
                            self.step(gamma);
                        }
                    }
                }
            }
        }
    }

    fn begin_probing(&mut self) {
        self.phase = Phase::Probing;
        self.probes.clear();
        self.plan.clear();
        let (up, down) = (
            self.rate_pps * (1.0 + self.epsilon),
            self.rate_pps * (1.0 - self.epsilon),
        );
        for _ in 0..2 {
            if self.rng.coin() {
                self.plan.extend([up, down]);
            } else {
                self.plan.extend([down, up]);
            }
        }
    }

    fn decide_from_probes(&mut self) {
        let (r, e) = (self.rate_pps, self.epsilon);
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
        if !better_up.iter().all(|&x| x == better_up[0]) {
            if self.flavour == PccFlavour::Allegro {
                self.epsilon = (self.epsilon + ALLEGRO_EPSILON_MIN).min(ALLEGRO_EPSILON_MAX);
            }
            self.begin_probing();
            return;
        }
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
        self.phase = Phase::Moving;
        // The next MI, at the new rate, is compared with the better probe.
        let better = if up >= down {
            (r * (1.0 + e), up)
        } else {
            (r * (1.0 - e), down)
        };
        match self.flavour {
            PccFlavour::Allegro => {
                self.direction = if better_up[0] { 1.0 } else { -1.0 };
                self.epsilon = ALLEGRO_EPSILON_MIN;
                self.amplifier = 0.0;
                self.rate_pps = better.0;
                self.last = Some(better);
                self.allegro_step();
            }
            _ => {
                let gamma = (up - down) / mbps(2.0 * e * r);
                self.step(gamma);
                self.last = Some(better);
            }
        }
    }

    /// Allegro's rate adjusting: the n-th step in a direction changes the rate by
    /// `n e_min` of it.
    fn allegro_step(&mut self) {
        self.amplifier += 1.0;
        let factor = 1.0 + self.direction * self.amplifier * ALLEGRO_EPSILON_MIN;
        self.rate_pps = (self.rate_pps * factor.max(0.5)).max(MIN_RATE_PPS);
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
        let mut v = Pcc {
            rate_pps: 100.0,
            ..Pcc::unseeded(PccFlavour::Vivace)
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
    fn allegro_and_proteus_utilities_hand_values() {
        // 100 pkt/s = 1.2 Mbit/s at 1% loss: 1.2 x 0.99 / (1 + e^(100 (0.01 - 0.05))) - 0.012.
        let u = allegro_utility(100.0, 0.01);
        let expect = 1.2 * 0.99 / (1.0 + (-4.0f64).exp()) - 1.2 * 0.01;
        assert!((u - expect).abs() < 1e-12, "{u}");
        // Past the 5% knee the utility collapses.
        assert!(allegro_utility(100.0, 0.08) < 0.0);
        // Proteus: a negative or small gradient costs nothing; a larger one as Vivace's.
        assert_eq!(proteus_utility(100.0, -0.5, 0.0), utility(100.0, 0.0, 0.0));
        assert_eq!(proteus_utility(100.0, 0.005, 0.0), utility(100.0, 0.0, 0.0));
        assert_eq!(proteus_utility(100.0, 0.05, 0.0), utility(100.0, 0.05, 0.0));
        // The scavenger pays 1500 x 1.2 x sigma when sigma is 2% of the mean RTT or more.
        let s = MiStats {
            rate_pps: 100.0,
            rtt_gradient: 0.0,
            rtt_deviation_s: 0.004,
            mean_rtt_s: 0.1,
            loss: 0.0,
        };
        let expect = utility(100.0, 0.0, 0.0) - 1500.0 * 1.2 * 0.004;
        assert!((scavenger_utility(&s) - expect).abs() < 1e-12);
        let calm = MiStats {
            rtt_deviation_s: 0.001,
            ..s
        };
        assert_eq!(scavenger_utility(&calm), utility(100.0, 0.0, 0.0));
        assert_eq!(
            mean_and_deviation(&[(0.0, 1.0), (1.0, 3.0)]),
            (2.0, 1.0),
            "population deviation"
        );
    }

    #[test]
    fn allegro_moves_in_growing_steps_and_widens_a_disagreeing_trial() {
        let mut p = Pcc {
            rate_pps: 100.0,
            ..Pcc::unseeded(PccFlavour::Allegro)
        };
        p.begin_probing();
        // Two pairs that disagree: the next trial probes 0.02 instead of 0.01.
        p.probes = vec![(101.0, 2.0), (99.0, 1.0), (101.0, 1.0), (99.0, 2.0)];
        p.decide_from_probes();
        assert_eq!(p.phase, Phase::Probing);
        assert!((p.epsilon - 0.02).abs() < 1e-12);
        // Two pairs that agree upward: the rate moves to r (1 + e) and on by 1%, 2%, 3%.
        p.probes = vec![(102.0, 2.0), (98.0, 1.0), (98.0, 1.0), (102.0, 2.0)];
        p.decide_from_probes();
        assert_eq!(p.phase, Phase::Moving);
        assert!(
            (p.epsilon - 0.01).abs() < 1e-12,
            "the next trial starts small"
        );
        assert!((p.rate_pps - 102.0 * 1.01).abs() < 1e-9, "{}", p.rate_pps);
        p.allegro_step();
        assert!((p.rate_pps - 102.0 * 1.01 * 1.02).abs() < 1e-9);
        p.allegro_step();
        assert!((p.rate_pps - 102.0 * 1.01 * 1.02 * 1.03).abs() < 1e-9);
    }

    #[test]
    fn a_vivace_snapshot_from_before_the_family_loads_as_vivace() {
        let mut json = serde_json::to_value(super::super::ClassicCc::Pcc(Pcc::new(
            PccFlavour::Vivace,
            3,
        )))
        .unwrap();
        let state = json["Pcc"].take();
        let mut old = state.as_object().unwrap().clone();
        old.remove("flavour");
        old.remove("epsilon");
        let text = serde_json::json!({ "Vivace": old }).to_string();
        let back: super::super::ClassicCc = serde_json::from_str(&text).expect("old snapshot");
        assert_eq!(
            back,
            super::super::ClassicCc::Pcc(Pcc::new(PccFlavour::Vivace, 3))
        );
    }

    #[test]
    fn step_is_amplified_and_bounded() {
        let mut v = Pcc {
            rate_pps: 100.0,
            ..Pcc::unseeded(PccFlavour::Vivace)
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
