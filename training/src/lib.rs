//! mocc-training: procedures on top of the gym and the agents: simulation runs, benchmarks and
//! (in later modules) trainers, evaluation suites, checkpoints and logging.
//!
//! Library code returns data; only the `mocc` binary prints.

pub mod adapt;
pub mod bench;
pub mod checkpoint;
pub mod config;
pub mod eval;
pub mod experiment;
pub mod export;
pub mod figures;
pub mod flows;
pub mod landmarks;
pub mod plot;
pub mod recorder;
pub mod schedule;
pub mod simulate;
pub mod sweep;
pub mod trainer;

pub use bench::{bench_env, EnvBenchReport, EnvBenchSpec};
pub use simulate::{parse_network_spec, simulate, MiRow, SimulationReport, SimulationSpec};
