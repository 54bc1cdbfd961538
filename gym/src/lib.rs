//! mocc-gym: simulated networks for learning congestion control.
//!
//! By default the simulator reproduces Aurora's (PCC-RL `network_sim.py`): packets paced at
//! the sender's rate into a bottleneck with random loss and a tail-drop queue drained at line
//! rate, monitor intervals of half the last mean RTT, Aurora's features, reward and action rule.
//! It generalizes to several senders sharing the bottleneck, time-varying links (schedules,
//! outages, Mahimahi traces) and a windowed latency baseline, each off unless a scenario asks.
//!
//! The crate never prints or writes files, and never depends on libtorch.

pub mod agent_slot;
pub mod cc;
pub mod config;
mod crew;
pub mod env;
pub mod error;
pub mod limits;
pub mod link;
pub mod reward;
pub mod scenario;
pub mod sim;
pub mod team;
pub mod trace;
pub mod vec_env;

pub use agent_slot::SlotPhase;
pub use cc::{ClassicCc, ClassicKind};
pub use config::{ControllerConfig, Range, ScenarioConfig, SenderConfig, StartRate};
pub use env::{
    env_rng, global_state_len, Action, Env, EnvSnapshot, ProbeMi, Step, StepInfo, MAX_SIM_RATE_PPS,
    MIN_SIM_RATE_PPS,
};
pub use error::ScenarioError;
pub use link::{Link, LinkParams};
pub use mocc_policy::serde_float;
pub use mocc_policy::{MetricsVersion, Mode};
pub use reward::{MiOutcome, RewardCapacity, RewardKind, RewardTerms};
pub use scenario::Scenario;
pub use sim::{Network, Pacing, Sender, SimCounters};
pub use trace::Trace;
pub use vec_env::{VecEnv, VecEnvError, VecStep};
