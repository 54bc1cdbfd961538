//! `TrainConfig`: everything a training run needs, from YAML (strict) with `--set` overrides.

mod agent;
mod budget;
mod checkpoint;
mod error;
mod loaded;
mod logging;
mod overrides;
mod scenario_ref;
#[cfg(test)]
mod tests;
mod train;

pub use agent::{AgentConfig, CriticKind, Preset};
pub use budget::BudgetConfig;
pub use checkpoint::CheckpointConfig;
pub use error::{plain_message, ConfigError};
pub use loaded::{LoadedConfig, MAX_BATCH};
pub use logging::LoggingConfig;
pub use overrides::apply_override;
pub use scenario_ref::ScenarioRef;
pub use train::TrainConfig;
