//! mocc-agents: the libtorch side of mocc.
//!
//! Device selection and libtorch's thread settings, the Gaussian actor-critic (Aurora and MOCC
//! presets, preference sub-network) and its action distribution, running observation and reward
//! normalization, Adam with checkpointable state, rollout storage, PPO (GAE, clipped loss,
//! minibatch update) and the [`PpoLearner`] that owns all of them for a trainer. The simulator
//! (`mocc-gym`) and the deployable runtime (`mocc-policy`) never depend on this crate.

pub mod adam;
pub mod collective;
pub mod device;
pub mod fingerprint;
pub mod gae;
pub mod gaussian;
pub mod learner;
pub mod model;
pub mod numerics;
pub mod obs_norm;
pub mod orthogonal;
pub mod ppo;
pub mod ppo_config;
pub mod reward_norm;
pub mod rollout;
pub mod torch_seed;
pub mod value_norm;

pub use adam::Adam;
pub use collective::{Collective, SingleProcess, Timed};
pub use device::{init_torch_threads, resolve_device, DeviceChoice, DeviceError};
pub use fingerprint::{fingerprint, Fingerprint};
pub use gae::compute_gae;
pub use learner::{LearnerState, PpoLearner, StepOutcome};
pub use model::{
    load_weights, to_vec, Activation, ActorCritic, Architecture, Inference, PolicyOutput,
    OBJECTIVE_DIM,
};
pub use numerics::{pin_portable_kernels, prepare_kernels, Numerics};
pub use obs_norm::RunningMeanStd;
pub use ppo::{grouped_ppo_loss, ppo_loss, update, Batch, LossStats, Minibatch, UpdateError};
pub use ppo_config::{PpoConfig, Schedule};
pub use reward_norm::RewardScaler;
pub use rollout::RolloutBuffer;
pub use torch_seed::{unseeded, with_seed};
pub use value_norm::ValueNorm;
