//! mocc-real: mocc policies on real Linux paths (mocc-net's namespaces, kernel queue and delay
//! line), measured in the evaluation's terms so a real run sits beside the simulator's. No
//! libtorch.
//!
//! - [`timeline`]: a run's path over time (fixed link or a scenario's schedule and outages),
//!   with the capacity and base RTT the metrics are measured against.
//! - [`path`]: flows measured on a real path turned into the evaluation's per-MI statistics and
//!   [`mocc_eval::results::RunMetrics`].
//! - [`compare`]: `mocc net compare`: every network of a suite in the simulator and on a real
//!   path, side by side.
//! - [`sharing`]: `mocc net compare`'s fairness and friendliness sections: a suite's
//!   sharing runs in the simulator and repeated on a real path, summarized alike.
//! - [`run`]: `mocc net run`: flows (exports over UDP, constant rates, kernel TCP) together on
//!   a real path that follows its timeline, written as results.csv, per-flow MIs and a figure.
//! - [`figures`]: the time series of a real-path run.
//! - [`app`]: `mocc net app`: the MOCC paper's applications (bulk transfer, real-time
//!   stream, adaptive video) over QUIC or kernel TCP, one code for both.
//! - [`fig10`]: `mocc experiment fig10`: every application and scheme on four paths.
//!
//! Library code returns data; only the `mocc` binary prints.

pub mod app;
pub mod compare;
pub mod fig10;
pub mod figures;
pub mod pacing;
pub mod path;
pub mod run;
pub mod sharing;
pub mod sharing_report;
pub mod timeline;
