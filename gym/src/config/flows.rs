//! Learned flows drawn per episode (`learned_flows:`): an episode holds a number of learned
//! flows drawn from a range, arriving and leaving at drawn times, each with its monitor
//! intervals at a random phase, so that training sees links shared by 1 to 32 flows of one
//! policy without the scenario listing each.
//!
//! A scenario written with `learned_flows` is expanded when it is validated
//! ([`crate::Scenario::new`]): its senders become `count.max` learned senders followed by the
//! listed (classic, constant or on-off) ones, and `flow_count` says how many of the learned
//! ones take part in an episode. The expanded form is what checkpoints store; it reads back to
//! the same scenario.

use super::range::{zero_range, Range};
use super::sender::{ControllerConfig, SenderConfig, StartRate};
use crate::error::ScenarioError;
use serde::{Deserialize, Serialize};

/// The most learned flows an episode may hold.
pub const MAX_LEARNED_FLOWS: u32 = 64;

/// A whole-number range, drawn uniformly per episode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CountRange {
    /// The fewest.
    pub min: u32,
    /// The most.
    pub max: u32,
}

impl CountRange {
    /// Checks `1 <= min <= max <= MAX_LEARNED_FLOWS`.
    pub fn validate(&self, field: &str) -> Result<(), ScenarioError> {
        if self.min == 0 || self.min > self.max || self.max > MAX_LEARNED_FLOWS {
            return Err(ScenarioError::invalid(
                field,
                format!(
                    "must satisfy 1 <= min <= max <= {MAX_LEARNED_FLOWS} (got {} to {})",
                    self.min, self.max
                ),
            ));
        }
        Ok(())
    }
}

/// The `learned_flows:` section as written.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LearnedFlowsConfig {
    /// How many learned flows an episode holds, drawn uniformly (the first always takes part).
    pub count: CountRange,
    /// When each flow but the first starts (s), drawn per flow and episode; the first starts
    /// at 0.
    #[serde(default = "zero_range")]
    pub start_time_s: Range,
    /// How long each flow stays (s), drawn per flow and episode (absent: to the episode's end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<Range>,
    /// Each flow's rate at its start (default: Aurora's U(0.3, 1.5) x capacity).
    #[serde(default = "default_start_rate")]
    pub start_rate: StartRate,
    /// Each flow's first monitor interval lasts U(0.5, 1.5) times its length, so that flows
    /// that start together do not decide in lockstep (default: on).
    #[serde(default = "yes")]
    pub mi_phase: bool,
}

/// What the expanded scenario keeps of `learned_flows`: the first `count.max` senders are the
/// learned flows, of which a drawn number take part in each episode.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowCount {
    /// How many of the first `max` senders take part, drawn uniformly per episode.
    pub count: CountRange,
    /// Each learned flow's first MI lasts U(0.5, 1.5) times its length.
    #[serde(default = "yes")]
    pub mi_phase: bool,
}

fn yes() -> bool {
    true
}

fn default_start_rate() -> StartRate {
    SenderConfig::default().start_rate
}

impl LearnedFlowsConfig {
    /// Checks the section (`learned_flows.` fields).
    pub fn validate(&self) -> Result<(), ScenarioError> {
        self.count.validate("learned_flows.count")?;
        self.start_time_s
            .check("learned_flows.start_time_s", 0.0, false, 1e9)?;
        if let Some(d) = &self.duration_s {
            d.check("learned_flows.duration_s", 0.0, true, 1e9)?;
        }
        Ok(())
    }

    /// The learned senders the section stands for (`count.max` of them: the first from 0,
    /// the others from their drawn start) and what the scenario keeps of it.
    pub fn expand(&self) -> (Vec<SenderConfig>, FlowCount) {
        let flow = |start_time_s: Range| SenderConfig {
            controller: ControllerConfig::Agent,
            start_rate: self.start_rate,
            start_time_s,
            duration_s: self.duration_s,
            ..SenderConfig::default()
        };
        let mut senders = vec![flow(zero_range())];
        senders.extend((1..self.count.max).map(|_| flow(self.start_time_s)));
        (
            senders,
            FlowCount {
                count: self.count,
                mi_phase: self.mi_phase,
            },
        )
    }
}

impl FlowCount {
    /// Checks it against the senders it counts: the first `count.max` must be learned.
    pub fn validate(&self, senders: &[SenderConfig]) -> Result<(), ScenarioError> {
        self.count.validate("flow_count.count")?;
        let max = self.count.max as usize;
        let learned = senders
            .iter()
            .take(max)
            .filter(|s| s.controller == ControllerConfig::Agent)
            .count();
        if learned < max {
            return Err(ScenarioError::invalid(
                "flow_count.count.max",
                format!("the first {max} senders must be learned (`controller: agent`)"),
            ));
        }
        Ok(())
    }
}
