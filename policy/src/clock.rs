//! The agent's monitor-interval clock: warm-up, observation history, the next MI's length and
//! when to decide. One owner for what every learned sender does between decisions, whether it
//! runs in the gym (`mocc_gym::Env`), in a multi-flow experiment, or deployed
//! ([`crate::Controller`]).
//!
//! A connection starts with `warmup_mis` MIs at its start rate that are not recorded; the agent
//! decides at the end of the last of them on the empty history (at once when `warmup_mis = 0`),
//! and from then on every finished MI is recorded and followed by one decision. The first MIs
//! last `initial_delay_factor` one-way delays; once recorded MIs carry RTT samples, the next MI
//! lasts `rtt_factor` times the last sampled mean RTT. With `min_packets` no MI is shorter than
//! that many packets at the rate it is sent at.

use crate::features::MetricsVersion;
use crate::history::{ObservationBuilder, ObservationConfig};
use crate::mi::{MonitorInterval, MonitorIntervalConfig};
use serde::{Deserialize, Serialize};

/// One sender's MI clock and history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MiClock {
    sizing: MonitorIntervalConfig,
    warmup_mis: u32,
    history: ObservationBuilder,
    warmup_left: u32,
    rtt_based_s: f64,
    rtt_sampled: bool,
}

impl MiClock {
    /// A clock for an agent that observes `observation` (metrics as `version` defines them),
    /// sizes MIs by `sizing` and warms up for `warmup_mis` MIs. Call [`MiClock::reset`] before
    /// the first MI.
    pub fn new(
        observation: &ObservationConfig,
        version: MetricsVersion,
        sizing: MonitorIntervalConfig,
        warmup_mis: u32,
    ) -> Self {
        Self {
            sizing,
            warmup_mis,
            history: observation.builder(version),
            warmup_left: warmup_mis,
            rtt_based_s: 0.0,
            rtt_sampled: false,
        }
    }

    /// A clock continued after its warm-up, from a history and the RTT rule's next MI length
    /// (what a simulator snapshot keeps).
    pub fn resume(
        history: ObservationBuilder,
        sizing: MonitorIntervalConfig,
        warmup_mis: u32,
        rtt_based_s: f64,
    ) -> Self {
        Self {
            sizing,
            warmup_mis,
            history,
            warmup_left: 0,
            rtt_based_s,
            rtt_sampled: false,
        }
    }

    /// The same clock with `left` warm-up MIs still to run (a snapshot taken mid-warm-up).
    pub fn with_warmup_left(mut self, left: u32) -> Self {
        self.warmup_left = left;
        self
    }

    /// Warm-up MIs still to run.
    pub fn warmup_left(&self) -> u32 {
        self.warmup_left
    }

    /// Starts a new connection whose one-way delay is estimated at `one_way_delay_s` (0 when
    /// unknown): empty history, warm-up from the start. Returns whether the agent decides now,
    /// before the first MI (no warm-up).
    pub fn reset(&mut self, one_way_delay_s: f64) -> bool {
        self.history.reset();
        self.warmup_left = self.warmup_mis;
        self.rtt_based_s = self.sizing.initial_delay_factor * one_way_delay_s;
        self.rtt_sampled = false;
        self.warmup_left == 0
    }

    /// Closes an MI. A warm-up MI only counts down; any later MI is recorded in the history and,
    /// when it has RTT samples, sets the next MI's length. Returns whether the agent decides now.
    pub fn on_mi(&mut self, mi: &MonitorInterval) -> bool {
        if self.warmup_left > 0 {
            self.warmup_left -= 1;
            return self.warmup_left == 0;
        }
        self.history.record(mi);
        let rtt = mi.avg_latency_s();
        if rtt > 0.0 {
            self.rtt_based_s = self.sizing.rtt_factor * rtt;
            self.rtt_sampled = true;
        }
        true
    }

    /// Whether warm-up MIs remain.
    pub fn in_warmup(&self) -> bool {
        self.warmup_left > 0
    }

    /// The next MI's length when sent at `rate_pps`.
    pub fn next_duration_s(&self, rate_pps: f64) -> f64 {
        self.sizing.duration_s(self.rtt_based_s, rate_pps)
    }

    /// The next MI's length at `rate_pps` once a recorded MI had RTT samples; `None` before
    /// (the sender then sizes MIs from its own delay estimate, as [`MiClock::reset`] does).
    pub fn sampled_duration_s(&self, rate_pps: f64) -> Option<f64> {
        self.rtt_sampled.then(|| self.next_duration_s(rate_pps))
    }

    /// The RTT rule's next MI length, before the packet floor.
    pub fn rtt_based_duration_s(&self) -> f64 {
        self.rtt_based_s
    }

    /// The observation the next decision sees (raw, before normalization).
    pub fn observation(&self) -> &[f32] {
        self.history.observation()
    }

    /// The history.
    pub fn history(&self) -> &ObservationBuilder {
        &self.history
    }

    /// The MI sizing.
    pub fn sizing(&self) -> &MonitorIntervalConfig {
        &self.sizing
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mi::RttSummary;

    fn mi(rtt_s: f64) -> MonitorInterval {
        let samples: Vec<f64> = if rtt_s > 0.0 { vec![rtt_s] } else { Vec::new() };
        MonitorInterval {
            bytes_sent: 15_000.0,
            bytes_acked: 15_000.0,
            send_start_s: 0.0,
            send_end_s: 0.1,
            recv_start_s: 0.0,
            recv_end_s: 0.1,
            rtt: RttSummary::from_samples(&samples),
            ..MonitorInterval::default()
        }
    }

    fn clock(warmup: u32, min_packets: f64) -> MiClock {
        let sizing = MonitorIntervalConfig {
            min_packets,
            ..MonitorIntervalConfig::default()
        };
        MiClock::new(
            &ObservationConfig::default(),
            MetricsVersion::default(),
            sizing,
            warmup,
        )
    }

    #[test]
    fn warm_up_mis_are_not_recorded_and_the_last_one_decides() {
        let mut c = clock(2, 0.0);
        assert!(!c.reset(0.05));
        let empty = c.observation().to_vec();
        // 3 one-way delays of 50 ms.
        assert!((c.next_duration_s(100.0) - 0.15).abs() < 1e-12);
        assert!(!c.on_mi(&mi(0.2)));
        assert!(c.in_warmup());
        assert!(c.on_mi(&mi(0.2)));
        assert!(!c.in_warmup());
        assert_eq!(
            c.observation(),
            &empty[..],
            "warm-up MIs stay out of the history"
        );
        assert_eq!(c.sampled_duration_s(100.0), None);
        assert!(c.on_mi(&mi(0.2)));
        assert_ne!(c.observation(), &empty[..]);
        // Half the sampled RTT.
        assert_eq!(c.sampled_duration_s(100.0), Some(0.1));
    }

    #[test]
    fn without_warm_up_the_first_decision_precedes_the_first_mi() {
        let mut c = clock(0, 0.0);
        assert!(c.reset(0.02));
        assert!(c.on_mi(&mi(0.0)));
        // No RTT sample: the initial length stands.
        assert!((c.next_duration_s(50.0) - 0.06).abs() < 1e-12);
        assert!(c.on_mi(&mi(0.08)));
        assert!((c.rtt_based_duration_s() - 0.04).abs() < 1e-12);
    }

    #[test]
    fn the_packet_floor_lengthens_short_mis_at_low_rates() {
        let mut c = clock(0, 10.0);
        c.reset(0.01);
        c.on_mi(&mi(0.02));
        // RTT rule 10 ms; 10 packets at 40 pkt/s take 250 ms, at 4000 pkt/s 2.5 ms.
        assert_eq!(c.next_duration_s(40.0), 0.25);
        assert_eq!(c.next_duration_s(4000.0), 0.01);
    }

    #[test]
    fn reset_starts_a_new_connection() {
        let mut c = clock(1, 0.0);
        c.reset(0.05);
        c.on_mi(&mi(0.1));
        c.on_mi(&mi(0.1));
        assert!(c.sampled_duration_s(10.0).is_some());
        assert!(!c.reset(0.05));
        assert!(c.in_warmup());
        assert_eq!(c.sampled_duration_s(10.0), None);
        let resumed = MiClock::resume(c.history().clone(), *c.sizing(), 1, 0.3);
        assert!(!resumed.in_warmup());
        assert_eq!(resumed.rtt_based_duration_s(), 0.3);
    }
}
