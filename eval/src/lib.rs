//! mocc-eval: policies on simulated networks, measured as the papers measure them. No libtorch.
//!
//! - [`actor`]: what is evaluated: a trained actor behind the [`actor::Actor`] trait (an
//!   export here; mocc-training adds checkpoints) or a baseline sender (every classic scheme of
//!   `mocc_gym::cc`, a constant rate), loaded as a [`actor::LoadedPolicy`].
//! - [`suite`]: evaluation suites (`configs/eval/*.yaml`) and their validation.
//! - [`evaluate()`]: a policy on a whole suite: [`network_eval`] (every network x objective x
//!   seed) and [`scenario_eval`] (the suite's scenario files); [`results`]: what they report
//!   (per-run [`results::RunMetrics`] and rewards, rows, results.csv); [`mi_stats`]: the one
//!   accumulator of per-MI statistics.
//! - [`flows`]: several flows on one bottleneck (fairness, friendliness); [`simulate`]: one
//!   sender for N MIs (`mocc simulate`).
//! - [`figures`] and [`flow_figures`]: the result figures (the paper's Figures 5 and 7,
//!   fairness, friendliness, time series), drawn with mocc-plot.
//! - [`leo_study`]: the LEO study's experiments (paths, a second flow, micro-benchmarks, RTT
//!   fairness, many flows) and their verdicts; [`leo_outputs`]: running them, their CSVs and
//!   figures (`mocc experiment leo`).
//!
//! - [`suite_run`]: a suite's whole evaluation of several policies into one folder (results,
//!   figures, fairness and friendliness, targets), as `mocc eval` and a recipe's validation
//!   write it; [`targets`]: what a suite asks of a policy, judged once for all of them;
//!   [`stats`]: medians, rank correlation, and rliable's statistics over seeds;
//!   [`seed_report`]: a recipe's targets over training seeds (`mocc sweep RECIPE`).
//!
//! Library code returns data; only the `mocc` binary prints.

pub mod actor;
pub mod ellipse;
pub mod evaluate;
pub mod fairness_outputs;
pub mod figures;
pub mod flow_figures;
pub mod flows;
pub mod leo_outputs;
pub mod leo_study;
pub mod leo_verdicts;
pub mod mi_stats;
pub mod network_eval;
pub mod results;
pub mod scenario_eval;
pub mod seed_report;
pub mod simulate;
pub mod stats;
pub mod suite;
pub mod suite_run;
pub mod targets;
#[cfg(test)]
mod test_exports;

pub use evaluate::evaluate;
pub use simulate::{parse_network_spec, simulate, MiRow, SimulationReport, SimulationSpec};
