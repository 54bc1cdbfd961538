//! Scenario files: every link parameter, sender, schedule, trace, MI rule, episode length,
//! observation and reward of an environment, as YAML.
//!
//! Parsing is strict (`deny_unknown_fields`), and [`ScenarioConfig::validate`] checks every value,
//! returning an error that names the field. The defaults reproduce Aurora's environment
//! (PCC-RL `network_sim.py`); `configs/aurora-env.yaml` spells them out.

mod checks;
mod flows;
mod link;
mod range;
mod scenario_config;
mod sender;

pub use checks::validate_objective;
pub use flows::{CountRange, FlowCount, LearnedFlowsConfig, MAX_LEARNED_FLOWS};
pub use link::{LinkConfig, OutageConfig, PathChangesConfig, ScheduleEntry};
pub use mocc_policy::{MonitorIntervalConfig, ObservationConfig};
pub use range::{AuroraExpRange, QueueRange, Range, UniformRange};
pub use scenario_config::ScenarioConfig;
pub use sender::{ControllerConfig, SenderConfig, StartRate};
