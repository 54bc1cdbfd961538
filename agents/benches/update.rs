//! One PPO minibatch step (forward, backward, grad-norm clipping, Adam) of the MOCC network,
//! on one thread and split over two (`ppo.update_workers: 2`), for a small and a large
//! minibatch: where the data-parallel update pays; and the same step with portable numerics
//! (`ppo.numerics: portable`), what they cost.
//!
//! `cargo bench -p mocc-agents --bench update`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use mocc_agents::ppo::{update, Batch, Replicas};
use mocc_agents::{ActorCritic, Adam, Architecture, Numerics, PpoConfig, SingleProcess};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tch::{nn, Device};

const OBS_DIM: usize = 30;

fn batch(rows: usize, rng: &mut ChaCha8Rng) -> Batch {
    let mut v = |n: usize| {
        (0..n)
            .map(|_| rng.random_range(-1.0f32..1.0))
            .collect::<Vec<_>>()
    };
    Batch {
        obs: v(rows * OBS_DIM),
        objectives: v(rows * 3).iter().map(|x| x.abs() / 3.0).collect(),
        actions: v(rows),
        logprobs: v(rows).iter().map(|x| x - 1.5).collect(),
        advantages: v(rows),
        returns: v(rows),
        values: v(rows),
        groups: Vec::new(),
    }
}

fn minibatch_step(c: &mut Criterion) {
    tch::set_num_threads(1);
    let mut group = c.benchmark_group("ppo_minibatch_step");
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for rows in [400usize, 3200] {
        let data = batch(rows, &mut rng);
        let cases = [
            (1usize, Numerics::Native),
            (2, Numerics::Native),
            (1, Numerics::Portable),
        ];
        for (workers, numerics) in cases {
            let vs = nn::VarStore::new(Device::Cpu);
            let arch = Architecture::mocc(OBS_DIM);
            let model = ActorCritic::seeded(&vs.root(), arch.clone(), numerics, 1);
            let mut opt = Adam::new(&vs, 3e-4, 1e-5).with_numerics(numerics);
            let mut replicas = Replicas::new(&arch, numerics, Device::Cpu, workers - 1);
            let cfg = PpoConfig {
                num_minibatches: 1,
                update_epochs: 1,
                update_workers: workers,
                numerics,
                ..PpoConfig::default()
            };
            let id = BenchmarkId::new(format!("{numerics}_{workers}_workers"), rows);
            group.bench_function(id, |b| {
                b.iter(|| {
                    update(
                        &model,
                        &mut opt,
                        &mut replicas,
                        &data,
                        &cfg,
                        0.0,
                        Device::Cpu,
                        &mut rng,
                        &SingleProcess,
                        None,
                    )
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, minibatch_step);
criterion_main!(benches);
