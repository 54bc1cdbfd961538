//! Controlled flows over a real path: the datagrams ([`wire`]), loss detection
//! ([`loss_detector`]), what sets the rate ([`driver`]) and the flow itself
//! ([`controlled_flow`]); kernel TCP flows beside them ([`tcp_flow`]).

pub mod controlled_flow;
pub mod driver;
pub mod loss_detector;
pub mod tcp_flow;
pub mod wire;

pub use controlled_flow::{run_controlled_flow, FlowOutcome, MiRecord, PacingStats};
pub use driver::{ConstantRate, PolicyDriver, RateDriver};
pub use tcp_flow::{run_tcp_flow, set_congestion};
