//! mocc-training: procedures on top of the gym and the agents.
//!
//! - Training: [`config`] (the YAML), [`trainer`] (the PPO loop), [`plan`] (which objective each
//!   env trains on: fixed, MOCC's [`landmarks`] and [`schedule`], or [`adapt`]ation with
//!   requirement replay, started by [`adaptation`]), [`episodes`], [`run_state`] and
//!   [`checkpoint`] (saving, resuming), [`run_log`] and [`recorder`] (TensorBoard, CSV).
//! - Evaluation: [`eval`] suites, [`mi_stats`], multi-flow runs ([`flows`]), [`simulate`],
//!   [`figures`] and [`plot`], [`experiment`]s, omega [`sweep`]s, [`bench`]marks.
//! - Scale: with the `mpi` feature, [`mpi_world`] runs training on the ranks of an `mpirun`
//!   job (the learner's `Collective`) and spreads sweeps over them.
//! - Deployment: [`export`] to the libtorch-free runtime of `mocc-policy`.
//!
//! Library code returns data; only the `mocc` binary prints.

pub mod actor;
pub mod adapt;
pub mod adaptation;
pub mod adaptation_metrics;
pub mod axes;
pub mod bench;
pub mod chart;
pub mod checkpoint;
pub mod config;
pub mod episodes;
pub mod eval;
pub mod experiment;
pub mod experiment_outputs;
pub mod export;
pub mod figures;
pub mod flow_figures;
pub mod flows;
pub mod landmarks;
pub mod mi_stats;
#[cfg(feature = "mpi")]
pub mod mpi_world;
pub mod plan;
pub mod plot;
pub mod real_compare;
pub mod real_figures;
pub mod real_path;
pub mod real_timeline;
pub mod recorder;
pub mod run_lock;
pub mod run_log;
pub mod run_state;
pub mod scenario_eval;
pub mod schedule;
pub mod simulate;
pub mod style;
pub mod suite;
pub mod sweep;
#[cfg(test)]
mod test_exports;
pub mod trainer;

pub use bench::{bench_env, EnvBenchReport, EnvBenchSpec};
pub use simulate::{parse_network_spec, simulate, MiRow, SimulationReport, SimulationSpec};
