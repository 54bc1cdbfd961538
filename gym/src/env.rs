//! One environment: a network episode seen by the agent sender, one MI per step.

use crate::cc::ClassicCc;
use crate::config::ControllerConfig;
use crate::link::LinkParams;
use crate::reward::{MiOutcome, RewardKind};
use crate::scenario::Scenario;
use crate::sim::{Network, Sender, SimCounters};
use mocc_policy::{MiClock, MonitorInterval, ObservationBuilder};
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

/// Lowest pacing rate the simulator accepts (packets/s): one packet every 1000 s.
pub const MIN_SIM_RATE_PPS: f64 = 1e-3;
/// Highest pacing rate the simulator accepts (packets/s): 12 Gbit/s of 1500-byte packets.
pub const MAX_SIM_RATE_PPS: f64 = 1e6;

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

/// The complete state of an env (RNG, network, history, MI clocks), for exact resume.
/// The scenario itself is not part of it.
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
}

/// A single environment (Gymnasium-style, without auto-reset).
#[derive(Debug, Clone)]
pub struct Env {
    scenario: Arc<Scenario>,
    index: u64,
    rng: ChaCha8Rng,
    net: Network,
    /// The agent's MI clock and observation history.
    clock: MiClock,
    agent: usize,
    background_mi_dur_s: Vec<f64>,
    last_mis: Vec<MonitorInterval>,
    steps: u32,
    objective: [f64; 3],
    episode: LinkParams,
}

impl Env {
    /// Env number `index` of a batch seeded with `seed`, already reset.
    pub fn new(scenario: Arc<Scenario>, seed: u64, index: u64) -> Self {
        let n = scenario.config().senders.len();
        let link = scenario.build_link(LinkParams {
            bandwidth_pps: 1.0,
            delay_s: 1.0,
            queue_pkts: 1.0,
            loss: 0.0,
        });
        let senders = (0..n)
            .map(|_| Sender::new(1.0, crate::sim::Pacing::Continuous, 0.0))
            .collect();
        let mut env = Self {
            clock: scenario.config().mi_clock(),
            agent: scenario.config().agent_index(),
            objective: scenario.config().objective,
            scenario,
            index,
            rng: env_rng(seed, index),
            net: Network::new(link, senders),
            background_mi_dur_s: vec![0.0; n],
            last_mis: vec![MonitorInterval::default(); n],
            steps: 0,
            episode: LinkParams::default(),
        };
        env.reset(None);
        env
    }

    /// Captures the whole state.
    pub fn snapshot(&self) -> EnvSnapshot {
        EnvSnapshot {
            index: self.index,
            rng: self.rng.clone(),
            net: self.net.clone(),
            obs: self.clock.history().clone(),
            mi_dur_s: self.clock.rtt_based_duration_s(),
            background_mi_dur_s: self.background_mi_dur_s.clone(),
            last_mis: self.last_mis.clone(),
            steps: self.steps,
            objective: self.objective,
            episode: self.episode,
        }
    }

    /// Rebuilds an env of `scenario` from a snapshot taken with the same scenario.
    pub fn restore(scenario: Arc<Scenario>, snap: EnvSnapshot) -> Result<Self, String> {
        let senders = scenario.config().senders.len();
        if snap.net.senders().len() != senders || snap.obs.obs_len() != scenario.obs_len() {
            return Err(format!(
                "env {}: snapshot has {} senders and observations of {}, the scenario {} and {}",
                snap.index,
                snap.net.senders().len(),
                snap.obs.obs_len(),
                senders,
                scenario.obs_len()
            ));
        }
        let mut net = snap.net;
        let (outages, trace) = scenario.shared_link_parts();
        net.link_mut().reattach(outages, trace);
        let cfg = scenario.config();
        let clock = MiClock::resume(
            snap.obs,
            cfg.monitor_interval,
            cfg.warmup_mis,
            snap.mi_dur_s,
        );
        Ok(Self {
            agent: cfg.agent_index(),
            scenario,
            index: snap.index,
            rng: snap.rng,
            net,
            clock,
            background_mi_dur_s: snap.background_mi_dur_s,
            last_mis: snap.last_mis,
            steps: snap.steps,
            objective: snap.objective,
            episode: snap.episode,
        })
    }

    /// The scenario.
    pub fn scenario(&self) -> &Arc<Scenario> {
        &self.scenario
    }

    /// Observation length.
    pub fn obs_len(&self) -> usize {
        self.clock.history().obs_len()
    }

    /// The current observation (history of feature rows, oldest first).
    pub fn observation(&self) -> &[f32] {
        self.clock.observation()
    }

    /// The objective `w` the `mocc` reward uses.
    pub fn objective(&self) -> [f64; 3] {
        self.objective
    }

    /// Sets the objective (the trainer's choice; validated by callers).
    pub fn set_objective(&mut self, w: [f64; 3]) {
        self.objective = w;
    }

    /// This episode's link parameters at time 0.
    pub fn episode_params(&self) -> LinkParams {
        self.episode
    }

    /// Steps taken in this episode.
    pub fn steps(&self) -> u32 {
        self.steps
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

    /// Starts a new episode: draws a network, runs the warm-up MIs (not recorded in the
    /// history, as in Aurora) and leaves the observation of empty MIs. `Some(seed)` reseeds this
    /// env's RNG with (seed, index).
    pub fn reset(&mut self, seed: Option<u64>) {
        if let Some(seed) = seed {
            self.rng = env_rng(seed, self.index);
        }
        let scenario = self.scenario.clone();
        let cfg = scenario.config();
        let params = scenario.sample_link(&mut self.rng);
        self.episode = params;
        let link = scenario.build_link(params);
        let delay0 = link.params_at(0.0).delay_s;
        self.net.reset_link(link);
        let initial_mi = cfg.monitor_interval.initial_delay_factor * delay0;
        for (i, sc) in cfg.senders.iter().enumerate() {
            let rate = scenario.sample_start_rate(sc, &params, &mut self.rng);
            let sender = &mut self.net.senders_mut()[i];
            sender.reset(rate, Scenario::pacing(sc), sc.start_time_s);
            if let Some(kind) = sc.controller.classic() {
                let seed = self.rng.random::<u64>();
                sender.set_classic(ClassicCc::seeded(kind, seed));
            }
            self.background_mi_dur_s[i] = initial_mi;
            if i != self.agent {
                let first = cfg.monitor_interval.duration_s(initial_mi, rate);
                self.net.set_mi_end(i, sc.start_time_s + first);
            }
            self.last_mis[i] = MonitorInterval::default();
        }
        self.clock.reset(delay0);
        self.steps = 0;
        while self.clock.in_warmup() {
            let mi = self.run_mi();
            self.clock.on_mi(&mi);
        }
    }

    /// Runs the agent's MI (its length by the agent's MI clock) and closes it.
    fn run_mi(&mut self) -> MonitorInterval {
        let sizing = self.scenario.config().monitor_interval;
        let rate = self.net.senders()[self.agent].rate_pps();
        let end = self.net.now_s() + self.clock.next_duration_s(rate);
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
        let now = self.net.now_s();
        let mi = self.net.senders_mut()[self.agent].close_mi(now);
        self.last_mis[self.agent] = mi;
        mi
    }

    /// Applies `action`, simulates one MI and records it.
    pub fn step(&mut self, action: Action) -> Step {
        let rule = self.scenario.rate_rule();
        let acts = self.scenario.config().senders[self.agent].controller == ControllerConfig::Agent;
        let sender = &mut self.net.senders_mut()[self.agent];
        let rate = match action {
            // Without an agent the observed sender sets its own rate; actions are ignored.
            _ if !acts => sender.rate_pps(),
            Action::Delta(a) => rule.apply(sender.rate_pps(), a),
            Action::Rate(r) if r.is_nan() => sender.rate_pps(),
            Action::Rate(r) => r.clamp(MIN_SIM_RATE_PPS, MAX_SIM_RATE_PPS),
        };
        if acts {
            sender.set_rate_pps(rate);
        }
        let mi = self.run_mi();
        self.clock.on_mi(&mi);
        let cfg = self.scenario.config();
        let link = self.net.link();
        let outcome = MiOutcome {
            throughput_pps: cfg.metrics.throughput_pps(&mi),
            delivered_pps: mi.throughput_pps(),
            mean_rtt_s: mi.avg_latency_s(),
            loss: mi.loss_ratio(),
            capacity_pps: link.capacity_pps(mi.send_start_s, mi.send_end_s),
            base_rtt_s: 2.0 * link.params_at(mi.send_end_s).delay_s,
        };
        let reward = cfg.reward.reward(&outcome, &self.objective);
        self.steps += 1;
        let info = StepInfo {
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
            rate_pps: rate,
            reward,
        };
        Step {
            reward,
            terminated: false,
            truncated: self.steps >= cfg.episode_mis,
            info,
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
