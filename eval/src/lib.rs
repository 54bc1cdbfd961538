//! mocc-eval: policies on simulated networks, measured as the papers measure them. No libtorch.
//!
//! - [`actor`]: what is evaluated: a trained actor behind the [`actor::Actor`] trait (an
//!   export here; mocc-training adds checkpoints) or a baseline sender (Cubic, BBR, Copa, Vegas,
//!   Vivace, a constant rate), loaded as a [`actor::LoadedPolicy`].
//! - [`suite`]: evaluation suites (`configs/eval/*.yaml`) and their validation.
//! - [`eval`]: a policy on every network x objective x seed of a suite, per-run
//!   [`eval::RunMetrics`] and rewards; [`scenario_eval`]: the suite's scenario files;
//!   [`mi_stats`]: the one accumulator of per-MI statistics.
//! - [`flows`]: several flows on one bottleneck (fairness, friendliness); [`simulate`]: one
//!   sender for N MIs (`mocc simulate`).
//! - [`figures`] and [`flow_figures`]: the result figures (the paper's Figures 5 and 7,
//!   fairness, friendliness, time series), drawn with mocc-plot.
//!
//! Library code returns data; only the `mocc` binary prints.

pub mod actor;
pub mod eval;
pub mod figures;
pub mod flow_figures;
pub mod flows;
pub mod mi_stats;
pub mod scenario_eval;
pub mod simulate;
pub mod suite;
#[cfg(test)]
mod test_exports;

pub use simulate::{parse_network_spec, simulate, MiRow, SimulationReport, SimulationSpec};
