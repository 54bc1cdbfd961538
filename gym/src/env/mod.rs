//! One environment: a network episode seen by the agent sender, one MI per step.

pub mod global_state;
mod mi_timing;
mod slot_mis;
mod snapshot;
mod step;

use crate::agent_slot::{AgentSlot, SlotPhase};
use crate::cc::ClassicCc;
use crate::link::LinkParams;
use crate::reward::RewardKind;
use crate::scenario::Scenario;
use crate::sim::{Network, Sender, SimCounters};
use mocc_policy::{Mode, MonitorInterval, SenderLoop};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;

pub use crate::limits::{MAX_SIM_RATE_PPS, MIN_SIM_RATE_PPS};
pub use global_state::{global_state_len, GLOBAL_FLOW_FEATURES, GLOBAL_LINK_FEATURES};
use mi_timing::one_way_estimate;
pub use snapshot::EnvSnapshot;
pub use step::{Action, ProbeMi, Step, StepInfo};

/// The RNG of env `index` under `seed`: one ChaCha8 key per seed, one stream per env.
pub fn env_rng(seed: u64, index: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(index);
    rng
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
                team: Default::default(),
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
        self.clear_probe_mis();
        let scenario = self.scenario.clone();
        let cfg = scenario.config();
        let params = scenario.sample_link(&mut self.rng);
        self.episode = params;
        let link = scenario.draw_link(params, &mut self.rng);
        let delay0 = link.params_at(0.0).delay_s;
        self.net.reset_link(link);
        self.mi_jitter = scenario.draw_mi_jitter(&mut self.rng);
        let initial_mi = cfg.monitor_interval.initial_delay_factor * delay0;
        let flows = scenario.draw_flow_count(&mut self.rng);
        for (i, sc) in cfg.senders.iter().enumerate() {
            let sits_out = flows.is_some_and(|n| i >= n) && cfg.is_learned_flow(i);
            let presence = if sits_out {
                None
            } else {
                Scenario::draw_presence(sc, &mut self.rng)
            };
            let rate = scenario.sample_start_rate(sc, &params, &mut self.rng);
            let (start, stop) = presence.unwrap_or((f64::INFINITY, f64::INFINITY));
            let sender = &mut self.net.senders_mut()[i];
            sender.reset(rate, Scenario::pacing(sc), start);
            sender.set_stop(stop);
            sender.set_extra_rtt(sc.extra_rtt_s);
            if cfg.acts(i) {
                sender.set_capacity_train(cfg.observation.train_packets());
            }
            if let Some(kind) = sc.controller.classic() {
                let seed = self.rng.random::<u64>();
                sender.set_classic(ClassicCc::seeded(kind, seed));
            } else if cfg.acts(i) && cfg.action.scales_window() {
                sender.set_window_scaled();
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
                    self.phase_first_mi(k);
                    continue;
                }
            };
        }
        self.completions.fill(None);
        self.advance();
        self.finish_first_slot_loop_mis();
    }

    /// With `flow_count.mi_phase`, stretches or shortens the first MI of learned flow `k` that
    /// just started by a factor U(0.5, 1.5), so that flows that start together do not decide
    /// in lockstep (draws nothing otherwise).
    fn phase_first_mi(&mut self, k: usize) {
        let cfg = self.scenario.config();
        let phased = cfg.flow_count.is_some_and(|c| c.mi_phase);
        let slot = &self.slots[k];
        if !phased || !cfg.is_learned_flow(slot.sender) || slot.phase != SlotPhase::Running {
            return;
        }
        let now = self.net.now_s();
        let factor = self.rng.random_range(0.5..1.5);
        let slot = &mut self.slots[k];
        slot.mi_end_s = now + (slot.mi_end_s - now) * factor;
    }

    /// Runs the first learned sender's startup and base-RTT probe MIs to their end (other
    /// learned senders that decide meanwhile keep their rates), so that the observation is the
    /// one its next action answers. Their MIs stay in [`Env::slot_probe_mis`].
    fn finish_first_slot_loop_mis(&mut self) {
        let mut keep = |_: &Env, _: usize| Action::Delta(0.0);
        let mut actions = std::mem::take(&mut self.action_scratch);
        while self.slots[0].phase == SlotPhase::Running && self.slots[0].sender_loop.paces_next_mi()
        {
            self.step_ready_slots(&mut actions, &mut keep);
        }
        self.action_scratch = actions;
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
        while self.slots[0].phase == SlotPhase::Running && self.slots[0].sender_loop.paces_next_mi()
        {
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
                self.begin_loop_mi(0);
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
