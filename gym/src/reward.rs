//! Per-MI rewards: Aurora's linear reward and MOCC's normalized, objective-weighted reward.

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
    /// Bottleneck capacity during the MI (packets/s).
    pub capacity_pps: f64,
    /// Propagation RTT of the path (s).
    pub base_rtt_s: f64,
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
}

impl RewardKind {
    /// Reward of one MI under objective `w` (used by `mocc` only).
    pub fn reward(self, o: &MiOutcome, w: &[f64; 3]) -> f64 {
        match self {
            RewardKind::Aurora => aurora_reward(o),
            RewardKind::Mocc => mocc_reward(o, w),
        }
    }
}

/// Aurora's reward.
pub fn aurora_reward(o: &MiOutcome) -> f64 {
    0.001 * (10.0 * o.throughput_pps - 1000.0 * o.mean_rtt_s - 2000.0 * o.loss)
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn mocc_reward_hand_computed_and_bounded() {
        let o = MiOutcome {
            throughput_pps: 49.0,
            delivered_pps: 50.0,
            mean_rtt_s: 0.4,
            loss: 0.1,
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
}
