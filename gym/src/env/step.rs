//! What a step gives: the agent's action, each closed MI's statistics and reward, the probe
//! MIs a step closed.

use crate::reward::MiOutcome;
use mocc_policy::{Mode, MonitorInterval};
use serde::Serialize;

/// What the agent does for the next MI.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action {
    /// Aurora's action: the rate changes by the scenario's rate rule.
    Delta(f64),
    /// Pace at this rate (packets/s), bypassing the rule's clamps. Only the simulator's hard
    /// limits apply ([`MIN_SIM_RATE_PPS`], [`MAX_SIM_RATE_PPS`]); NaN keeps the current rate.
    Rate(f64),
}

impl StepInfo {
    /// The statistics of a closed MI with `outcome` (see [`MiOutcome::of_mi`]), sent at
    /// `rate_pps` and rewarded `reward`.
    pub fn new(mi: &MonitorInterval, outcome: &MiOutcome, rate_pps: f64, reward: f64) -> Self {
        Self {
            time_s: mi.send_end_s,
            duration_s: mi.send_dur_s(),
            send_pps: mi.send_rate_pps(),
            throughput_pps: outcome.delivered_pps,
            metric_thr_pps: outcome.throughput_pps,
            mean_rtt_s: outcome.mean_rtt_s,
            loss: outcome.loss,
            utilization: if outcome.capacity_pps > 0.0 {
                outcome.delivered_pps / outcome.capacity_pps
            } else {
                0.0
            },
            capacity_pps: outcome.capacity_pps,
            base_rtt_s: outcome.base_rtt_s,
            rate_pps,
            reward,
        }
    }
}

/// A base-RTT probe MI a slot closed ([`Env::slot_probe_mis`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProbeMi {
    /// Its values as a step's (the reward is the one the MI would have given).
    pub info: StepInfo,
    /// The statistics its sender formed (what a controller is fed).
    pub mi: MonitorInterval,
    /// The sender's mode after the MI (always cooperative without `action.mode_switch`).
    pub mode: Mode,
}

/// Per-step statistics of the agent sender (Aurora's per-MI values).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct StepInfo {
    /// Time at the end of the MI (s).
    pub time_s: f64,
    /// MI length (s).
    pub duration_s: f64,
    /// Sending rate over the MI (packets/s).
    pub send_pps: f64,
    /// Acknowledged packets per second.
    pub throughput_pps: f64,
    /// Throughput as the scenario's metrics version defines it (Aurora's per-MI `recv rate`,
    /// one packet fewer than acknowledged); the `aurora` reward uses it.
    pub metric_thr_pps: f64,
    /// Mean RTT (s), 0 without samples.
    pub mean_rtt_s: f64,
    /// Loss ratio.
    pub loss: f64,
    /// Throughput / capacity.
    pub utilization: f64,
    /// Bottleneck capacity over the MI (packets/s).
    pub capacity_pps: f64,
    /// Propagation RTT (s).
    pub base_rtt_s: f64,
    /// Pacing rate the sender used during the MI (packets/s).
    pub rate_pps: f64,
    /// The MI's reward.
    pub reward: f64,
}

impl StepInfo {
    /// The names of [`StepInfo::fields`], in their order.
    pub const FIELD_NAMES: [&'static str; 12] = [
        "time_s",
        "duration_s",
        "send_pps",
        "throughput_pps",
        "metric_thr_pps",
        "mean_rtt_s",
        "loss",
        "utilization",
        "capacity_pps",
        "base_rtt_s",
        "rate_pps",
        "reward",
    ];

    /// Every field, in declaration order (what a test compares bit for bit or a table lists).
    pub fn fields(&self) -> [f64; 12] {
        [
            self.time_s,
            self.duration_s,
            self.send_pps,
            self.throughput_pps,
            self.metric_thr_pps,
            self.mean_rtt_s,
            self.loss,
            self.utilization,
            self.capacity_pps,
            self.base_rtt_s,
            self.rate_pps,
            self.reward,
        ]
    }
}

/// Result of one step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// Reward of the MI.
    pub reward: f64,
    /// The episode ended by the environment's dynamics (never, in these networks).
    pub terminated: bool,
    /// The episode hit its MI limit.
    pub truncated: bool,
    /// Statistics of the MI.
    pub info: StepInfo,
}

#[cfg(test)]
mod tests {
    use super::StepInfo;

    /// The names are the serialized field names, in the order of `fields()`.
    #[test]
    fn field_names_are_the_serialized_names_in_order() {
        let info = StepInfo {
            time_s: 1.0,
            duration_s: 2.0,
            send_pps: 3.0,
            throughput_pps: 4.0,
            metric_thr_pps: 5.0,
            mean_rtt_s: 6.0,
            loss: 7.0,
            utilization: 8.0,
            capacity_pps: 9.0,
            base_rtt_s: 10.0,
            rate_pps: 11.0,
            reward: 12.0,
        };
        let json = serde_json::to_value(info).expect("serializes");
        let map = json.as_object().expect("an object");
        assert_eq!(map.len(), StepInfo::FIELD_NAMES.len());
        for (name, value) in StepInfo::FIELD_NAMES.iter().zip(info.fields()) {
            assert_eq!(map[*name].as_f64(), Some(value), "{name}");
        }
    }
}
