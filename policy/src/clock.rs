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
//! that many packets at the rate it is sent at. With base-RTT probes ([`ProbeRtt`]) some
//! recorded MIs are probe MIs: the agent does not decide after them (the sender paces them at
//! `ActionRule::pacing_rate`), and decides after the last one.

use crate::history::{ObservationBuilder, ObservationConfig};
use crate::mi::MetricsVersion;
use crate::mi::{MonitorInterval, MonitorIntervalConfig};
use crate::mode_switch::{Mode, ModeState, ModeSwitch};
use crate::probe::{ProbeRtt, ProbeState};
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
    #[serde(default)]
    probe: Option<ProbeRtt>,
    #[serde(default)]
    probe_state: ProbeState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mode_switch: Option<ModeSwitch>,
    #[serde(default, skip_serializing_if = "ModeState::is_fresh")]
    mode_state: ModeState,
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
            probe: None,
            probe_state: ProbeState::default(),
            mode_switch: None,
            mode_state: ModeState::default(),
        }
    }

    /// The same clock probing the base RTT by `probe` (none: never).
    pub fn with_probe(mut self, probe: Option<ProbeRtt>) -> Self {
        self.probe = probe;
        self
    }

    /// The same clock with its probe timer where a snapshot left it.
    pub fn with_probe_state(mut self, state: ProbeState) -> Self {
        self.probe_state = state;
        self
    }

    /// The same clock switching modes by `switch` (none: always cooperative). The switch reads
    /// probes' MIs, so it needs [`MiClock::with_probe`] too.
    pub fn with_mode_switch(mut self, switch: Option<ModeSwitch>) -> Self {
        self.mode_switch = switch;
        self
    }

    /// The same clock with its mode where a snapshot left it.
    pub fn with_mode_state(mut self, state: ModeState) -> Self {
        self.mode_state = state;
        self
    }

    /// The mode switch's state.
    pub fn mode_state(&self) -> ModeState {
        self.mode_state
    }

    /// The highest rate (packets/s) the next decision may choose, where the mode switch bounds
    /// it ([`crate::ModeSwitch::competitive_max_loss`]).
    pub fn delivery_cap_pps(&self) -> Option<f64> {
        self.mode_state.delivery_cap_pps()
    }

    /// Which of the export's policies takes the next decision (always cooperative without a
    /// mode switch).
    pub fn mode(&self) -> Mode {
        self.mode_state.mode()
    }

    /// The probe timer.
    pub fn probe_state(&self) -> ProbeState {
        self.probe_state
    }

    /// Whether the next MI is a base-RTT probe MI (paced at a share of the agent's rate,
    /// `ActionRule::pacing_rate`, with no decision before it).
    pub fn probing(&self) -> bool {
        self.probe_state.probing()
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
            probe: None,
            probe_state: ProbeState::default(),
            mode_switch: None,
            mode_state: ModeState::default(),
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
        self.probe_state = ProbeState::default();
        self.mode_state = ModeState::default();
        self.warmup_left == 0
    }

    /// Closes an MI. A warm-up MI only counts down; any later MI is recorded in the history and,
    /// when it has RTT samples, sets the next MI's length. Returns whether the agent decides now
    /// (not while the warm-up or a base-RTT probe goes on).
    pub fn on_mi(&mut self, mi: &MonitorInterval) -> bool {
        if self.warmup_left > 0 {
            self.warmup_left -= 1;
            if let Some(switch) = &self.mode_switch {
                self.mode_state.note_warmup(switch, mi);
            }
            return self.warmup_left == 0;
        }
        let baseline_before = self.history.baseline_s();
        let may_restart = match &self.probe {
            Some(p) => {
                if p.baseline_from_probe && self.probe_state.starts_probe(p) {
                    self.history.restart_baseline();
                }
                self.probe_state.note_loss(p, mi);
                self.probe_state.may_restart(p, mi.send_end_s)
            }
            None => true,
        };
        self.history.record_with(mi, may_restart);
        let rtt = mi.avg_latency_s();
        if rtt > 0.0 {
            self.rtt_based_s = self.sizing.rtt_factor * rtt;
            self.rtt_sampled = true;
        }
        let in_probe = self.probe_state.probing();
        let decides = match &self.probe {
            Some(probe) => {
                let baseline = self.history.baseline_s();
                let restart = probe.restarts_timer(baseline != baseline_before, rtt, baseline);
                self.probe_state.on_mi(probe, mi.send_end_s, restart)
            }
            None => true,
        };
        match (&self.mode_switch, &self.probe) {
            (Some(switch), Some(probe)) => {
                let probe_ended = in_probe && !self.probe_state.probing();
                self.mode_state.on_mi(switch, mi, in_probe, probe_ended);
                if decides && self.mode_state.wants_probe(switch, mi.send_end_s) {
                    self.probe_state.begin(probe);
                    return false;
                }
                decides
            }
            _ => decides,
        }
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
    use crate::mi::{RttSummary, BYTES_PER_PACKET};

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
    fn a_probe_withholds_decisions_for_its_mis_after_the_baseline_stood_its_interval() {
        let probe = ProbeRtt {
            mis: 2,
            ..ProbeRtt::every(1.0)
        };
        let mut c = clock(0, 0.0).with_probe(Some(probe));
        assert!(c.reset(0.05));
        // MIs of 0.25 s at a flat 100 ms RTT: the baseline is set by the first (ending at
        // 0.25 s) and stands; at the end of the MI ending at 1.25 s it has stood 1 s.
        let at = |end: f64, rtt: f64| MonitorInterval {
            send_start_s: end - 0.25,
            send_end_s: end,
            ..mi(rtt)
        };
        let decisions: Vec<bool> = (1..=8)
            .map(|i| c.on_mi(&at(0.25 * f64::from(i), 0.1)))
            .collect();
        assert_eq!(
            decisions,
            [true, true, true, true, false, false, true, true]
        );
        assert!(!c.probing());
        // The probe's MIs went into the history: a lower RTT in a probe lowers the baseline.
        assert!(c.on_mi(&at(2.25, 0.1)));
        assert!(c.on_mi(&at(2.5, 0.1)));
        assert!(
            !c.on_mi(&at(2.75, 0.1)),
            "1 s after the last probe ended (1.75 s)"
        );
        assert!(c.probing());
        assert!(!c.on_mi(&at(3.0, 0.08)));
        assert!((c.history().baseline_s() - 0.08).abs() < 1e-12);
        assert!(c.on_mi(&at(3.25, 0.08)));
        // A reset forgets a probe under way.
        let mut c2 = c.clone();
        c2.on_mi(&at(4.25, 0.08));
        assert!(c2.probing());
        c2.reset(0.05);
        assert!(!c2.probing());
        // Without a probe config the clock decides after every MI.
        let mut plain = clock(0, 0.0);
        plain.reset(0.05);
        assert!((1..=20).all(|i| plain.on_mi(&at(0.25 * f64::from(i), 0.1))));
    }

    #[test]
    fn the_mode_switch_probes_a_standing_queue_and_turns_competitive_until_the_path_shows() {
        // A 10 s probe timer that would not fire here, and a switch that probes after 1 s
        // without an MI within 1.1 of the lowest latency (40 ms). MIs of 0.25 s.
        let probe = ProbeRtt {
            mis: 2,
            ..ProbeRtt::every(10.0)
        };
        let switch = ModeSwitch {
            probe_after_s: Some(1.0),
            ..ModeSwitch::default()
        };
        let mut c = clock(0, 0.0)
            .with_probe(Some(probe))
            .with_mode_switch(Some(switch));
        assert!(c.reset(0.05));
        let at = |end: f64, rtt: f64| MonitorInterval {
            send_start_s: end - 0.25,
            send_end_s: end,
            ..mi(rtt)
        };
        // The path at 0.25 s, a 60 ms queue after: at 1.25 s it has not shown for 1 s.
        let decisions: Vec<bool> = [(0.25, 0.04), (0.5, 0.06), (0.75, 0.06), (1.0, 0.06)]
            .iter()
            .map(|&(end, rtt)| c.on_mi(&at(end, rtt)))
            .collect();
        assert_eq!(decisions, [true; 4]);
        assert!(!c.on_mi(&at(1.25, 0.06)));
        assert!(c.probing());
        assert_eq!(c.mode(), Mode::Cooperative);
        // The probe's MIs, sent at a quarter of the rate, keep the queue: competitive from its
        // end.
        let probe_mi = |end: f64| MonitorInterval {
            bytes_sent: 0.25 * at(end, 0.06).bytes_sent,
            ..at(end, 0.06)
        };
        assert!(!c.on_mi(&probe_mi(1.5)));
        assert!(c.on_mi(&probe_mi(1.75)));
        assert_eq!(c.mode(), Mode::Competitive);
        assert!(!c.probing());
        // The next forced probe comes 1 s after this one ended (1.75 s): at 2.75 s.
        let mut queued = c.clone();
        for end in [2.0, 2.25, 2.5] {
            assert!(queued.on_mi(&at(end, 0.06)));
        }
        assert!(!queued.on_mi(&at(2.75, 0.06)));
        assert!(queued.probing());
        // The path at 2.0 s instead: cooperative at once, and no probe at 2.75 s.
        assert!(c.on_mi(&at(2.0, 0.043)));
        assert_eq!(c.mode(), Mode::Cooperative);
        for end in [2.25, 2.5, 2.75] {
            assert!(c.on_mi(&at(end, 0.06)));
        }
        // Without a switch the same MIs never probe.
        let mut plain = clock(0, 0.0).with_probe(Some(probe));
        plain.reset(0.05);
        for end in 1..=12 {
            assert!(plain.on_mi(&at(0.25 * f64::from(end), 0.06)));
        }
    }

    #[test]
    fn warm_up_mis_count_towards_the_switchs_lowest_latency() {
        // A 40 ms warm-up MI, then 50 ms: within 1.1 of the first recorded MI, a queue against
        // the warm-up's 40 ms. A probe of 50 ms MIs turns the sender competitive only with it.
        let probe = ProbeRtt {
            mis: 1,
            ..ProbeRtt::every(0.5)
        };
        let run = |warm_up_rtt: f64| {
            let mut c = clock(1, 0.0)
                .with_probe(Some(probe))
                .with_mode_switch(Some(ModeSwitch::default()));
            c.reset(0.05);
            c.on_mi(&MonitorInterval {
                send_start_s: 0.0,
                send_end_s: 0.25,
                ..mi(warm_up_rtt)
            });
            for i in 2..=6 {
                let end = 0.25 * f64::from(i);
                c.on_mi(&MonitorInterval {
                    send_start_s: end - 0.25,
                    send_end_s: end,
                    ..mi(0.05)
                });
            }
            c.mode()
        };
        assert_eq!(run(0.04), Mode::Competitive);
        assert_eq!(run(0.0), Mode::Cooperative);
    }

    #[test]
    fn restarts_in_probes_only_keep_a_drained_back_off_from_raising_the_baseline() {
        // A drain-aware baseline at 40 ms; the sender then backs off to a tenth of its peak
        // under a flat 100 ms RTT (another flow's queue). Allowed anywhere, the second flat MI
        // restarts the baseline at 100 ms; kept to probes, the baseline stays at 40 ms until a
        // probe's MIs find the same flat RTT.
        let observation = ObservationConfig {
            latency_baseline: crate::baseline::BaselineKind::DrainAware {
                seconds: 3600.0,
                drain_fraction: 0.5,
            },
            ..ObservationConfig::default()
        };
        let probe = |only: bool| ProbeRtt {
            mis: 2,
            restart_in_probes_only: only,
            ..ProbeRtt::every(0.95)
        };
        let at = |start: f64, end: f64, packets: f64, rtt: f64| MonitorInterval {
            bytes_sent: packets * BYTES_PER_PACKET,
            bytes_acked: packets * BYTES_PER_PACKET,
            send_start_s: start,
            send_end_s: end,
            recv_start_s: start,
            recv_end_s: end,
            rtt: RttSummary::from_samples(&[rtt; 4]),
            ..MonitorInterval::default()
        };
        let run = |only: bool| {
            let mut c = MiClock::new(
                &observation,
                MetricsVersion::Delivered,
                MonitorIntervalConfig::default(),
                0,
            )
            .with_probe(Some(probe(only)));
            c.reset(0.02);
            c.on_mi(&at(0.0, 0.1, 100.0, 0.04));
            let mut baselines = Vec::new();
            for k in 1..=12 {
                let start = 0.1 * f64::from(k);
                c.on_mi(&at(start, start + 0.1, 1.0, 0.1));
                baselines.push(c.history().baseline_s());
            }
            baselines
        };
        let anywhere = run(false);
        assert_eq!(anywhere[0], 0.04);
        assert!(anywhere[1..].iter().all(|&b| b == 0.1), "{anywhere:?}");
        // The baseline stood from 0.1 s: at the MI ending at 1.1 s (the 10th back-off MI) it
        // has stood over 0.95 s and a probe starts; its first MI (ending 1.2 s) is flat against the one before and drained.
        let in_probes = run(true);
        assert!(in_probes[..10].iter().all(|&b| b == 0.04), "{in_probes:?}");
        assert_eq!(in_probes[10], 0.1, "{in_probes:?}");
    }

    /// With `baseline_from_probe`, a probe's MIs set the baseline whatever it was: a queue that
    /// stays through the probe (another sender's) becomes it, one that drains in the probe
    /// leaves the path's RTT. Without, a standing queue never becomes it (no MI drains).
    #[test]
    fn a_probe_may_set_the_baseline_to_its_lowest_rtt() {
        let probe = |from_probe: bool| ProbeRtt {
            mis: 3,
            baseline_from_probe: from_probe,
            ..ProbeRtt::every(0.95)
        };
        let at = |end: f64, rtt: f64| MonitorInterval {
            send_start_s: end - 0.1,
            send_end_s: end,
            recv_start_s: end - 0.1,
            recv_end_s: end,
            ..mi(rtt)
        };
        // 40 ms, then 10 MIs at 100 ms and 85 ms (the baseline stands from 0.1 s, so the MI
        // ending at 1.1 s starts a probe), the probe's three MIs at `probe_rtts`, then 100 ms.
        let run = |from_probe: bool, probe_rtts: [f64; 3]| {
            let mut c = clock(0, 0.0).with_probe(Some(probe(from_probe)));
            c.reset(0.02);
            c.on_mi(&at(0.1, 0.04));
            for k in 2..=11 {
                // The MI that starts the probe reads 85 ms: not the probe's, so not its baseline.
                let rtt = if k == 11 { 0.085 } else { 0.1 };
                let decides = c.on_mi(&at(0.1 * f64::from(k), rtt));
                assert_eq!(decides, k < 11, "MI {k}");
            }
            assert!(c.probing());
            for (k, rtt) in probe_rtts.into_iter().enumerate() {
                c.on_mi(&at(1.2 + 0.1 * k as f64, rtt));
            }
            assert!(!c.probing());
            c.on_mi(&at(1.6, 0.1));
            c.history().baseline_s()
        };
        // Another sender's queue through the probe: its lowest RTT is the new baseline, the
        // first MI's included.
        assert_eq!(run(true, [0.09, 0.095, 0.1]), 0.09);
        assert_eq!(run(true, [0.1, 0.09, 0.095]), 0.09);
        // A queue that drains in the probe: the path's RTT.
        assert_eq!(run(true, [0.1, 0.05, 0.04]), 0.04);
        // Without the option, the connection's minimum stands.
        assert_eq!(run(false, [0.1, 0.09, 0.095]), 0.04);
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
