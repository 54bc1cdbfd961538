//! mocc-training: training on top of the gym and the agents.
//!
//! - Training: [`config`] (the YAML), [`trainer`] (the PPO loop), [`plan`] (which objective each
//!   env trains on: fixed, MOCC's [`landmarks`] and [`schedule`], or [`adapt`]ation with
//!   requirement replay, started by [`adaptation`] and measured by [`adaptation_metrics`]),
//!   [`episodes`], [`run_state`], [`run_lock`], [`run_folder`] and [`checkpoint`] (saving, resuming),
//!   [`run_log`] and [`recorder`] (TensorBoard, CSV), [`plot`] (a run's learning curve).
//! - Evaluation of what was trained: [`checkpoint_policy`] makes checkpoints mocc-eval policies;
//!   [`experiment`]s (train, evaluate, adapt) with their [`experiment_outputs`], omega
//!   [`sweep`]s, [`bench`]marks.
//! - Scale: with the `mpi` feature, [`mpi_world`] runs training on the ranks of an `mpirun`
//!   job (the learner's `Collective`) and spreads sweeps over them.
//! - Deployment: [`export`] to the libtorch-free runtime of `mocc-policy`; [`recipe`]s, the
//!   stages that build a deployable export from configs (training runs, exports, pairs), its
//!   rule, its validation and report.
//!
//! Library code returns data; only the `mocc` binary prints.

pub mod adapt;
pub mod adaptation;
pub mod adaptation_metrics;
pub mod bench;
pub mod checkpoint;
pub mod checkpoint_policy;
pub mod config;
pub mod episodes;
pub mod experiment;
pub mod experiment_outputs;
pub mod export;
pub mod landmarks;
#[cfg(feature = "mpi")]
pub mod mpi_world;
pub mod plan;
pub mod plot;
pub mod recipe;
pub mod recorder;
pub mod run_folder;
pub mod run_lock;
pub mod run_log;
pub mod run_state;
pub mod schedule;
pub mod sweep;
pub mod trainer;

pub use bench::{bench_env, EnvBenchReport, EnvBenchSpec};
pub use checkpoint_policy::load_policy;
