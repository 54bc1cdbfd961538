//! Decision latency of the libtorch-free runtime on the shipped policies: one
//! `Controller::on_monitor_interval` (features, history, normalization, network, rate rule)
//! and the network alone, for the Aurora and MOCC presets.
//!
//! `cargo bench -p mocc-policy --bench controller` (or `make bench`). The MI stream is
//! `examples/data/mis.csv`, recorded with `mocc simulate --mi-out`.

use criterion::{criterion_group, criterion_main, Criterion};
use mocc_policy::{Controller, MonitorInterval, Policy};
use std::hint::black_box;
use std::path::Path;

fn load(name: &str) -> Policy {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../checkpoints")
        .join(name);
    Policy::load(&dir).unwrap_or_else(|e| panic!("shipped policy {name}: {e}"))
}

fn recorded_mis() -> Vec<MonitorInterval> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/data/mis.csv");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .skip(1)
        .map(|l| MonitorInterval::from_csv_row(l).unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

fn decisions(c: &mut Criterion) {
    let mis = recorded_mis();
    let mut group = c.benchmark_group("decision");
    for name in ["aurora", "mocc-omega36"] {
        let policy = load(name);
        let mut ws = policy.workspace();
        let obs = vec![0.5f32; policy.obs_len()];
        let w = [0.6f32, 0.3, 0.1];
        group.bench_function(format!("{name}/network"), |b| {
            b.iter(|| black_box(policy.mean_action(black_box(&obs), &w, &mut ws)))
        });
        let mut controller = Controller::new(policy, [0.6, 0.3, 0.1]).expect("objective");
        controller.reset(300.0);
        let mut k = 0usize;
        group.bench_function(format!("{name}/controller"), |b| {
            b.iter(|| {
                k = (k + 1) % mis.len();
                black_box(controller.on_monitor_interval(black_box(&mis[k])))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, decisions);
criterion_main!(benches);
