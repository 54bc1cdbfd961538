//! `mocc bench env`: simulator throughput on a VecEnv with a constant action.

use mocc_gym::{Scenario, VecEnv, VecEnvError};
use serde::Serialize;
use std::sync::Arc;
use std::time::Instant;

/// What to measure.
#[derive(Debug, Clone)]
pub struct EnvBenchSpec {
    /// The scenario.
    pub scenario: Arc<Scenario>,
    /// Envs in the batch.
    pub envs: usize,
    /// Worker threads.
    pub threads: usize,
    /// Total env steps (rounded up to a multiple of `envs`).
    pub steps: u64,
    /// Constant action.
    pub action: f32,
    /// Seed.
    pub seed: u64,
}

/// Measured rates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EnvBenchReport {
    /// Env steps (MIs) per second, auto-resets included.
    pub env_steps_per_sec: f64,
    /// Simulator events (sends, ack and loss arrivals) per second.
    pub events_per_sec: f64,
    /// Packets sent per second.
    pub packets_per_sec: f64,
    /// Env steps taken.
    pub env_steps: u64,
    /// Wall seconds of the stepping loop.
    pub wall_seconds: f64,
    /// Envs.
    pub envs: usize,
    /// Threads.
    pub threads: usize,
}

/// Steps a fresh VecEnv and reports rates (construction and initial reset are not timed).
pub fn bench_env(spec: &EnvBenchSpec) -> Result<EnvBenchReport, VecEnvError> {
    let mut venv = VecEnv::new(spec.scenario.clone(), spec.envs, spec.seed, spec.threads)?;
    let actions = vec![spec.action; spec.envs];
    let iterations = spec.steps.div_ceil(spec.envs as u64).max(1);
    let before = venv.counters();
    let start = Instant::now();
    for _ in 0..iterations {
        venv.step(&actions)?;
    }
    let wall = start.elapsed().as_secs_f64().max(1e-12);
    let after = venv.counters();
    let env_steps = iterations * spec.envs as u64;
    Ok(EnvBenchReport {
        env_steps_per_sec: env_steps as f64 / wall,
        events_per_sec: (after.events - before.events) as f64 / wall,
        packets_per_sec: (after.packets - before.packets) as f64 / wall,
        env_steps,
        wall_seconds: wall,
        envs: spec.envs,
        threads: spec.threads,
    })
}
