//! [`TrainConfig`]: a training config's top level, its sections and their defaults.

use super::agent::AgentConfig;
use super::budget::BudgetConfig;
use super::checkpoint::CheckpointConfig;
use super::logging::LoggingConfig;
use super::scenario_ref::ScenarioRef;
use crate::adapt::AdaptConfig;
use crate::schedule::MoccConfig;
use mocc_agents::{DeviceChoice, PpoConfig};
use serde::{Deserialize, Serialize};

/// A training run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainConfig {
    /// The environment: a scenario file path (relative to this file) or an inline scenario.
    pub scenario: ScenarioRef,
    /// The networks.
    #[serde(default)]
    pub agent: AgentConfig,
    /// PPO hyper-parameters.
    #[serde(default)]
    pub ppo: PpoConfig,
    /// Number of parallel envs.
    #[serde(default = "default_envs")]
    pub envs: usize,
    /// Training length.
    pub budget: BudgetConfig,
    /// Seed of everything (envs, init, sampling, minibatches).
    #[serde(default)]
    pub seed: u64,
    /// `auto`, `cpu` or `cuda`.
    #[serde(default)]
    pub device: DeviceChoice,
    /// Simulator worker threads (rayon).
    #[serde(default = "default_threads")]
    pub threads: usize,
    /// libtorch threads (1 by default: more fights the simulator for cores).
    #[serde(default = "default_torch_threads")]
    pub torch_threads: usize,
    /// Logging.
    #[serde(default)]
    pub logging: LoggingConfig,
    /// Checkpoints.
    #[serde(default)]
    pub checkpoint: CheckpointConfig,
    /// MOCC's landmark objectives and two-phase schedule (single-objective training when
    /// absent). Needs the scenario's `reward: mocc`.
    #[serde(default)]
    pub mocc: Option<MoccConfig>,
    /// Adaptation of a pretrained model to a new objective, with requirement replay
    /// (`mocc adapt` writes it). Needs the scenario's `reward: mocc`.
    #[serde(default)]
    pub adapt: Option<AdaptConfig>,
}

fn default_envs() -> usize {
    16
}
fn default_threads() -> usize {
    2
}
fn default_torch_threads() -> usize {
    1
}
