//! A whole environment (`ScenarioConfig`): link, senders, MI rule, episode length, observation,
//! action, reward, objective; its validation and the sender loop its agents run.

use super::checks::{positive, probability, validate_objective};
use super::flows::{FlowCount, LearnedFlowsConfig};
use super::link::LinkConfig;
use super::range::{is_zero_range, zero_range, QueueRange, Range};
use super::sender::{default_senders, ControllerConfig, SenderConfig, StartRate};
use crate::error::ScenarioError;
use crate::limits::{MAX_DELAY_S, MAX_SIM_RATE_PPS, MIN_SIM_RATE_PPS};
use crate::reward::RewardKind;
use mocc_policy::{ActionRule, LoopSpec, MetricsVersion, MonitorIntervalConfig, ObservationConfig};
use serde::{Deserialize, Serialize};

/// A whole environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioConfig {
    /// The bottleneck link.
    #[serde(default)]
    pub link: LinkConfig,
    /// The senders sharing it. The env observes and rewards every `controller: agent` sender,
    /// each with its own MI clock (or, without one, the first sender, e.g. to evaluate a classic
    /// one).
    #[serde(default = "default_senders")]
    pub senders: Vec<SenderConfig>,
    /// Learned flows drawn per episode (1 to 64 of them, arriving and leaving), before the
    /// listed senders, which then list only the others (classic, constant, on-off). A scenario
    /// expands it into its senders and `flow_count` when validated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learned_flows: Option<LearnedFlowsConfig>,
    /// How many of the first senders (all learned) take part in an episode, drawn per
    /// episode: what `learned_flows` expands into.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_count: Option<FlowCount>,
    /// MI sizing.
    #[serde(default)]
    pub monitor_interval: MonitorIntervalConfig,
    /// MIs run by `reset` before the first observation (Aurora: 2; not recorded in the history).
    #[serde(default = "default_warmup")]
    pub warmup_mis: u32,
    /// Steps per episode; reaching it is a truncation (Aurora: 400).
    #[serde(default = "default_episode_mis")]
    pub episode_mis: u32,
    /// Observation features, history and latency baseline.
    #[serde(default)]
    pub observation: ObservationConfig,
    /// Reward of each MI: `aurora` or `mocc`.
    #[serde(default)]
    pub reward: RewardKind,
    /// Metric definitions: `aurora` (PCC-RL as published: recv rate counts one packet fewer,
    /// latency ratio 1 before any RTT sample) or `delivered` (the later PCC-RL revision MOCC
    /// builds on: recv rate = acked / duration, latency ratio 0 before any sample).
    #[serde(default)]
    pub metrics: MetricsVersion,
    /// The action rule and rate limits.
    #[serde(default)]
    pub action: ActionRule,
    /// Objective weights (throughput, latency, loss) of the `mocc` reward until the trainer sets
    /// its own; positive, summing to 1.
    #[serde(default = "default_objective")]
    pub objective: [f64; 3],
    /// MI timing jitter of real hosts: each learned sender's MI lasts its clock's length times
    /// U(1 - j, 1 + j), with j drawn per episode from this range (0: off).
    #[serde(default = "zero_range", skip_serializing_if = "is_zero_range")]
    pub mi_jitter: Range,
    /// Optional reward terms added to the reward (each off by default).
    #[serde(default, skip_serializing_if = "crate::reward::RewardTerms::is_off")]
    pub reward_terms: crate::reward::RewardTerms,
    /// What the `mocc` reward's throughput term divides delivery by: the link's capacity
    /// (`link`, MOCC's) or the flow's fair share of it (`fair_share`).
    #[serde(
        default,
        skip_serializing_if = "crate::reward::RewardCapacity::is_link"
    )]
    pub reward_capacity: crate::reward::RewardCapacity,
}

/// The most warm-up MIs a reset runs (Aurora runs 2).
pub const MAX_WARMUP_MIS: u32 = 10_000;

fn default_warmup() -> u32 {
    2
}
fn default_episode_mis() -> u32 {
    400
}
fn default_objective() -> [f64; 3] {
    [1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0]
}

impl Default for ScenarioConfig {
    fn default() -> Self {
        Self {
            link: LinkConfig::default(),
            senders: default_senders(),
            learned_flows: None,
            flow_count: None,
            monitor_interval: MonitorIntervalConfig::default(),
            warmup_mis: default_warmup(),
            episode_mis: default_episode_mis(),
            observation: ObservationConfig::default(),
            reward: RewardKind::default(),
            metrics: MetricsVersion::default(),
            action: ActionRule::default(),
            objective: default_objective(),
            mi_jitter: zero_range(),
            reward_terms: crate::reward::RewardTerms::default(),
            reward_capacity: crate::reward::RewardCapacity::default(),
        }
    }
}

impl ScenarioConfig {
    /// The config with `learned_flows` expanded into its senders and `flow_count` (unchanged
    /// without it): the learned flows first, then the listed senders, which may not be learned
    /// (the default lone agent, when `senders` is not written, gives way to the flows).
    pub fn expanded(mut self) -> Result<Self, ScenarioError> {
        let Some(flows) = self.learned_flows.take() else {
            return Ok(self);
        };
        flows.validate()?;
        if self.flow_count.is_some() {
            return Err(ScenarioError::invalid(
                "flow_count",
                "give learned_flows or flow_count, not both",
            ));
        }
        let listed = if self.senders == default_senders() {
            Vec::new()
        } else {
            std::mem::take(&mut self.senders)
        };
        if let Some(i) = listed
            .iter()
            .position(|s| s.controller == ControllerConfig::Agent)
        {
            return Err(ScenarioError::invalid(
                format!("senders[{i}].controller"),
                "with learned_flows, senders lists only the other senders (classic, constant, \
                 on-off)",
            ));
        }
        let (mut senders, count) = flows.expand();
        senders.extend(listed);
        self.senders = senders;
        self.flow_count = Some(count);
        Ok(self)
    }

    /// Checks every value; the error names the offending field.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        self.link.validate()?;
        if self.warmup_mis > MAX_WARMUP_MIS {
            return Err(ScenarioError::invalid(
                "warmup_mis",
                format!("must be <= {MAX_WARMUP_MIS} (got {})", self.warmup_mis),
            ));
        }
        if let Some(f) = &self.learned_flows {
            f.validate()?;
        }
        if let Some(c) = &self.flow_count {
            c.validate(&self.senders)?;
        }
        if self.senders.is_empty() {
            return Err(ScenarioError::invalid(
                "senders",
                "at least one sender is required",
            ));
        }
        let first_agent = self.agent_index();
        for (i, s) in self.senders.iter().enumerate() {
            let f = |name: &str| format!("senders[{i}].{name}");
            s.start_time_s.check(&f("start_time_s"), 0.0, false, 1e9)?;
            if let Some(d) = s.duration_s {
                d.check(&f("duration_s"), 0.0, true, 1e9)?;
                if s.stop_time_s.is_some() {
                    return Err(ScenarioError::invalid(
                        f("duration_s"),
                        "give stop_time_s or duration_s, not both",
                    ));
                }
            }
            if let Some(stop) = s.stop_time_s {
                stop.check(&f("stop_time_s"), 0.0, true, 1e9)?;
                if stop.min() <= s.start_time_s.max() {
                    return Err(ScenarioError::invalid(
                        f("stop_time_s"),
                        format!(
                            "must be after the latest start_time_s {} (got {})",
                            s.start_time_s.max(),
                            stop.min()
                        ),
                    ));
                }
            }
            probability(&f("probability"), s.probability)?;
            Range::Fixed(s.extra_rtt_s).check(&f("extra_rtt_s"), 0.0, false, MAX_DELAY_S)?;
            if i == first_agent && s.probability < 1.0 {
                return Err(ScenarioError::invalid(
                    f("probability"),
                    "the first sender the env observes takes part in every episode; must be 1",
                ));
            }
            match s.start_rate {
                StartRate::BandwidthFactor(r) => {
                    r.check(&f("start_rate.bandwidth_factor"), 0.0, true, 1e6)?
                }
                StartRate::Pps(r) => r.check(
                    &f("start_rate.pps"),
                    MIN_SIM_RATE_PPS,
                    false,
                    MAX_SIM_RATE_PPS,
                )?,
            }
            if let ControllerConfig::OnOff { on_s, off_s, .. } = s.controller {
                positive(&f("controller.on_off.on_s"), on_s)?;
                positive(&f("controller.on_off.off_s"), off_s)?;
            }
        }
        self.monitor_interval
            .validate()
            .map_err(|(f, m)| ScenarioError::invalid(format!("monitor_interval.{f}"), m))?;
        if self.episode_mis == 0 {
            return Err(ScenarioError::invalid(
                "episode_mis",
                "must be >= 1 (got 0)",
            ));
        }
        self.observation
            .validate()
            .map_err(|(f, m)| ScenarioError::invalid(format!("observation.{f}"), m))?;
        self.mi_jitter.check("mi_jitter", 0.0, false, 0.5)?;
        self.reward_terms.validate()?;
        if !self.reward_capacity.is_link() && self.reward != RewardKind::Mocc {
            return Err(ScenarioError::invalid(
                "reward_capacity",
                "fair_share needs `reward: mocc` (Aurora's reward does not normalize throughput)",
            ));
        }
        self.action
            .validate()
            .map_err(|e| ScenarioError::invalid("action", e.to_string()))?;
        if self.action.scales_window() && self.observation.train_packets() > 1 {
            return Err(ScenarioError::invalid(
                "observation.capacity_trains",
                "action.window_scale (Orca) sends as its Cubic does: no capacity trains",
            ));
        }
        validate_objective("objective", &self.objective)
    }

    /// The agent sender's loop (observation, metrics, MI sizing, warm-up, rate rule): the one a
    /// deployed `Controller` of a policy trained here runs.
    pub fn loop_spec(&self) -> LoopSpec<'_> {
        LoopSpec {
            observation: &self.observation,
            metrics: self.metrics,
            sizing: self.monitor_interval,
            warmup_mis: self.warmup_mis,
            rule: self.action,
        }
    }

    /// Sender `sender`'s loop: the agent's, without base-RTT probes and mode switch for an
    /// observed sender that sets its own rate (constant, on-off, classic).
    pub fn loop_spec_of(&self, sender: usize) -> LoopSpec<'_> {
        if self.acts(sender) {
            self.loop_spec()
        } else {
            self.loop_spec().self_paced()
        }
    }

    /// Whether sender `sender` is an agent (its rate is the policy's).
    pub(crate) fn acts(&self, sender: usize) -> bool {
        self.senders
            .get(sender)
            .is_some_and(|s| s.controller == ControllerConfig::Agent)
    }

    /// Whether sender `i` is one of the learned flows `flow_count` counts.
    pub fn is_learned_flow(&self, i: usize) -> bool {
        self.flow_count.is_some_and(|c| i < c.count.max as usize)
    }

    /// Whether a sender is the learning agent (training needs one).
    pub fn has_agent(&self) -> bool {
        self.senders
            .iter()
            .any(|s| s.controller == ControllerConfig::Agent)
    }

    /// Indices of the senders the env observes and rewards, one slot each: every `agent`
    /// sender and every sender marked `observe`, in order, or (without any) the first sender.
    pub fn observed_senders(&self) -> Vec<usize> {
        let agents: Vec<usize> = (0..self.senders.len())
            .filter(|&i| {
                self.senders[i].controller == ControllerConfig::Agent || self.senders[i].observe
            })
            .collect();
        if agents.is_empty() {
            vec![0]
        } else {
            agents
        }
    }

    /// Index of the (first) observed sender: the first agent, or the first sender without one.
    pub fn agent_index(&self) -> usize {
        self.senders
            .iter()
            .position(|s| s.controller == ControllerConfig::Agent)
            .unwrap_or(0)
    }

    /// A fixed single-bottleneck Aurora scenario (`--network bw_pps=..,delay_s=..,..`).
    pub fn fixed_link(bandwidth_pps: f64, delay_s: f64, queue_pkts: f64, loss: f64) -> Self {
        Self {
            link: LinkConfig {
                bandwidth_pps: Range::Fixed(bandwidth_pps),
                delay_s: Range::Fixed(delay_s),
                queue_pkts: QueueRange::Fixed(queue_pkts),
                loss: Range::Fixed(loss),
                ..LinkConfig::default()
            },
            ..Self::default()
        }
    }
}
