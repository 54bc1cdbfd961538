//! One learned sender's decision loop, the one the gym trains and every deployment runs: at
//! the end of each monitor interval the MI clock steps (warm-up, history, base-RTT probes,
//! the mode switch), a startup grows the rate until the path is full ([`crate::Startup`]),
//! the agent decides when the clock says so, the rate rule turns its action
//! into the agent's rate, and the sender paces the next MI at that rate, or in a probe MI at
//! the probe's share of it, for the length the clock gives at that pacing rate.
//!
//! [`crate::Controller`] (a deployed connection, behind [`crate::MiLedger`] for packet
//! events), the multi-flow runner (`mocc_eval::flows`) and the gym's learned-sender slots
//! (`mocc_gym::Env`) each hold one [`SenderLoop`]; what decides differs (the export's mean
//! action, any actor, the trainer's sampled action), the arithmetic does not.

use crate::{
    ActionRule, MetricsVersion, MiClock, Mode, ModeState, MonitorInterval, MonitorIntervalConfig,
    ObservationBuilder, ObservationConfig, PolicySpec, ProbeState, StartupState, StartupStep,
};

/// What a learned sender's loop is made of: the observation, metric version, MI sizing and
/// warm-up it was trained with, and its rate rule with the rule's base-RTT probes and mode
/// switch. An export ([`PolicySpec::loop_spec`]) and a gym scenario
/// (`mocc_gym::ScenarioConfig::loop_spec`) both give one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoopSpec<'a> {
    /// What the agent observes.
    pub observation: &'a ObservationConfig,
    /// The metric definitions.
    pub metrics: MetricsVersion,
    /// MI sizing.
    pub sizing: MonitorIntervalConfig,
    /// MIs at the start rate before the first decision.
    pub warmup_mis: u32,
    /// The rate rule; its `probe_rtt` and `mode_switch` drive the clock's probes and mode.
    pub rule: ActionRule,
}

/// What a snapshot keeps of a sender's MI clock.
#[derive(Debug, Clone, PartialEq)]
pub struct SavedClock {
    /// The observation history (with its latency baseline).
    pub history: ObservationBuilder,
    /// The RTT rule's next MI length, before the packet floor.
    pub rtt_based_s: f64,
    /// Warm-up MIs still to run.
    pub warmup_left: u32,
    /// The probe timer.
    pub probe: ProbeState,
    /// The mode switch's state.
    pub mode: ModeState,
    /// The startup's state.
    pub startup: StartupState,
}

impl LoopSpec<'_> {
    /// The same spec for a sender that sets its own rate (an observed classic or constant
    /// sender in the gym): no base-RTT probes and no mode switch.
    pub fn self_paced(self) -> Self {
        Self {
            rule: ActionRule {
                probe_rtt: None,
                mode_switch: None,
                startup: None,
                ..self.rule
            },
            ..self
        }
    }

    /// A fresh clock, as a new connection starts it (call [`MiClock::reset`] or
    /// [`SenderLoop::start`] before the first MI).
    pub fn clock(&self) -> MiClock {
        MiClock::new(self.observation, self.metrics, self.sizing, self.warmup_mis)
            .with_probe(self.rule.probe_rtt)
            .with_mode_switch(self.rule.mode_switch)
    }

    /// The clock a snapshot left.
    pub fn resumed_clock(&self, saved: SavedClock) -> MiClock {
        MiClock::resume(
            saved.history,
            self.sizing,
            self.warmup_mis,
            saved.rtt_based_s,
        )
        .with_warmup_left(saved.warmup_left)
        .with_probe(self.rule.probe_rtt)
        .with_probe_state(saved.probe)
        .with_mode_switch(self.rule.mode_switch)
        .with_mode_state(saved.mode)
    }
}

impl PolicySpec {
    /// The loop an export's sender runs: its observation, metrics, MI sizing, warm-up and rule.
    pub fn loop_spec(&self) -> LoopSpec<'_> {
        LoopSpec {
            observation: &self.observation.config,
            metrics: self.observation.metrics,
            sizing: self.monitor_interval.sizing,
            warmup_mis: self.monitor_interval.warmup_mis,
            rule: self.action,
        }
    }
}

/// One learned sender's loop: its MI clock, its rate rule, its startup and the rate its agent
/// chose.
#[derive(Debug, Clone, PartialEq)]
pub struct SenderLoop {
    clock: MiClock,
    rule: ActionRule,
    /// The rate the agent chose (the pacing rate outside probes; the startup's while it runs),
    /// packets/s.
    rate_pps: f64,
    startup: StartupState,
    /// Packets the sender sends back to back at each MI's start (1: no trains).
    train_packets: u32,
}

impl SenderLoop {
    /// A loop of `spec` whose agent's rate is `rate_pps`; start a connection with
    /// [`SenderLoop::start`] (or [`SenderLoop::restart`]).
    pub fn new(spec: &LoopSpec<'_>, rate_pps: f64) -> Self {
        Self {
            clock: spec.clock(),
            rule: spec.rule,
            rate_pps,
            startup: StartupState::default(),
            train_packets: spec.observation.train_packets(),
        }
    }

    /// The loop a snapshot left, its agent's rate `rate_pps`.
    pub fn resume(spec: &LoopSpec<'_>, saved: SavedClock, rate_pps: f64) -> Self {
        let startup = saved.startup;
        Self {
            clock: spec.resumed_clock(saved),
            rule: spec.rule,
            rate_pps,
            startup,
            train_packets: spec.observation.train_packets(),
        }
    }

    /// Packets the sender sends back to back when an MI starts, the first of them at the MI's
    /// first departure (1: no trains; the observation's `capacity_trains`). The train counts
    /// toward the pacing rate: the next packet leaves that many packet intervals later.
    pub fn train_packets(&self) -> u32 {
        self.train_packets
    }

    /// Starts a connection at `start_rate_pps`, within the rule's limits (not a positive
    /// number: the rule's minimum; a transport that takes rates from users refuses those first)
    /// whose one-way delay is estimated at `one_way_delay_s` (not a positive number: unknown,
    /// 0). Returns whether the agent decides now, before the first MI (no warm-up).
    #[must_use]
    pub fn start(&mut self, start_rate_pps: f64, one_way_delay_s: f64) -> bool {
        self.rate_pps = if start_rate_pps > 0.0 {
            self.rule.clamp(start_rate_pps)
        } else {
            self.rule.min_rate_pps
        };
        let estimate = if one_way_delay_s.is_finite() && one_way_delay_s > 0.0 {
            one_way_delay_s
        } else {
            0.0
        };
        self.restart(estimate)
    }

    /// [`SenderLoop::start`] that lets `decide` take the first decision when there is no
    /// warm-up; returns the first MI's pacing rate.
    pub fn start_with(
        &mut self,
        start_rate_pps: f64,
        one_way_delay_s: f64,
        decide: impl FnOnce(Mode, &[f32]) -> f64,
    ) -> f64 {
        if self.start(start_rate_pps, one_way_delay_s) {
            self.decide_with(decide);
        }
        self.pacing_rate_pps()
    }

    /// Restarts the clock and the startup only (the gym: its sender keeps the rate it was
    /// given, and the estimate is taken as is). Returns whether the agent decides now.
    pub fn restart(&mut self, one_way_delay_s: f64) -> bool {
        self.startup = StartupState::begin(self.rule.startup.as_ref());
        self.clock.reset(one_way_delay_s) && !self.startup.running()
    }

    /// Folds in a finished MI; returns whether the agent decides now (then call
    /// [`SenderLoop::apply`]); otherwise the warm-up, the startup or a base-RTT probe goes on.
    #[must_use]
    pub fn on_mi(&mut self, mi: &MonitorInterval) -> bool {
        let startup_mi = self.in_startup();
        if let Some(startup) = self
            .rule
            .startup
            .as_ref()
            .filter(|_| self.startup.running())
        {
            if !startup_mi {
                self.startup.on_warmup_mi(startup, mi);
            }
        }
        let decides = self.clock.on_mi(mi);
        match self.rule.startup {
            Some(startup) if startup_mi => {
                let step = self
                    .startup
                    .on_mi(&startup, mi, self.rate_pps, self.rule.max_rate_pps);
                self.after_startup_mi(step)
            }
            _ => decides && !self.startup.running(),
        }
    }

    /// The rate after a startup MI, and whether the agent decides now: not while the startup
    /// grows or drains; at its end. A probe the clock's timer began during the startup ends
    /// it (the probe drains what it built).
    fn after_startup_mi(&mut self, step: StartupStep) -> bool {
        match step {
            StartupStep::Pace(rate) if !self.clock.probing() => {
                self.rate_pps = self.rule.clamp(rate);
                false
            }
            StartupStep::Pace(_) => {
                self.rate_pps = self.rule.clamp(self.startup.end(self.rate_pps));
                false
            }
            StartupStep::Exit(rate, _) => {
                self.rate_pps = self.rule.clamp(rate);
                !self.clock.probing()
            }
        }
    }

    /// [`SenderLoop::on_mi`], with `decide(mode, observation)` giving the action when the
    /// agent decides; returns the next MI's pacing rate.
    pub fn on_mi_with(
        &mut self,
        mi: &MonitorInterval,
        decide: impl FnOnce(Mode, &[f32]) -> f64,
    ) -> f64 {
        if self.on_mi(mi) {
            self.decide_with(decide);
        }
        self.pacing_rate_pps()
    }

    fn decide_with(&mut self, decide: impl FnOnce(Mode, &[f32]) -> f64) {
        let action = decide(self.clock.mode(), self.clock.observation());
        self.apply(action);
    }

    /// The agent's action: the rule steps the agent's rate (within the mode switch's bound
    /// after a lossy competitive MI).
    pub fn apply(&mut self, action: f64) {
        self.apply_from(self.rate_pps, action);
    }

    /// The agent's action stepping `from_pps` (the gym: the rate its sender paces at).
    pub fn apply_from(&mut self, from_pps: f64, action: f64) {
        let next = self.rule.apply(from_pps, action);
        self.rate_pps = match self.clock.delivery_cap_pps() {
            Some(cap) => next.min(self.rule.clamp(cap)),
            None => next,
        };
    }

    /// Sets the agent's rate outright (the gym: a rate action, a sender that sets its own
    /// rate, the start rate of a warm-up).
    pub fn set_rate(&mut self, rate_pps: f64) {
        self.rate_pps = rate_pps;
    }

    /// The rate the agent chose (packets/s); it paces at it outside probes.
    pub fn agent_rate_pps(&self) -> f64 {
        self.rate_pps
    }

    /// The next MI's pacing rate: the agent's, or in a probe MI the probe's share of it.
    pub fn pacing_rate_pps(&self) -> f64 {
        self.rule.pacing_rate(self.rate_pps, self.clock.probing())
    }

    /// The pacing rate of this loop's probe MIs (also after the last one closed).
    pub fn probe_rate_pps(&self) -> f64 {
        self.rule.pacing_rate(self.rate_pps, true)
    }

    /// The next MI's length when paced at `rate_pps`.
    pub fn next_duration_s(&self, rate_pps: f64) -> f64 {
        self.clock.next_duration_s(rate_pps)
    }

    /// The next MI's length at its pacing rate.
    pub fn mi_duration_s(&self) -> f64 {
        self.clock.next_duration_s(self.pacing_rate_pps())
    }

    /// [`SenderLoop::mi_duration_s`] once a recorded MI had RTT samples; `None` before.
    pub fn sampled_mi_duration_s(&self) -> Option<f64> {
        self.clock.sampled_duration_s(self.pacing_rate_pps())
    }

    /// Whether the next MI is a base-RTT probe MI.
    pub fn probing(&self) -> bool {
        self.clock.probing()
    }

    /// Whether warm-up MIs remain.
    pub fn in_warmup(&self) -> bool {
        self.clock.in_warmup()
    }

    /// Whether the next MI after any warm-up is a startup MI (paced at the startup's rate,
    /// with no decision before it).
    pub fn in_startup(&self) -> bool {
        self.startup.running() && !self.clock.in_warmup()
    }

    /// Whether the loop, not the agent, paces the next MI: a startup or base-RTT probe MI.
    pub fn paces_next_mi(&self) -> bool {
        self.in_startup() || self.probing()
    }

    /// The startup's state (running, what it measured, why it ended).
    pub fn startup(&self) -> &StartupState {
        &self.startup
    }

    /// Which of a paired export's policies takes the next decision.
    pub fn mode(&self) -> Mode {
        self.clock.mode()
    }

    /// The observation the next decision sees (raw).
    pub fn observation(&self) -> &[f32] {
        self.clock.observation()
    }

    /// The MI clock (history, timers, sizing).
    pub fn clock(&self) -> &MiClock {
        &self.clock
    }

    /// The rate rule.
    pub fn rule(&self) -> &ActionRule {
        &self.rule
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BaselineKind, ModeSwitch, ProbeRtt, RttSummary, BYTES_PER_PACKET};

    /// 0.1 s MIs: a queue that builds for 20 MIs and drains, over and over, with losses now
    /// and then; independent of the rates chosen (only the arithmetic is compared).
    fn mis() -> Vec<MonitorInterval> {
        (0..600u32)
            .map(|k| {
                let start = 0.1 * f64::from(k);
                let queue_s = if k % 60 < 40 {
                    0.0015 * f64::from(k % 20)
                } else {
                    0.0
                };
                let rtt = 0.04 + queue_s;
                let packets = 10.0 + 5.0 * f64::from(k % 7);
                let lost = if k % 13 == 0 { 1.0 } else { 0.0 };
                MonitorInterval {
                    bytes_sent: packets * BYTES_PER_PACKET,
                    bytes_acked: (packets - lost) * BYTES_PER_PACKET,
                    bytes_lost: lost * BYTES_PER_PACKET,
                    send_start_s: start,
                    send_end_s: start + 0.1,
                    recv_start_s: start,
                    recv_end_s: start + 0.1,
                    rtt: RttSummary::from_samples(&[rtt - 0.001, rtt, rtt + 0.001]),
                    ack_span: None,
                    train_pps: None,
                }
            })
            .collect()
    }

    /// A decider that moves the rate both ways and tells the modes apart.
    fn decide(mode: Mode, obs: &[f32]) -> f64 {
        let x: f64 = obs.iter().map(|&v| f64::from(v)).sum();
        3.0 * (7.3 * x).sin() + if mode == Mode::Competitive { 0.5 } else { 0.0 }
    }

    /// The loop paces, sizes and decides bit for bit as the copies it replaced: the
    /// Controller's and the multi-flow runner's (clock + rate + `pacing_rate(rate, probing)`)
    /// and the gym slot's (decide later, the rule on the sender's rate, probes at
    /// `pacing_rate(rate, true)`).
    #[test]
    fn the_loop_is_the_loop_it_replaced() {
        let observation = ObservationConfig {
            latency_baseline: BaselineKind::DrainAware {
                seconds: 5.0,
                drain_fraction: 0.5,
            },
            ..ObservationConfig::default()
        };
        let rule = ActionRule {
            probe_rtt: Some(ProbeRtt {
                mis: 3,
                quiet_latency_ratio: Some(1.1),
                ..ProbeRtt::every(0.5)
            }),
            mode_switch: Some(ModeSwitch {
                probe_after_s: Some(1.0),
                ..ModeSwitch::default()
            }),
            ..ActionRule::default()
        };
        let sizing = MonitorIntervalConfig {
            min_packets: 10.0,
            ..MonitorIntervalConfig::default()
        };
        for warmup_mis in [0, 2] {
            let spec = LoopSpec {
                observation: &observation,
                metrics: MetricsVersion::Delivered,
                sizing,
                warmup_mis,
                rule,
            };
            // The old builder chain (export.rs / gym config.rs).
            let old = MiClock::new(&observation, MetricsVersion::Delivered, sizing, warmup_mis)
                .with_probe(rule.probe_rtt)
                .with_mode_switch(rule.mode_switch);
            assert_eq!(spec.clock(), old);
            // Controller / flows, old and new.
            let (mut clock, mut rate) = (old.clone(), 300.0);
            if clock.reset(0.02) {
                rate = rule.apply(rate, decide(clock.mode(), clock.observation()));
            }
            let mut l = SenderLoop::new(&spec, 0.0);
            let first = l.start_with(300.0, 0.02, decide);
            assert_eq!(
                first.to_bits(),
                rule.pacing_rate(rate, clock.probing()).to_bits()
            );
            let mut probes = 0;
            for (k, mi) in mis().iter().enumerate() {
                if clock.on_mi(mi) {
                    rate = rule.apply(rate, decide(clock.mode(), clock.observation()));
                }
                let want = rule.pacing_rate(rate, clock.probing());
                let got = l.on_mi_with(mi, decide);
                assert_eq!(got.to_bits(), want.to_bits(), "MI {k}");
                assert_eq!(
                    l.mi_duration_s().to_bits(),
                    clock.next_duration_s(want).to_bits()
                );
                assert_eq!(l.clock(), &clock, "MI {k}");
                probes += usize::from(clock.probing());
            }
            assert!(probes > 20, "{probes} probe MIs");
        }
    }

    /// An MI of 0.1 s at `pps`, every packet acknowledged after `rtt_s`.
    fn steady(k: u32, pps: f64, rtt_s: f64) -> MonitorInterval {
        let start = 0.1 * f64::from(k);
        let packets = (pps * 0.1).round();
        MonitorInterval {
            bytes_sent: packets * BYTES_PER_PACKET,
            bytes_acked: packets * BYTES_PER_PACKET,
            bytes_lost: 0.0,
            send_start_s: start,
            send_end_s: start + 0.1,
            recv_start_s: start,
            recv_end_s: start + 0.1,
            rtt: RttSummary::from_samples(&[rtt_s, rtt_s]),
            ack_span: None,
            train_pps: None,
        }
    }

    /// The warm-up MIs feed the startup: a warm-up that sees the RTT rise at the start rate
    /// (others hold the path) hands the agent the start rate with no growth; one that sees a
    /// flat RTT lets the startup grow the rate.
    #[test]
    fn a_warm_up_that_sees_a_queue_skips_the_startup() {
        let observation = ObservationConfig::default();
        let rule = ActionRule {
            max_rate_pps: 1e5,
            startup: Some(crate::Startup::default()),
            ..ActionRule::default()
        };
        let spec = LoopSpec {
            observation: &observation,
            metrics: MetricsVersion::Delivered,
            sizing: MonitorIntervalConfig::default(),
            warmup_mis: 2,
            rule,
        };
        let mut busy = SenderLoop::new(&spec, 0.0);
        assert!(!busy.start(200.0, 0.02));
        assert!(!busy.on_mi(&steady(0, 200.0, 0.05)));
        assert!(busy.startup().running() && busy.in_warmup());
        // The second warm-up MI sees 60 ms: the agent decides next, at the start rate.
        assert!(busy.on_mi(&steady(1, 200.0, 0.06)));
        assert_eq!(busy.startup().exit(), Some(crate::StartupExit::BusyPath));
        assert_eq!(busy.agent_rate_pps(), 200.0);
        let mut free = SenderLoop::new(&spec, 0.0);
        assert!(!free.start(200.0, 0.02));
        assert!(!free.on_mi(&steady(0, 200.0, 0.05)));
        assert!(!free.on_mi(&steady(1, 200.0, 0.05)));
        assert!(!free.on_mi(&steady(2, 200.0, 0.05)));
        assert!(free.in_startup());
        assert!(free.agent_rate_pps() > 1.4 * 200.0);
    }

    /// The mode switch's bound after a lossy competitive MI holds the agent's next step, in
    /// the deployed loop (`apply`) and the gym's (`apply_from`): +10% from 1,000 packets/s is
    /// 1,100, bounded by the 600 packets/s that MI delivered; without the bound, 1,100.
    #[test]
    fn a_lossy_competitive_mi_bounds_the_agents_next_step() {
        let observation = ObservationConfig::default();
        let switch = ModeSwitch {
            competitive_max_loss: Some(0.15),
            ..ModeSwitch::default()
        };
        let rule = ActionRule {
            max_rate_pps: 1e5,
            probe_rtt: Some(ProbeRtt::every(3.0)),
            mode_switch: Some(switch),
            ..ActionRule::default()
        };
        let spec = LoopSpec {
            observation: &observation,
            metrics: MetricsVersion::Delivered,
            sizing: MonitorIntervalConfig::default(),
            warmup_mis: 0,
            rule,
        };
        // Lowest 40 ms; a probe MI that keeps a queue; then 60 of 100 packets delivered in 0.1 s.
        let lossy = MonitorInterval {
            bytes_lost: 40.0 * BYTES_PER_PACKET,
            bytes_acked: 60.0 * BYTES_PER_PACKET,
            ..steady(2, 1000.0, 0.09)
        };
        let mut mode = crate::ModeState::default();
        mode.on_mi(&switch, &steady(0, 1000.0, 0.04), false, false);
        mode.on_mi(&switch, &steady(1, 1000.0, 0.09), true, true);
        let lossless = mode;
        mode.on_mi(&switch, &lossy, false, false);
        assert_eq!(mode.mode(), Mode::Competitive);
        let fresh = spec.clock();
        let resumed = |state: crate::ModeState| {
            let saved = SavedClock {
                history: fresh.history().clone(),
                rtt_based_s: 0.05,
                warmup_left: 0,
                probe: fresh.probe_state(),
                mode: state,
                startup: StartupState::default(),
            };
            SenderLoop::resume(&spec, saved, 1000.0)
        };
        let mut deployed = resumed(mode);
        deployed.apply(4.0);
        assert!((deployed.agent_rate_pps() - 600.0).abs() < 1e-9);
        let mut gym = resumed(mode);
        gym.apply_from(1000.0, 4.0);
        assert!((gym.agent_rate_pps() - 600.0).abs() < 1e-9);
        let mut free = resumed(lossless);
        free.apply(4.0);
        assert!((free.agent_rate_pps() - 1100.0).abs() < 1e-9);
    }
}
