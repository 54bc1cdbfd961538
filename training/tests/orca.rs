//! Orca as a trainable hybrid (issue 63): configs/orca.yaml trains with this framework's PPO, a
//! tiny run improves its reward, and its export runs in the simulator (one flow and several)
//! while a rate controller refuses it by name.

use mocc_eval::actor::LoadedPolicy;
use mocc_eval::flows::{run_flows, Flow, FlowNetwork};
use mocc_policy::{Controller, ControllerError, Policy};
use mocc_training::config::LoadedConfig;
use mocc_training::trainer::Trainer;
use std::path::Path;
use std::sync::Mutex;

/// libtorch's global RNG initializes the weights: build trainers one at a time.
static TORCH: Mutex<()> = Mutex::new(());

mod common;

/// configs/orca.yaml, shrunk to `env_steps` over 8 envs, with `seed`.
fn tiny_orca(env_steps: u64, seed: u64) -> LoadedConfig {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/orca.yaml");
    let overrides = [
        format!("budget.env_steps={env_steps}"),
        "envs=8".to_string(),
        format!("seed={seed}"),
        "checkpoint.every_updates=1000".to_string(),
    ];
    LoadedConfig::load(&path, &overrides).unwrap_or_else(|e| panic!("orca.yaml: {e}"))
}

/// Mean per-MI rollout reward of each update of a tiny Orca run.
fn rollout_rewards(seed: u64, dir: &Path) -> Vec<f64> {
    let _g = TORCH.lock().unwrap_or_else(|e| e.into_inner());
    let mut trainer = Trainer::new(&tiny_orca(48_000, seed), dir).expect("trainer");
    let mut rewards = Vec::new();
    trainer
        .run(None, |p| rewards.push(p.rollout_reward))
        .expect("trains");
    rewards
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn a_tiny_orca_training_improves_its_reward() {
    // Every seed: the last five updates' rollouts earn more per MI than the first five, by at
    // least 0.1 (Orca's reward of an MI is its delivery over the capacity, less five times its
    // losses, times the delay factor: 0.1 is a tenth of a full link). The untrained policy's
    // Gaussian actions scale the window by up to 4x either way at random, which overfills and
    // starves the link by turns.
    for seed in [1, 2] {
        let dir = common::temp_dir("orca", &format!("improves-{seed}"));
        let r = rollout_rewards(seed, &dir);
        assert_eq!(r.len(), 30, "48,000 env steps are 30 updates of 8 x 200");
        let (first, last) = (mean(&r[..5]), mean(&r[r.len() - 5..]));
        assert!(
            last > first + 0.1,
            "seed {seed}: first updates {first:.3}, last {last:.3}: {r:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn an_orca_export_runs_in_the_simulator_and_not_in_a_rate_controller() {
    let dir = common::temp_dir("orca", "export");
    {
        let _g = TORCH.lock().unwrap_or_else(|e| e.into_inner());
        let mut trainer = Trainer::new(&tiny_orca(3_200, 3), &dir).expect("trainer");
        trainer.run(None, |_| {}).expect("trains");
    }
    let export = dir.join("export");
    let options = mocc_training::export::ExportOptions {
        torchscript: false,
        exported_by: "training/tests/orca.rs".to_string(),
    };
    mocc_training::export::export_checkpoint(&dir, &export, &options).expect("exports");
    let policy = Policy::load(&export).expect("loads");
    assert!(policy.action_rule().scales_window());
    match Controller::new(policy, [1.0 / 3.0; 3]) {
        Err(ControllerError::ScalesWindow(p)) => assert_eq!(p, export),
        other => panic!("a rate controller ran an Orca export: {:?}", other.err()),
    }
    // Two flows of it run in the multi-flow runner, each on its own Cubic: both deliver, and
    // together they fill the link (Cubic underneath keeps it busy whatever the barely
    // trained policy's shares are).
    let loaded = LoadedPolicy::load(&export).expect("an export");
    let flow = |start_s| Flow {
        driver: &loaded,
        objective: [1.0 / 3.0; 3],
        start_s,
        stop_s: None,
        extra_rtt_s: 0.0,
        record_mis: false,
    };
    let network = FlowNetwork {
        bw_pps: 500.0,
        delay_s: 0.02,
        queue_pkts: 100.0,
        loss: 0.0,
    };
    let rates = run_flows(&network, &[flow(0.0), flow(2.0)], 20.0, 1.0, 9).expect("runs");
    let late = |k: usize| rates.rates[k][10..].iter().sum::<f64>() / 10.0;
    for k in 0..2 {
        assert!(rates.totals[k].acked > 0, "flow {k}: {:?}", rates.totals[k]);
    }
    let total = late(0) + late(1);
    assert!(total > 0.9 * 500.0, "{} + {} packets/s", late(0), late(1));
    let _ = std::fs::remove_dir_all(&dir);
}
