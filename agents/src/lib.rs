//! mocc-agents: the libtorch side of mocc.
//!
//! This crate owns everything that touches tch: device selection, libtorch's thread settings
//! and (in later modules) the actor-critic models and PPO. The simulator (`mocc-gym`) and the
//! deployable runtime (`mocc-policy`) never depend on it.

pub mod device;

pub use device::{init_torch_threads, resolve_device, DeviceChoice, DeviceError};
