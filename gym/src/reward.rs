//! Per-MI rewards: Aurora's linear reward and MOCC's normalized, objective-weighted reward.

use crate::team::TeamOutcome;
use serde::{Deserialize, Serialize};

/// What one MI achieved, in the units the rewards use.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct MiOutcome {
    /// Throughput as the metrics version defines `recv rate` (packets/s); Aurora's reward uses it.
    pub throughput_pps: f64,
    /// Acknowledged packets per second; the MOCC reward normalizes it by the capacity.
    pub delivered_pps: f64,
    /// Mean RTT of the MI's samples (s), 0 without samples.
    pub mean_rtt_s: f64,
    /// Loss ratio of the MI.
    pub loss: f64,
    /// Packets lost per second of sending: the loss ratio times the sending rate (Orca's
    /// `loss_rate`).
    pub lost_pps: f64,
    /// Bottleneck capacity during the MI (packets/s).
    pub capacity_pps: f64,
    /// Propagation RTT of the path (s).
    pub base_rtt_s: f64,
}

impl MiOutcome {
    /// The outcome of a closed MI on a path of `capacity_pps` and propagation RTT
    /// `base_rtt_s`, with throughput as `metrics` defines it: the one conversion from an MI's
    /// raw statistics, simulated or measured on a real path.
    pub fn of_mi(
        mi: &mocc_policy::MonitorInterval,
        metrics: mocc_policy::MetricsVersion,
        capacity_pps: f64,
        base_rtt_s: f64,
    ) -> Self {
        Self {
            throughput_pps: metrics.throughput_pps(mi),
            delivered_pps: mi.throughput_pps(),
            mean_rtt_s: mi.avg_latency_s(),
            loss: mi.loss_ratio(),
            lost_pps: mi.loss_ratio() * mi.send_rate_pps(),
            capacity_pps,
            base_rtt_s,
        }
    }
}

/// The reward of an MI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewardKind {
    /// `0.001 * (10 * throughput_pps - 1000 * mean_rtt_s - 2000 * loss)` (Aurora).
    #[default]
    Aurora,
    /// `w_thr * delivered/capacity + w_lat * base_rtt/mean_rtt + w_loss * (1 - loss)`, each
    /// term clamped to [0, 1] (MOCC).
    Mocc,
    /// Astraea's team reward (Liao et al., EuroSys 2024), the same for every flow on the link:
    /// `-0.02 m1 + 0.1 m2 + 0.01 m4 - m5 - 0.001 trigger`, floored at -0.5 ([`astraea_reward`]).
    /// The objective is not an input.
    Astraea,
    /// Orca's reward (Abbasloo et al., SIGCOMM 2020, as its released agent computes it):
    /// `(delivered - 5 lost) / capacity * min(1, 1.25 base_rtt / mean_rtt)` ([`orca_reward`]).
    /// The objective is not an input.
    Orca,
}

impl RewardKind {
    /// Reward of one MI under objective `w` (used by `mocc` only); Astraea's needs the team's
    /// outcome as well (`team`; without one it is 0).
    pub fn reward(self, o: &MiOutcome, w: &[f64; 3], team: Option<&AstraeaInputs>) -> f64 {
        match self {
            RewardKind::Aurora => aurora_reward(o),
            RewardKind::Mocc => mocc_reward(o, w),
            RewardKind::Astraea => team.map_or(0.0, astraea_reward),
            RewardKind::Orca => orca_reward(o),
        }
    }

    /// Whether the reward looks at every flow on the link.
    pub fn needs_team(self) -> bool {
        self == RewardKind::Astraea
    }
}

/// What the MOCC reward's throughput term divides a flow's delivery by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewardCapacity {
    /// The bottleneck's capacity (MOCC): on a link of N flows a flow at its fair share earns
    /// about `w_thr / N` from throughput, so sharing weighs latency N times more than alone.
    #[default]
    Link,
    /// The flow's fair share, the capacity over the flows on the link at the MI's end (every
    /// sender started and not stopped, learned or classic, an on-off one in its off phase
    /// too), with the term still clamped to 1: a flow gains nothing above its share, and N
    /// flows weigh throughput against latency as a lone flow does. The same as `link` for a
    /// lone flow.
    FairShare,
}

impl RewardCapacity {
    /// Whether this is the default (`link`).
    pub fn is_link(&self) -> bool {
        *self == RewardCapacity::Link
    }

    /// The capacity the throughput term divides by, for a link of `capacity_pps` carrying
    /// `flows` flows (at least 1 counted).
    pub fn of(self, capacity_pps: f64, flows: usize) -> f64 {
        match self {
            RewardCapacity::Link => capacity_pps,
            RewardCapacity::FairShare => capacity_pps / flows.max(1) as f64,
        }
    }
}

/// Aurora's reward.
pub fn aurora_reward(o: &MiOutcome) -> f64 {
    0.001 * (10.0 * o.throughput_pps - 1000.0 * o.mean_rtt_s - 2000.0 * o.loss)
}

/// Orca's weight of lost packets against delivered ones.
pub const ORCA_LOSS_WEIGHT: f64 = 5.0;
/// Orca's delay margin: RTTs up to this multiple of the base RTT cost nothing.
pub const ORCA_DELAY_MARGIN: f64 = 1.25;

/// Orca's reward: `(delivered_pps - 5 lost_pps) / capacity` times the delay factor
/// `min(1, 1.25 base_rtt / mean_rtt)` (1 without RTT samples). Orca divides by the highest
/// delivery rate the flow has seen; the simulator knows the capacity, which is that rate for a
/// flow that ever fills the link, and keeps the scale of every episode the same.
pub fn orca_reward(o: &MiOutcome) -> f64 {
    if o.capacity_pps <= 0.0 {
        return 0.0;
    }
    let delay_factor = if o.mean_rtt_s > 0.0 {
        (ORCA_DELAY_MARGIN * o.base_rtt_s / o.mean_rtt_s).min(1.0)
    } else {
        1.0
    };
    (o.delivered_pps - ORCA_LOSS_WEIGHT * o.lost_pps) / o.capacity_pps * delay_factor
}

/// The three normalized terms of the MOCC reward, each in [0, 1]:
/// throughput / capacity, base RTT / mean RTT (0 when nothing was acknowledged), 1 - loss.
pub fn mocc_terms(o: &MiOutcome) -> [f64; 3] {
    let thr = if o.capacity_pps > 0.0 {
        (o.delivered_pps / o.capacity_pps).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let lat = if o.mean_rtt_s > 0.0 {
        (o.base_rtt_s / o.mean_rtt_s).clamp(0.0, 1.0)
    } else {
        0.0
    };
    [thr, lat, (1.0 - o.loss).clamp(0.0, 1.0)]
}

/// MOCC's reward.
pub fn mocc_reward(o: &MiOutcome, w: &[f64; 3]) -> f64 {
    let t = mocc_terms(o);
    w[0] * t[0] + w[1] * t[1] + w[2] * t[2]
}

/// What Astraea's reward reads of one MI: the team's outcome, the shared queue's delay, the
/// path's one-way delay, and whether the agent changed its rate.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct AstraeaInputs {
    /// Every flow on the link during the MI.
    pub team: TeamOutcome,
    /// Queueing delay the MI saw: its mean RTT over the base RTT (s, >= 0).
    pub queue_delay_s: f64,
    /// One-way propagation delay (s).
    pub one_way_delay_s: f64,
    /// Whether the agent's last action changed its rate (Astraea's `trigger`).
    pub trigger: bool,
}

/// Astraea's reward, as its authors' released code computes it (the team reward of
/// sys-netai/spine-open-source's `definitions.py`, its "astraea's reward"), in this gym's
/// rate-based terms:
///
/// - `m1 = (sum of the flows' pacing / capacity) x latency / one-way delay / sqrt(N)`, the
///   latency being the queueing delay less 0.3 x the one-way delay (at least 0);
/// - `m2 = min(1, delivered / capacity)`;
/// - fairness `F = max(0.5, 1 - std / sum)` of the flows' delivery rates;
/// - `m4 = (1 - s) m2`, `s` the flows' mean standard deviation of their window (delivery rate
///   x RTT, packets) over their last MIs / 100, taken as 1 above 1 or when `F < 0.96`;
/// - `m5` the flows' mean loss ratio; `trigger` 1 when the agent changed its rate.
pub fn astraea_reward(i: &AstraeaInputs) -> f64 {
    let t = &i.team;
    let owd = i.one_way_delay_s.max(1e-9);
    let latency = (i.queue_delay_s - 0.3 * owd).max(0.0);
    let m1 = t.pacing_over_capacity * latency / owd / (t.flows.max(1) as f64).sqrt();
    let m2 = t.utilization.min(1.0);
    let fairness = t.spread_fairness.max(0.5);
    let spread = t.window_std_pkts / 100.0;
    let spread = if spread > 1.0 || fairness < 0.96 {
        1.0
    } else {
        spread
    };
    let m4 = (1.0 - spread) * m2;
    let m5 = t.mean_loss;
    let trigger = if i.trigger { 1.0 } else { 0.0 };
    (-0.02 * m1 + 0.1 * m2 + 0.01 * m4 - m5 - 0.001 * trigger).max(-0.5)
}

/// Optional reward terms for sharing a link, added to the base reward; each is off (weight 0)
/// by default.
///
/// - `fair_share`: `-fair_share * min(1, |delivered - C/N| / (C/N))`, where `C` is the
///   bottleneck capacity over the MI and `N` the number of flows on the link (learned and
///   classic); 0 exactly at the fair share (Sage rewards throughput near `C/N`).
/// - `starvation`: `-starvation * max(0, 1 - delivered / (C/N))`: the one-sided form, a
///   penalty only below the fair share, so a flow may take more when the others leave it
///   unused.
/// - `stability`: `-stability * min(1, |ln(rate / previous rate)|)`: a penalty on rate
///   oscillation (Astraea's stability objective).
/// - `team_fairness`: `team_fairness * (J - 1)`, `J` Jain's index of the delivery rates of
///   every flow on the link (learned and classic) during the MI: 0 when they share evenly,
///   down to `team_fairness * (1/N - 1)` when one takes all; the same for every flow, so each
///   is rewarded for the link's fairness, not its own share.
/// - `queue_delay`: `-queue_delay * min(1, (mean RTT - base RTT) / base RTT)`: the shared
///   queue's delay, which every flow on the link pays.
///
/// With `shared_only`, the fair-share and starvation terms count only while another sender of
/// any kind is on the link (`N >= 2`, as `N` counts): a lone flow's fair share is the whole
/// capacity, where they would penalize the headroom a latency-heavy objective keeps, so its
/// reward stays its objective's.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RewardTerms {
    /// Weight of the fair-share term (>= 0).
    #[serde(default)]
    pub fair_share: f64,
    /// Weight of the starvation term (>= 0).
    #[serde(default)]
    pub starvation: f64,
    /// Weight of the stability term (>= 0).
    #[serde(default)]
    pub stability: f64,
    /// Weight of the team fairness term (>= 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub team_fairness: f64,
    /// Weight of the queue-delay term (>= 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub queue_delay: f64,
    /// Whether the fair-share and starvation terms count only on a shared link.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shared_only: bool,
}

/// What the sharing terms look at for one MI.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SharingOutcome {
    /// Packets per second the flow had acknowledged.
    pub delivered_pps: f64,
    /// Capacity over the number of flows on the link (packets/s).
    pub fair_share_pps: f64,
    /// Senders on the link (`N`: learned and any other kind).
    pub flows: usize,
    /// The pacing rate during the MI and during the one before (packets/s).
    pub rate_pps: f64,
    /// The previous MI's pacing rate (packets/s).
    pub previous_rate_pps: f64,
    /// Jain's index of every flow's delivery rate during the MI (1 when unknown).
    pub team_jain: f64,
    /// Mean RTT over the base RTT, less 1 (the queue's delay in base RTTs; 0 without samples).
    pub queue_delay_ratio: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl RewardTerms {
    /// Whether every term is off.
    pub fn is_off(&self) -> bool {
        self.fair_share == 0.0
            && self.starvation == 0.0
            && self.stability == 0.0
            && self.team_fairness == 0.0
            && self.queue_delay == 0.0
    }

    /// Whether a term looks at every flow on the link.
    pub fn needs_team(&self) -> bool {
        self.team_fairness > 0.0
    }

    /// Checks the weights.
    pub fn validate(&self) -> Result<(), crate::error::ScenarioError> {
        for (name, w) in [
            ("fair_share", self.fair_share),
            ("starvation", self.starvation),
            ("stability", self.stability),
            ("team_fairness", self.team_fairness),
            ("queue_delay", self.queue_delay),
        ] {
            if !(w.is_finite() && w >= 0.0) {
                return Err(crate::error::ScenarioError::invalid(
                    format!("reward_terms.{name}"),
                    format!("must be >= 0 (got {w})"),
                ));
            }
        }
        Ok(())
    }

    /// The sum of the enabled terms (<= 0).
    pub fn value(&self, o: &SharingOutcome) -> f64 {
        let mut total = 0.0;
        let sharing = o.fair_share_pps > 0.0 && (o.flows >= 2 || !self.shared_only);
        if self.fair_share > 0.0 && sharing {
            let off = ((o.delivered_pps - o.fair_share_pps) / o.fair_share_pps).abs();
            total -= self.fair_share * off.min(1.0);
        }
        if self.starvation > 0.0 && sharing {
            let short = 1.0 - o.delivered_pps / o.fair_share_pps;
            total -= self.starvation * short.clamp(0.0, 1.0);
        }
        if self.stability > 0.0 && o.rate_pps > 0.0 && o.previous_rate_pps > 0.0 {
            let change = (o.rate_pps / o.previous_rate_pps).ln().abs();
            total -= self.stability * change.min(1.0);
        }
        if self.team_fairness > 0.0 {
            total += self.team_fairness * (o.team_jain.clamp(0.0, 1.0) - 1.0);
        }
        if self.queue_delay > 0.0 {
            total -= self.queue_delay * o.queue_delay_ratio.clamp(0.0, 1.0);
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sharing_terms_hand_computed() {
        let terms = RewardTerms {
            fair_share: 0.5,
            stability: 0.2,
            ..RewardTerms::default()
        };
        // 2 flows on 400 pkt/s: fair share 200; delivered 150 is 25% off: -0.5 * 0.25.
        // Rate 110 after 100: |ln 1.1| = 0.09531: -0.2 * 0.09531.
        let o = SharingOutcome {
            delivered_pps: 150.0,
            fair_share_pps: 200.0,
            flows: 2,
            rate_pps: 110.0,
            previous_rate_pps: 100.0,
            team_jain: 1.0,
            queue_delay_ratio: 0.0,
        };
        let expect = -0.125 - 0.2 * 1.1f64.ln();
        assert!((terms.value(&o) - expect).abs() < 1e-12);
        // Far above the fair share and a tenfold jump: both terms saturate at their weights.
        let wild = SharingOutcome {
            delivered_pps: 900.0,
            rate_pps: 1000.0,
            ..o
        };
        assert!((terms.value(&wild) + 0.7).abs() < 1e-12);
        // Exactly fair and steady: nothing.
        let calm = SharingOutcome {
            delivered_pps: 200.0,
            rate_pps: 100.0,
            ..o
        };
        assert_eq!(terms.value(&calm), 0.0);
        assert_eq!(RewardTerms::default().value(&o), 0.0);
        for bad in [
            RewardTerms {
                fair_share: -1.0,
                ..RewardTerms::default()
            },
            RewardTerms {
                starvation: -0.1,
                ..RewardTerms::default()
            },
            RewardTerms {
                stability: f64::NAN,
                ..RewardTerms::default()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?} accepted");
        }
        // Starvation: 150 of a 200 fair share is 25% short; above the share, nothing.
        let starving = RewardTerms {
            starvation: 0.4,
            ..RewardTerms::default()
        };
        assert!((starving.value(&o) + 0.1).abs() < 1e-12);
        assert_eq!(starving.value(&wild), 0.0);
        let silent = SharingOutcome {
            delivered_pps: 0.0,
            ..o
        };
        assert!((starving.value(&silent) + 0.4).abs() < 1e-12);
        // Shared only: with two flows on the link as before (0.4 * 25% short; the fair-share
        // term 0.5 * 25% off); alone (the whole 400 pkt/s its share, delivered 300) the two
        // terms count nothing where they would take 0.4 * 25% and 0.5 * 25%; stability stays.
        let shared = RewardTerms {
            fair_share: 0.5,
            starvation: 0.4,
            shared_only: true,
            ..RewardTerms::default()
        };
        assert!((shared.value(&o) + 0.1 + 0.125).abs() < 1e-12);
        let alone = SharingOutcome {
            delivered_pps: 300.0,
            fair_share_pps: 400.0,
            flows: 1,
            rate_pps: 100.0,
            ..o
        };
        assert_eq!(shared.value(&alone), 0.0);
        let everywhere = RewardTerms {
            shared_only: false,
            ..shared
        };
        assert!((everywhere.value(&alone) + 0.1 + 0.125).abs() < 1e-12);
        let steady = RewardTerms {
            stability: 0.2,
            ..shared
        };
        let jump = SharingOutcome {
            rate_pps: 110.0,
            ..alone
        };
        assert!((steady.value(&jump) + 0.2 * 1.1f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn fair_share_capacity_hand_computed() {
        // 3 flows on 600 pkt/s: the throughput term divides by 200, a lone flow's by 600.
        assert_eq!(RewardCapacity::FairShare.of(600.0, 3), 200.0);
        assert_eq!(RewardCapacity::FairShare.of(600.0, 1), 600.0);
        assert_eq!(RewardCapacity::FairShare.of(600.0, 0), 600.0);
        assert_eq!(RewardCapacity::Link.of(600.0, 3), 600.0);
        // Delivering 150 of a 200 share: 0.75 of the throughput weight; 300 saturates at 1.
        let w = [0.5, 0.3, 0.2];
        let o = MiOutcome {
            delivered_pps: 150.0,
            mean_rtt_s: 0.4,
            capacity_pps: RewardCapacity::FairShare.of(600.0, 3),
            base_rtt_s: 0.2,
            ..Default::default()
        };
        // 0.5*0.75 + 0.3*0.5 + 0.2*1 = 0.725
        assert!((mocc_reward(&o, &w) - 0.725).abs() < 1e-12);
        let greedy = MiOutcome {
            delivered_pps: 300.0,
            ..o
        };
        assert!((mocc_reward(&greedy, &w) - 0.85).abs() < 1e-12);
    }

    #[test]
    fn aurora_reward_hand_computed() {
        let o = MiOutcome {
            throughput_pps: 100.0,
            mean_rtt_s: 0.2,
            loss: 0.01,
            ..Default::default()
        };
        // 0.001 * (1000 - 200 - 20) = 0.78
        assert!((aurora_reward(&o) - 0.78).abs() < 1e-12);
    }

    #[test]
    fn orca_reward_hand_computed() {
        // Within the delay margin: (80 - 5 * 2) / 100 = 0.7.
        let o = MiOutcome {
            delivered_pps: 80.0,
            lost_pps: 2.0,
            capacity_pps: 100.0,
            base_rtt_s: 0.1,
            mean_rtt_s: 0.12,
            ..Default::default()
        };
        assert!((orca_reward(&o) - 0.7).abs() < 1e-12);
        assert_eq!(
            RewardKind::Orca.reward(&o, &[1.0, 0.0, 0.0], None),
            orca_reward(&o)
        );
        // Twice the base RTT: times 1.25 * 0.1 / 0.2 = 0.625.
        let queued = MiOutcome {
            mean_rtt_s: 0.2,
            ..o
        };
        assert!((orca_reward(&queued) - 0.7 * 0.625).abs() < 1e-12);
        // Losses weigh five times a delivery: the reward turns negative.
        let lossy = MiOutcome {
            lost_pps: 20.0,
            ..o
        };
        assert!((orca_reward(&lossy) - (-0.2)).abs() < 1e-12);
        // Without RTT samples the delay factor is 1; without capacity the reward is 0.
        let silent = MiOutcome {
            mean_rtt_s: 0.0,
            ..o
        };
        assert!((orca_reward(&silent) - 0.7).abs() < 1e-12);
        let none = MiOutcome {
            capacity_pps: 0.0,
            ..o
        };
        assert_eq!(orca_reward(&none), 0.0);
    }

    #[test]
    fn mocc_reward_hand_computed_and_bounded() {
        let o = MiOutcome {
            throughput_pps: 49.0,
            delivered_pps: 50.0,
            mean_rtt_s: 0.4,
            loss: 0.1,
            lost_pps: 5.0,
            capacity_pps: 100.0,
            base_rtt_s: 0.2,
        };
        let w = [0.5, 0.3, 0.2];
        // 0.5*0.5 + 0.3*0.5 + 0.2*0.9 = 0.58
        assert!((mocc_reward(&o, &w) - 0.58).abs() < 1e-12);
        let silent = MiOutcome {
            capacity_pps: 100.0,
            base_rtt_s: 0.2,
            ..Default::default()
        };
        assert!((mocc_reward(&silent, &w) - 0.2).abs() < 1e-12);
        let burst = MiOutcome {
            delivered_pps: 300.0,
            ..o
        };
        assert!(mocc_reward(&burst, &w) <= 1.0);
    }

    #[test]
    fn team_terms_hand_computed() {
        let terms = RewardTerms {
            team_fairness: 0.4,
            queue_delay: 0.5,
            ..RewardTerms::default()
        };
        assert!(terms.needs_team() && !terms.is_off());
        let o = SharingOutcome {
            delivered_pps: 100.0,
            fair_share_pps: 100.0,
            flows: 2,
            rate_pps: 100.0,
            previous_rate_pps: 100.0,
            team_jain: 0.8,
            queue_delay_ratio: 0.3,
        };
        // 0.4 (0.8 - 1) - 0.5 * 0.3.
        assert!((terms.value(&o) - (-0.08 - 0.15)).abs() < 1e-12);
        // A queue over twice the base RTT costs the whole weight.
        let deep = SharingOutcome {
            queue_delay_ratio: 2.5,
            team_jain: 1.0,
            ..o
        };
        assert!((terms.value(&deep) + 0.5).abs() < 1e-12);
    }

    #[test]
    fn astraea_reward_hand_computed() {
        let team = TeamOutcome {
            flows: 4,
            jain_index: 0.99,
            spread_fairness: 0.97,
            utilization: 0.9,
            mean_loss: 0.01,
            pacing_over_capacity: 1.2,
            window_std_pkts: 20.0,
        };
        let i = AstraeaInputs {
            team,
            queue_delay_s: 0.013,
            one_way_delay_s: 0.01,
            trigger: true,
        };
        // latency 0.013 - 0.003 = 0.01; m1 = 1.2 x 0.01 / 0.01 / 2 = 0.6; m2 = 0.9;
        // m4 = (1 - 0.2) x 0.9 = 0.72; m5 = 0.01:
        // -0.012 + 0.09 + 0.0072 - 0.01 - 0.001.
        let expect = -0.02 * 0.6 + 0.1 * 0.9 + 0.01 * 0.72 - 0.01 - 0.001;
        assert!((astraea_reward(&i) - expect).abs() < 1e-12);
        // Unfair flows (F < 0.96) earn no stability; a huge loss is floored at -0.5.
        let unfair = AstraeaInputs {
            team: TeamOutcome {
                spread_fairness: 0.9,
                ..team
            },
            ..i
        };
        let expect = -0.02 * 0.6 + 0.1 * 0.9 - 0.01 - 0.001;
        assert!((astraea_reward(&unfair) - expect).abs() < 1e-12);
        let lossy = AstraeaInputs {
            team: TeamOutcome {
                mean_loss: 0.9,
                ..team
            },
            ..i
        };
        assert_eq!(astraea_reward(&lossy), -0.5);
        assert_eq!(
            RewardKind::Astraea.reward(&MiOutcome::default(), &[0.0; 3], Some(&i)),
            astraea_reward(&i)
        );
    }
}
