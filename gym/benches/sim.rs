//! Simulator throughput on Aurora's default scenario with a constant action 0 (the workload on
//! which PCC-RL's Python simulator runs ~860 env steps/s on one core).
//!
//! `cargo bench -p mocc-gym --bench sim` (or `make bench`); criterion reports env steps/s for
//! one and two threads in the same run, so their ratio is measured under the same conditions.
//! A second group runs a high-bandwidth path (4,000 packets/s, 50 ms, a BDP-sized buffer:
//! `configs/scenarios/high-bandwidth.yaml`), where per-packet cost sets the speed.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use mocc_gym::{Scenario, ScenarioConfig, VecEnv};
use std::hint::black_box;
use std::sync::Arc;

const ENVS: usize = 50;
const STEPS_PER_ITER: usize = 20;

fn vec_env_step(c: &mut Criterion) {
    let scenario =
        Arc::new(Scenario::new(ScenarioConfig::default(), None).expect("default scenario"));
    let mut group = c.benchmark_group("vec_env_step");
    group.throughput(Throughput::Elements((ENVS * STEPS_PER_ITER) as u64));
    for threads in [1usize, 2] {
        let mut venv = VecEnv::new(scenario.clone(), ENVS, 7, threads).expect("vec env");
        let actions = vec![0.0f32; ENVS];
        group.bench_with_input(BenchmarkId::from_parameter(threads), &threads, |b, _| {
            b.iter(|| {
                for _ in 0..STEPS_PER_ITER {
                    let step = venv.step(&actions).expect("step");
                    black_box(step.rewards[0]);
                }
            })
        });
    }
    group.finish();
}

/// The high-bandwidth path of `configs/scenarios/high-bandwidth.yaml`, one thread.
fn high_bandwidth_step(c: &mut Criterion) {
    let mut config = ScenarioConfig::fixed_link(4000.0, 0.05, 400.0, 0.0);
    config.senders[0].start_rate = ScenarioConfig::default().senders[0].start_rate;
    config.action.max_rate_pps = 5000.0;
    let scenario = Arc::new(Scenario::new(config, None).expect("high-bandwidth scenario"));
    let mut group = c.benchmark_group("vec_env_step_high_bandwidth");
    group.throughput(Throughput::Elements((ENVS * STEPS_PER_ITER) as u64));
    let mut venv = VecEnv::new(scenario, ENVS, 7, 1).expect("vec env");
    let actions = vec![0.0f32; ENVS];
    group.bench_function("1", |b| {
        b.iter(|| {
            for _ in 0..STEPS_PER_ITER {
                let step = venv.step(&actions).expect("step");
                black_box(step.rewards[0]);
            }
        })
    });
    group.finish();
}

criterion_group!(benches, vec_env_step, high_bandwidth_step);
criterion_main!(benches);
