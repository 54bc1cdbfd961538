//! Adaptation with requirement replay: the pretrained start, the env split, the pool on disk and
//! through save/resume.

use mocc_training::adaptation::{start_adaptation, AdaptSpec, POOL_FILE};
use mocc_training::checkpoint;
use mocc_training::config::LoadedConfig;
use mocc_training::trainer::Trainer;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// libtorch's global RNG initializes the weights: build trainers one at a time.
static TORCH: Mutex<()> = Mutex::new(());

mod common;
use common::weights;

fn temp_dir(name: &str) -> PathBuf {
    common::temp_dir("adapt", name)
}

/// A tiny MOCC model (omega = 3) to adapt from.
fn pretrained(name: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/tiny-mocc.yaml");
    let loaded = LoadedConfig::load(&path, &[]).expect("tiny-mocc config");
    let dir = temp_dir(name);
    let mut t = Trainer::new(&loaded, &dir).unwrap();
    t.run(None, |_| {}).unwrap().final_checkpoint
}

fn spec(from: &Path, replay: bool) -> AdaptSpec {
    AdaptSpec {
        from: from.to_path_buf(),
        objective: [0.25, 0.45, 0.30],
        iterations: 3,
        replay,
        replay_fraction: 0.5,
        pool: None,
        seed: None,
    }
}

#[test]
fn adaptation_starts_from_the_pretrained_weights_and_splits_the_envs() {
    let _g = TORCH.lock().unwrap_or_else(|e| e.into_inner());
    let from = pretrained("pre-a");
    let (_, tensors) = checkpoint::load(&from).unwrap();
    let dir = temp_dir("start");
    let mut t = start_adaptation(&spec(&from, true), &dir).unwrap();
    for (name, w) in weights(&t) {
        let src = &tensors[&name];
        let n = src.numel();
        let mut v = vec![0.0f32; n];
        src.flatten(0, -1).copy_data(&mut v, n);
        assert_eq!(w, v, "{name} starts at the pretrained value");
    }
    let mut replayed = Vec::new();
    t.run(None, |p| replayed.push(p.replay_reward)).unwrap();
    assert_eq!(replayed.len(), 3);
    assert!(replayed.iter().all(Option::is_some), "{replayed:?}");
    // The pool on disk: the omega = 3 landmarks plus the new objective.
    let pool: Vec<[f64; 3]> =
        serde_json::from_str(&std::fs::read_to_string(dir.join(POOL_FILE)).unwrap()).unwrap();
    assert_eq!(pool.len(), 4);
    assert_eq!(pool[3], [0.25, 0.45, 0.30]);
    // Without replay there is no replayed objective.
    let mut t = start_adaptation(&spec(&from, false), &temp_dir("noreplay")).unwrap();
    let mut replayed = Vec::new();
    t.run(None, |p| replayed.push(p.replay_reward)).unwrap();
    assert!(replayed.iter().all(Option::is_none));
    // Adapting the adapted run again: its pool (landmarks + first objective) is the default.
    let second = AdaptSpec {
        objective: [0.5, 0.2, 0.3],
        ..spec(&dir, true)
    };
    let dir2 = temp_dir("second");
    start_adaptation(&second, &dir2).unwrap();
    let pool2: Vec<[f64; 3]> =
        serde_json::from_str(&std::fs::read_to_string(dir2.join(POOL_FILE)).unwrap()).unwrap();
    assert_eq!(pool2.len(), 5);
    assert_eq!(&pool2[..4], &pool[..]);
}

#[test]
fn the_pool_and_the_replay_draws_survive_save_and_resume() {
    let _g = TORCH.lock().unwrap_or_else(|e| e.into_inner());
    let from = pretrained("pre-b");
    let full_dir = temp_dir("full");
    let mut full = start_adaptation(&spec(&from, true), &full_dir).unwrap();
    let mut full_rewards = Vec::new();
    full.run(None, |p| {
        full_rewards.push((p.rollout_reward, p.replay_reward))
    })
    .unwrap();
    let expected = weights(&full);

    let split_dir = temp_dir("split");
    let mut first = start_adaptation(&spec(&from, true), &split_dir).unwrap();
    let mut rewards = Vec::new();
    first
        .run(Some(1), |p| {
            rewards.push((p.rollout_reward, p.replay_reward))
        })
        .unwrap();
    drop(first);
    let mut second = Trainer::resume(&split_dir).unwrap();
    second
        .run(None, |p| rewards.push((p.rollout_reward, p.replay_reward)))
        .unwrap();
    assert_eq!(
        rewards, full_rewards,
        "same rollouts, replayed objectives included"
    );
    assert_eq!(weights(&second), expected);
    let ckpt = checkpoint::resolve(&split_dir).unwrap();
    let (state, _) = checkpoint::load(&ckpt).unwrap();
    let adapt = state.config.adapt.expect("adapt section kept");
    assert_eq!(adapt.pool.len(), 3);
    assert_eq!(adapt.objective, [0.25, 0.45, 0.30]);
}
