//! Controlled flows over a real path: the datagrams ([`wire`]), loss detection
//! ([`loss_detector`]), what sets the rate ([`driver`]) and the flow itself
//! ([`controlled_flow`]).

pub mod controlled_flow;
pub mod driver;
pub mod loss_detector;
pub mod wire;

pub use controlled_flow::{run_controlled_flow, FlowOutcome, MiRecord, PacingStats};
pub use driver::{ConstantRate, PolicyDriver, RateDriver};
