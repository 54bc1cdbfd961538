//! One environment: a network episode seen by the agent sender, one MI per step.

use crate::agent_slot::{AgentSlot, SlotPhase, SlotSnapshot};
use crate::cc::ClassicCc;
use crate::config::ControllerConfig;
use crate::link::LinkParams;
use crate::reward::{MiOutcome, RewardCapacity, RewardKind, SharingOutcome};
use crate::scenario::Scenario;
use crate::sim::{Network, Sender, SimCounters};
use mocc_policy::{
    Mode, ModeState, MonitorInterval, ObservationBuilder, ProbeState, SavedClock, SenderLoop,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// What the agent does for the next MI.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action {
    /// Aurora's action: the rate changes by the scenario's rate rule.
    Delta(f64),
    /// Pace at this rate (packets/s), bypassing the rule's clamps. Only the simulator's hard
    /// limits apply ([`MIN_SIM_RATE_PPS`], [`MAX_SIM_RATE_PPS`]); NaN keeps the current rate.
    Rate(f64),
}

pub use crate::limits::{MAX_SIM_RATE_PPS, MIN_SIM_RATE_PPS};

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

/// The RNG of env `index` under `seed`: one ChaCha8 key per seed, one stream per env.
pub fn env_rng(seed: u64, index: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(index);
    rng
}

/// The complete state of an env (RNG, network, histories, MI clocks), for exact resume.
/// The scenario itself is not part of it. The first learned sender's state sits in the
/// top-level fields (the format of single-sender snapshots); `agents` holds every learned
/// sender's when there are several or one is not simply waiting for its action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvSnapshot {
    index: u64,
    rng: ChaCha8Rng,
    net: Network,
    obs: ObservationBuilder,
    /// The agent's next MI length by the RTT rule (before the `min_packets` floor).
    mi_dur_s: f64,
    background_mi_dur_s: Vec<f64>,
    last_mis: Vec<MonitorInterval>,
    steps: u32,
    objective: [f64; 3],
    episode: LinkParams,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    agents: Vec<SlotSnapshot>,
    #[serde(default, skip_serializing_if = "is_zero")]
    mi_jitter: f64,
    /// The first learned sender's base-RTT probe timer (single-sender snapshots only).
    #[serde(default, skip_serializing_if = "ProbeState::is_fresh")]
    probe: ProbeState,
    /// The first learned sender's mode switch (single-sender snapshots only).
    #[serde(default, skip_serializing_if = "ModeState::is_fresh")]
    mode: ModeState,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// A single environment (Gymnasium-style, without auto-reset). It holds one slot per learned
/// sender of the scenario (or one for the observed sender when no sender is learned); each
/// slot runs its own MI clock, decides at the end of its own MIs, and has its own objective
/// and reward.
#[derive(Debug, Clone)]
pub struct Env {
    scenario: Arc<Scenario>,
    index: u64,
    rng: ChaCha8Rng,
    net: Network,
    slots: Vec<AgentSlot>,
    /// What each slot's last completed MI gave during the last step (`None`: no completion).
    completions: Vec<Option<Step>>,
    /// Per slot, the probe MIs closed since the last public stepping call.
    probe_mis: Vec<Vec<ProbeMi>>,
    background_mi_dur_s: Vec<f64>,
    last_mis: Vec<MonitorInterval>,
    episode: LinkParams,
    mi_jitter: f64,
    /// Each sender's start in the episode being drawn (`None`: absent); reset's scratch.
    starts: Vec<Option<f64>>,
    /// The slots' actions of a step; `step_driving`'s scratch.
    action_scratch: Vec<Action>,
}

impl Env {
    /// Env number `index` of a batch seeded with `seed`, already reset.
    pub fn new(scenario: Arc<Scenario>, seed: u64, index: u64) -> Self {
        let cfg = scenario.config();
        let n = cfg.senders.len();
        let link = scenario.build_link(LinkParams {
            bandwidth_pps: 1.0,
            delay_s: 1.0,
            queue_pkts: 1.0,
            loss: 0.0,
        });
        let senders = (0..n)
            .map(|_| Sender::new(1.0, crate::sim::Pacing::Continuous, 0.0))
            .collect();
        let slots: Vec<AgentSlot> = cfg
            .observed_senders()
            .into_iter()
            .map(|sender| AgentSlot {
                sender,
                sender_loop: SenderLoop::new(&cfg.loop_spec_of(sender), 0.0),
                objective: cfg.objective,
                steps: 0,
                mi_end_s: f64::INFINITY,
                phase: SlotPhase::Absent,
                previous_rate_pps: 0.0,
            })
            .collect();
        let mut env = Self {
            completions: vec![None; slots.len()],
            probe_mis: vec![Vec::new(); slots.len()],
            slots,
            scenario,
            index,
            rng: env_rng(seed, index),
            net: Network::new(link, senders),
            background_mi_dur_s: vec![0.0; n],
            last_mis: vec![MonitorInterval::default(); n],
            episode: LinkParams::default(),
            mi_jitter: 0.0,
            starts: vec![None; n],
            action_scratch: Vec::new(),
        };
        env.reset(None);
        env
    }

    /// Captures the whole state.
    pub fn snapshot(&self) -> EnvSnapshot {
        let first = &self.slots[0];
        let clock = first.sender_loop.clock();
        let simple = self.slots.len() == 1
            && first.phase == SlotPhase::Ready
            && self.scenario.config().reward_terms.stability == 0.0;
        // The agents' snapshots hold every timer when there are any.
        let (probe, mode) = if simple {
            (clock.probe_state(), clock.mode_state())
        } else {
            Default::default()
        };
        EnvSnapshot {
            index: self.index,
            rng: self.rng.clone(),
            net: self.net.clone(),
            obs: clock.history().clone(),
            mi_dur_s: clock.rtt_based_duration_s(),
            background_mi_dur_s: self.background_mi_dur_s.clone(),
            last_mis: self.last_mis.clone(),
            steps: first.steps,
            objective: first.objective,
            episode: self.episode,
            agents: if simple {
                Vec::new()
            } else {
                self.slots.iter().map(AgentSlot::snapshot).collect()
            },
            mi_jitter: self.mi_jitter,
            probe,
            mode,
        }
    }

    /// Rebuilds an env of `scenario` from a snapshot taken with the same scenario.
    pub fn restore(scenario: Arc<Scenario>, snap: EnvSnapshot) -> Result<Self, String> {
        let cfg = scenario.config();
        let senders = cfg.senders.len();
        let observed = cfg.observed_senders();
        let slot_count = snap.agents.len().max(1);
        if snap.net.senders().len() != senders
            || snap.obs.obs_len() != scenario.obs_len()
            || slot_count != observed.len()
        {
            return Err(format!(
                "env {}: snapshot has {} senders ({} learned) and observations of {}, the \
                 scenario {} ({}) and {}",
                snap.index,
                snap.net.senders().len(),
                slot_count,
                snap.obs.obs_len(),
                senders,
                observed.len(),
                scenario.obs_len()
            ));
        }
        let mut net = snap.net;
        let (outages, trace) = scenario.shared_link_parts();
        net.link_mut().reattach(outages, trace);
        let resume = |sender: usize, saved: SavedClock, rate_pps: f64| {
            SenderLoop::resume(&cfg.loop_spec_of(sender), saved, rate_pps)
        };
        let slots: Vec<AgentSlot> = if snap.agents.is_empty() {
            let rate = net.senders()[observed[0]].rate_pps();
            vec![AgentSlot {
                sender: observed[0],
                sender_loop: resume(
                    observed[0],
                    SavedClock {
                        history: snap.obs,
                        rtt_based_s: snap.mi_dur_s,
                        warmup_left: 0,
                        probe: snap.probe,
                        mode: snap.mode,
                    },
                    rate,
                ),
                objective: snap.objective,
                steps: snap.steps,
                mi_end_s: f64::INFINITY,
                phase: SlotPhase::Ready,
                previous_rate_pps: rate,
            }]
        } else {
            let mut slots = Vec::with_capacity(snap.agents.len());
            for (a, &sender) in snap.agents.into_iter().zip(&observed) {
                if a.sender != sender || a.obs.obs_len() != scenario.obs_len() {
                    return Err(format!(
                        "env {}: a learned sender's snapshot does not fit the scenario",
                        snap.index
                    ));
                }
                slots.push(AgentSlot {
                    sender,
                    sender_loop: resume(
                        sender,
                        SavedClock {
                            history: a.obs,
                            rtt_based_s: a.mi_dur_s,
                            warmup_left: a.warmup_left,
                            probe: a.probe,
                            mode: a.mode,
                        },
                        a.rate_pps,
                    ),
                    objective: a.objective,
                    steps: a.steps,
                    mi_end_s: a.mi_end_s,
                    phase: a.phase,
                    previous_rate_pps: a.previous_rate_pps,
                });
            }
            slots
        };
        Ok(Self {
            completions: vec![None; slots.len()],
            probe_mis: vec![Vec::new(); slots.len()],
            slots,
            scenario,
            index: snap.index,
            rng: snap.rng,
            net,
            background_mi_dur_s: snap.background_mi_dur_s,
            last_mis: snap.last_mis,
            episode: snap.episode,
            mi_jitter: snap.mi_jitter,
            starts: vec![None; senders],
            action_scratch: Vec::new(),
        })
    }

    /// The scenario.
    pub fn scenario(&self) -> &Arc<Scenario> {
        &self.scenario
    }

    /// Observation length.
    pub fn obs_len(&self) -> usize {
        self.slots[0].sender_loop.clock().history().obs_len()
    }

    /// The first learned sender's current observation (history of feature rows, oldest first).
    pub fn observation(&self) -> &[f32] {
        self.slots[0].sender_loop.observation()
    }

    /// The first learned sender's objective `w` the `mocc` reward uses.
    pub fn objective(&self) -> [f64; 3] {
        self.slots[0].objective
    }

    /// Sets the first learned sender's objective (the trainer's choice; validated by callers).
    pub fn set_objective(&mut self, w: [f64; 3]) {
        self.slots[0].objective = w;
    }

    /// Number of learned-sender slots.
    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// Slot `k`'s phase.
    pub fn slot_phase(&self, k: usize) -> SlotPhase {
        self.slots[k].phase
    }

    /// Which of a paired export's policies takes slot `k`'s next decision (always cooperative
    /// without `action.mode_switch`).
    pub fn slot_mode(&self, k: usize) -> Mode {
        self.slots[k].sender_loop.mode()
    }

    /// Slot `k`'s current observation.
    pub fn slot_observation(&self, k: usize) -> &[f32] {
        self.slots[k].sender_loop.observation()
    }

    /// Slot `k`'s objective.
    pub fn slot_objective(&self, k: usize) -> [f64; 3] {
        self.slots[k].objective
    }

    /// Sets slot `k`'s objective.
    pub fn set_slot_objective(&mut self, k: usize, w: [f64; 3]) {
        self.slots[k].objective = w;
    }

    /// What slot `k`'s MI that closed during the last [`Env::step_slots`] gave, if one did.
    pub fn slot_completion(&self, k: usize) -> Option<&Step> {
        self.completions[k].as_ref()
    }

    /// The network index of slot `k`'s sender.
    pub fn slot_sender(&self, k: usize) -> usize {
        self.slots[k].sender
    }

    /// Whether every learned sender of this episode is done: the episode is over.
    pub fn episode_over(&self) -> bool {
        !self.slots.iter().any(AgentSlot::is_live)
    }

    /// This episode's link parameters at time 0.
    pub fn episode_params(&self) -> LinkParams {
        self.episode
    }

    /// Steps the first learned sender took in this episode.
    pub fn steps(&self) -> u32 {
        self.slots[0].steps
    }

    /// The network (read-only).
    pub fn network(&self) -> &Network {
        &self.net
    }

    /// Simulation work done so far.
    pub fn counters(&self) -> SimCounters {
        self.net.counters()
    }

    /// The last completed MI of sender `i` (the agent's is the last step's).
    pub fn last_mi(&self, i: usize) -> &MonitorInterval {
        &self.last_mis[i]
    }

    /// Starts a new episode: draws a network and who takes part, runs the warm-up MIs (not
    /// recorded in the history, as in Aurora) until some learned sender has to decide, and
    /// leaves its observation of empty MIs. `Some(seed)` reseeds this env's RNG with
    /// (seed, index).
    pub fn reset(&mut self, seed: Option<u64>) {
        if let Some(seed) = seed {
            self.rng = env_rng(seed, self.index);
        }
        let scenario = self.scenario.clone();
        let cfg = scenario.config();
        let params = scenario.sample_link(&mut self.rng);
        self.episode = params;
        let link = scenario.draw_link(params, &mut self.rng);
        let delay0 = link.params_at(0.0).delay_s;
        self.net.reset_link(link);
        self.mi_jitter = scenario.draw_mi_jitter(&mut self.rng);
        let initial_mi = cfg.monitor_interval.initial_delay_factor * delay0;
        for (i, sc) in cfg.senders.iter().enumerate() {
            let presence = Scenario::draw_presence(sc, &mut self.rng);
            let rate = scenario.sample_start_rate(sc, &params, &mut self.rng);
            let (start, stop) = presence.unwrap_or((f64::INFINITY, f64::INFINITY));
            let sender = &mut self.net.senders_mut()[i];
            sender.reset(rate, Scenario::pacing(sc), start);
            sender.set_stop(stop);
            sender.set_extra_rtt(sc.extra_rtt_s);
            if let Some(kind) = sc.controller.classic() {
                let seed = self.rng.random::<u64>();
                sender.set_classic(ClassicCc::seeded(kind, seed));
            }
            self.background_mi_dur_s[i] = initial_mi;
            if !self.slots.iter().any(|s| s.sender == i) {
                let first = cfg.monitor_interval.duration_s(initial_mi, rate);
                self.net.set_mi_end(i, start + first);
            }
            self.last_mis[i] = MonitorInterval::default();
            self.starts[i] = presence.map(|p| p.0);
        }
        if self.cross_traffic_takes_part() {
            if let Some(loss) = scenario.draw_cross_traffic_loss(&mut self.rng) {
                self.net.link_mut().override_loss(loss);
                self.episode.loss = loss;
            }
        }
        for k in 0..self.slots.len() {
            let slot = &mut self.slots[k];
            slot.steps = 0;
            slot.mi_end_s = f64::INFINITY;
            slot.phase = match self.starts[slot.sender] {
                None => SlotPhase::Absent,
                Some(start) if start > 0.0 => {
                    slot.mi_end_s = start;
                    SlotPhase::Waiting
                }
                Some(_) => {
                    let extra = self.net.senders()[slot.sender].extra_rtt_s();
                    slot.sender_loop.restart(one_way_estimate(delay0, extra));
                    self.start_mi_or_decide(k);
                    continue;
                }
            };
        }
        self.completions.fill(None);
        self.advance();
    }

    /// After an MI closed (or the sender started): another warm-up MI, or the agent decides.
    fn start_mi_or_decide(&mut self, k: usize) {
        let sender = self.slots[k].sender;
        let rate = self.net.senders()[sender].rate_pps();
        let slot = &mut self.slots[k];
        slot.sender_loop.set_rate(rate);
        if slot.sender_loop.in_warmup() {
            slot.phase = SlotPhase::Running;
            let d = slot.sender_loop.next_duration_s(rate);
            slot.mi_end_s = self.net.now_s() + jittered(d, self.mi_jitter, &mut self.rng);
        } else {
            slot.phase = SlotPhase::Ready;
        }
    }

    /// Runs the network until some learned sender decides or completes an MI (or no learned
    /// sender has anything left to do).
    fn advance(&mut self) {
        loop {
            let end = self
                .slots
                .iter()
                .filter(|s| s.is_timed())
                .map(|s| s.mi_end_s)
                .fold(f64::INFINITY, f64::min);
            if !end.is_finite() {
                return;
            }
            self.run_background_until(end);
            let now = self.net.now_s();
            let mut decided = false;
            for k in 0..self.slots.len() {
                if self.slots[k].is_timed() && self.slots[k].mi_end_s <= now {
                    decided |= self.on_slot_time(k, now);
                }
            }
            if decided {
                return;
            }
        }
    }

    /// Runs events until `end` (the crossing event included), closing background senders'
    /// MIs as they end.
    fn run_background_until(&mut self, end: f64) {
        let sizing = self.scenario.config().monitor_interval;
        let durations = &mut self.background_mi_dur_s;
        let last_mis = &mut self.last_mis;
        self.net.run_until(end, &mut self.rng, |net, i| {
            let now = net.now_s();
            let mi = net.senders_mut()[i].close_mi(now);
            if mi.rtt.mean_s > 0.0 {
                durations[i] = sizing.rtt_factor * mi.rtt.mean_s;
            }
            last_mis[i] = mi;
            let next = sizing.duration_s(durations[i], net.senders()[i].rate_pps());
            net.set_mi_end(i, now + next);
        });
    }

    /// Slot `k`'s wait or MI ended at `now`; returns whether it now decides or closed an MI
    /// after its warm-up.
    fn on_slot_time(&mut self, k: usize, now: f64) -> bool {
        let sender = self.slots[k].sender;
        if self.slots[k].phase == SlotPhase::Waiting {
            // Its sender started: the MI clock starts with it (the empty MI is dropped).
            self.net.senders_mut()[sender].close_mi(now);
            let delay = self.net.link().params_at(now).delay_s;
            let extra = self.net.senders()[sender].extra_rtt_s();
            self.slots[k]
                .sender_loop
                .restart(one_way_estimate(delay, extra));
            self.start_mi_or_decide(k);
            return self.slots[k].phase == SlotPhase::Ready;
        }
        let mi = self.net.senders_mut()[sender].close_mi(now);
        self.last_mis[sender] = mi;
        let warming_up = self.slots[k].sender_loop.in_warmup();
        let probe_mi = self.slots[k].sender_loop.probing();
        let decides = self.slots[k].sender_loop.on_mi(&mi);
        if warming_up {
            self.start_mi_or_decide(k);
            return self.slots[k].phase == SlotPhase::Ready;
        }
        // A running sender that is no longer active has reached its stop time: it left.
        let left = !self.net.senders()[sender].is_active(now);
        if probe_mi {
            // A probe MI is the clock's, not the agent's: no step; the agent decides after the
            // last one, from the rate it had chosen. Evaluations still count it.
            let (info, _) = self.mi_outcome(k, &mi, self.slots[k].sender_loop.probe_rate_pps());
            let mode = self.slots[k].sender_loop.mode();
            self.probe_mis[k].push(ProbeMi { info, mi, mode });
            if left {
                self.retire(k, now);
            } else if decides {
                self.end_probe(k);
            } else {
                self.begin_probe_mi(k);
            }
            // The caller sees every MI a learned sender closes (`Env::last_mi`).
            return true;
        }
        let step = self.finish_mi(k, &mi);
        self.completions[k] = Some(step);
        if step.truncated || left {
            self.retire(k, now);
        } else if self.slots[k].sender_loop.probing() {
            self.begin_probe_mi(k);
        } else {
            self.slots[k].phase = SlotPhase::Ready;
        }
        true
    }

    /// Slot `k`'s trajectory ends at `now` (its MI limit, or its sender left): while other
    /// learned senders go on, its flow leaves the link.
    fn retire(&mut self, k: usize, now: f64) {
        self.slots[k].phase = SlotPhase::Done;
        if self.slots.iter().any(AgentSlot::is_live) {
            let sender = self.slots[k].sender;
            self.net.senders_mut()[sender].set_stop(now);
        }
    }

    /// Starts one of slot `k`'s base-RTT probe MIs: the sender paces at the probe's share of
    /// the agent's rate.
    fn begin_probe_mi(&mut self, k: usize) {
        let now = self.net.now_s();
        let slot = &mut self.slots[k];
        let rate = slot.sender_loop.probe_rate_pps();
        let sender = &mut self.net.senders_mut()[slot.sender];
        sender.set_rate_pps(rate);
        let d = slot.sender_loop.next_duration_s(sender.rate_pps());
        slot.phase = SlotPhase::Running;
        slot.mi_end_s = now + jittered(d, self.mi_jitter, &mut self.rng);
    }

    /// Ends slot `k`'s probe: the sender paces at the agent's rate again and the agent decides.
    fn end_probe(&mut self, k: usize) {
        let slot = &mut self.slots[k];
        self.net.senders_mut()[slot.sender].set_rate_pps(slot.sender_loop.agent_rate_pps());
        slot.phase = SlotPhase::Ready;
    }

    /// The reward and statistics of slot `k`'s closed MI.
    fn finish_mi(&mut self, k: usize, mi: &MonitorInterval) -> Step {
        let cfg = self.scenario.config();
        let (info, reward) = self.mi_outcome(k, mi, self.slots[k].sender_loop.agent_rate_pps());
        let steps = self.slots[k].steps + 1;
        self.slots[k].steps = steps;
        Step {
            reward,
            terminated: false,
            truncated: steps >= cfg.episode_mis,
            info,
        }
    }

    /// The statistics and reward of slot `k`'s closed MI, paced at `rate_pps`.
    fn mi_outcome(&self, k: usize, mi: &MonitorInterval, rate_pps: f64) -> (StepInfo, f64) {
        let cfg = self.scenario.config();
        let link = self.net.link();
        let slot = &self.slots[k];
        let outcome = MiOutcome::of_mi(
            mi,
            cfg.metrics,
            link.capacity_pps(mi.send_start_s, mi.send_end_s),
            2.0 * link.params_at(mi.send_end_s).delay_s
                + self.net.senders()[slot.sender].extra_rtt_s(),
        );
        let flows = if cfg.reward_terms.is_off() && cfg.reward_capacity.is_link() {
            1
        } else {
            self.flows_on_link(mi.send_end_s)
        };
        let rewarded = MiOutcome {
            capacity_pps: cfg.reward_capacity.of(outcome.capacity_pps, flows),
            ..outcome
        };
        let mut reward = cfg.reward.reward(&rewarded, &slot.objective);
        if !cfg.reward_terms.is_off() {
            reward += cfg.reward_terms.value(&SharingOutcome {
                delivered_pps: outcome.delivered_pps,
                fair_share_pps: RewardCapacity::FairShare.of(outcome.capacity_pps, flows),
                flows,
                rate_pps: slot.sender_loop.agent_rate_pps(),
                previous_rate_pps: slot.previous_rate_pps,
            });
        }
        (StepInfo::new(mi, &outcome, rate_pps, reward), reward)
    }

    /// Whether a classic sender takes part in this episode as cross traffic (not one observed
    /// in a learned sender's place).
    fn cross_traffic_takes_part(&self) -> bool {
        let cfg = self.scenario.config();
        cfg.senders
            .iter()
            .zip(&self.starts)
            .any(|(sc, start)| start.is_some() && !sc.observe && sc.controller.classic().is_some())
    }

    /// Senders (learned and classic) taking part at `t`.
    pub fn flows_on_link(&self, t: f64) -> usize {
        self.net.senders().iter().filter(|s| s.is_active(t)).count()
    }

    /// Applies slot `k`'s action and starts its MI. The rule steps the rate the sender paces
    /// at; a rate action sets it (within the simulator's limits); a sender that sets its own
    /// rate ignores actions.
    fn begin_mi(&mut self, k: usize, action: Action) {
        let sender_index = self.slots[k].sender;
        let acts =
            self.scenario.config().senders[sender_index].controller == ControllerConfig::Agent;
        let sender = &mut self.net.senders_mut()[sender_index];
        let previous = sender.rate_pps();
        let slot = &mut self.slots[k];
        slot.previous_rate_pps = slot.sender_loop.agent_rate_pps();
        match action {
            // Without an agent the observed sender sets its own rate; actions are ignored.
            _ if !acts => slot.sender_loop.set_rate(previous),
            Action::Delta(a) => slot.sender_loop.apply_from(previous, a),
            Action::Rate(r) if r.is_nan() => slot.sender_loop.set_rate(previous),
            Action::Rate(r) => slot
                .sender_loop
                .set_rate(r.clamp(MIN_SIM_RATE_PPS, MAX_SIM_RATE_PPS)),
        }
        if acts {
            sender.set_rate_pps(slot.sender_loop.agent_rate_pps());
        }
        let mi_rate = sender.rate_pps();
        slot.phase = SlotPhase::Running;
        let d = slot.sender_loop.next_duration_s(mi_rate);
        slot.mi_end_s = self.net.now_s() + jittered(d, self.mi_jitter, &mut self.rng);
    }

    /// Gives every deciding slot its action (`actions[k]` for slot `k`; others are ignored)
    /// and runs the network until some slot decides again or completes an MI. Afterwards
    /// [`Env::slot_completion`] says what each slot's closed MI gave.
    /// [`Env::slot_probe_mis`] says which base-RTT probe MIs each slot closed.
    pub fn step_slots(&mut self, actions: &[Action]) {
        self.clear_probe_mis();
        self.run_slots(actions);
    }

    /// [`Env::step_slots`] without forgetting the probe MIs closed before.
    fn run_slots(&mut self, actions: &[Action]) {
        self.completions.fill(None);
        for (k, &action) in actions.iter().enumerate().take(self.slots.len()) {
            if self.slots[k].phase == SlotPhase::Ready {
                self.begin_mi(k, action);
            }
        }
        self.advance();
    }

    /// Applies `action` to the first learned sender, simulates until its MI closes (and a
    /// base-RTT probe that follows it has ended) and returns what the MI gave. Other learned
    /// senders keep their rates. Stepping on after the episode's MI limit continues the
    /// episode (every step then reports `truncated`).
    pub fn step(&mut self, action: Action) -> Step {
        let mut decide = |_: &Env, k: usize| if k == 0 { action } else { Action::Delta(0.0) };
        let step = self.step_driving(decide);
        // A base-RTT probe after the MI runs to its end, so that the observation after the
        // step is the one the next action answers.
        let mut actions = std::mem::take(&mut self.action_scratch);
        while self.slots[0].phase == SlotPhase::Running && self.slots[0].sender_loop.probing() {
            self.step_ready_slots(&mut actions, &mut decide);
        }
        self.action_scratch = actions;
        step
    }

    /// Simulates until the first learned sender's MI closes and returns what it gave; every
    /// learned sender that decides on the way gets `decide(env, slot)`. With one learned
    /// sender, stepping on after the episode's MI limit continues the episode (every step then
    /// reports `truncated`); with several, a first sender that has left (MI limit or stop time)
    /// gives an empty, truncated step. Scenarios for one long connection set a large
    /// `episode_mis` (`Scenario::with_episode_mis`).
    pub fn step_driving(&mut self, mut decide: impl FnMut(&Env, usize) -> Action) -> Step {
        self.clear_probe_mis();
        if self.slots[0].phase == SlotPhase::Done && self.episode_over() {
            // Stepping on past the MI limit: a probe the last MI started runs first.
            if self.slots[0].sender_loop.probing() {
                self.begin_probe_mi(0);
            } else {
                self.slots[0].phase = SlotPhase::Ready;
            }
        }
        let mut actions = std::mem::take(&mut self.action_scratch);
        let step = loop {
            self.step_ready_slots(&mut actions, &mut decide);
            if let Some(step) = self.completions[0] {
                break step;
            }
            if !self.slots[0].is_live() {
                break Step {
                    reward: 0.0,
                    terminated: false,
                    truncated: true,
                    info: StepInfo::default(),
                };
            }
        };
        self.action_scratch = actions;
        step
    }

    /// One [`Env::step_slots`] with `decide(env, slot)` for every ready slot.
    fn step_ready_slots(
        &mut self,
        actions: &mut Vec<Action>,
        decide: &mut impl FnMut(&Env, usize) -> Action,
    ) {
        actions.clear();
        for k in 0..self.slots.len() {
            let ready = self.slots[k].phase == SlotPhase::Ready;
            actions.push(if ready {
                decide(self, k)
            } else {
                Action::Delta(0.0)
            });
        }
        self.run_slots(actions);
    }

    /// The base-RTT probe MIs slot `k` closed in the last [`Env::step`], [`Env::step_driving`]
    /// or [`Env::step_slots`], in order (no step or reward is given for them; evaluations count
    /// them). The MIs of an [`Env::step_driving`]'s probe precede the MI it returns; those of an
    /// [`Env::step`]'s follow its MI, except past the episode's MI limit, where the probe the
    /// last MI started runs at the next step's start and precedes its MI.
    pub fn slot_probe_mis(&self, k: usize) -> &[ProbeMi] {
        &self.probe_mis[k]
    }

    fn clear_probe_mis(&mut self) {
        for mis in &mut self.probe_mis {
            mis.clear();
        }
    }

    /// The reward kind in force.
    pub fn reward_kind(&self) -> RewardKind {
        self.scenario.config().reward
    }
}

/// A sender's one-way delay as its MI clock first estimates it: the link's plus half its own
/// access path's round trip.
fn one_way_estimate(link_delay_s: f64, extra_rtt_s: f64) -> f64 {
    if extra_rtt_s > 0.0 {
        link_delay_s + 0.5 * extra_rtt_s
    } else {
        link_delay_s
    }
}

/// An MI length with the host's timing jitter: `d * U(1 - j, 1 + j)` (no draw when `j` is 0).
fn jittered<R: Rng>(d: f64, j: f64, rng: &mut R) -> f64 {
    if j > 0.0 {
        d * rng.random_range(1.0 - j..=1.0 + j)
    } else {
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ScenarioConfig;

    #[test]
    fn out_of_range_rates_are_clamped_not_fatal() {
        let scenario = Arc::new(
            Scenario::new(ScenarioConfig::fixed_link(100.0, 0.01, 10.0, 0.0), None).unwrap(),
        );
        let mut env = Env::new(scenario, 0, 0);
        let before = env.network().senders()[0].rate_pps();
        let s = env.step(Action::Rate(f64::NAN));
        assert_eq!(s.info.rate_pps, before);
        for (r, expect) in [
            (0.0, MIN_SIM_RATE_PPS),
            (-10.0, MIN_SIM_RATE_PPS),
            (f64::INFINITY, MAX_SIM_RATE_PPS),
        ] {
            let mut env = env.clone();
            let s = env.step(Action::Rate(r));
            assert_eq!(s.info.rate_pps, expect);
            assert!(s.info.time_s.is_finite());
        }
    }
}
