//! The update's tests: hand-computed losses, parallel and grouped gradients, minibatches.

use super::replicas::{parallel_gradient, trainable_in_name_order};
use super::*;
use crate::adam::Adam;
use crate::model::{ActorCritic, Architecture};
use crate::numerics::Numerics;
use crate::ppo_config::PpoConfig;
use tch::{nn, Device, Kind, Tensor};

#[test]
fn minibatches_are_near_equal_and_cover_the_batch() {
    assert_eq!(minibatch_bounds(256, 4), vec![0, 64, 128, 192, 256]);
    // 256 samples in 7 minibatches: sizes 36 or 37, never a last one of 4.
    let b = minibatch_bounds(256, 7);
    let sizes: Vec<usize> = b.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(sizes, vec![36, 37, 36, 37, 36, 37, 37]);
    assert_eq!(minibatch_bounds(3, 8), vec![0, 1, 2, 3]);
    assert_eq!(minibatch_bounds(0, 4), vec![0, 0]);
}

#[test]
fn ppo_loss_hand_computed_on_a_fixed_batch() {
    // A zero-initialized model: mean 0, log_std 0, value 0 for every input.
    let vs = nn::VarStore::new(Device::Cpu);
    let model = crate::unseeded(|| ActorCritic::new(&vs.root(), Architecture::aurora(2)));
    tch::no_grad(|| {
        for (_, mut t) in vs.variables() {
            let _ = t.zero_();
        }
    });
    let lp = |a: f64| -0.5 * a * a - 0.5 * (2.0 * std::f64::consts::PI).ln();
    // Two samples: actions 0 and 1; old log-probs chosen so ratios are e^0.5 and e^-0.5.
    let actions = [0.0f32, 1.0];
    let old = [lp(0.0) - 0.5, lp(1.0) + 0.5];
    let mb = Minibatch {
        obs: Tensor::zeros([2, 2], (Kind::Float, Device::Cpu)),
        objectives: Tensor::zeros([2, 3], (Kind::Float, Device::Cpu)),
        actions: Tensor::from_slice(&actions).view([2, 1]),
        old_logprobs: Tensor::from_slice(&[old[0] as f32, old[1] as f32]),
        advantages: Tensor::from_slice(&[1.0f32, -1.0]),
        returns: Tensor::from_slice(&[1.0f32, 2.0]),
        old_values: Tensor::from_slice(&[0.5f32, 0.0]),
    };
    let cfg = PpoConfig {
        norm_adv: false,
        clip_coef: 0.2,
        clip_vloss: true,
        vf_coef: 0.5,
        ..PpoConfig::default()
    };
    let parts = ppo_loss(&model, &mb, &cfg, 0.01);
    let (r0, r1) = (0.5f64.exp(), (-0.5f64).exp());
    // pg: sample 0 adv 1: max(-r0, -1.2) = -1.2; sample 1 adv -1: max(r1, 0.8) = 0.8.
    let pg = (-1.2 + 0.8) / 2.0;
    // v: new value 0. s0: unclipped (0-1)^2 = 1, clipped 0.5+clamp(-0.5)= 0.3 -> 0.49;
    // max 1. s1: unclipped 4, clipped 0 + 0 -> 4. 0.5 * mean(1, 4) = 1.25.
    let v = 1.25;
    let ent = 0.5 + 0.5 * (2.0 * std::f64::consts::PI).ln();
    let kl = ((r0 - 1.0 - 0.5) + (r1 - 1.0 + 0.5)) / 2.0;
    let close = |t: &Tensor, x: f64| (t.double_value(&[]) - x).abs() < 1e-5;
    assert!(
        close(&parts.pg_loss, pg),
        "{}",
        parts.pg_loss.double_value(&[])
    );
    assert!(close(&parts.v_loss, v));
    assert!(close(&parts.entropy, ent));
    assert!(close(&parts.approx_kl, kl));
    assert!(close(&parts.clipfrac, 1.0));
    assert!(close(&parts.loss, pg - 0.01 * ent + 0.5 * v));
}

fn random_minibatch(n: i64, obs_dim: i64) -> Minibatch {
    Minibatch {
        obs: Tensor::randn([n, obs_dim], (Kind::Float, Device::Cpu)),
        objectives: Tensor::rand([n, 3], (Kind::Float, Device::Cpu)),
        actions: Tensor::randn([n, 1], (Kind::Float, Device::Cpu)),
        old_logprobs: Tensor::randn([n], (Kind::Float, Device::Cpu)) - 1.0,
        advantages: Tensor::randn([n], (Kind::Float, Device::Cpu)) * 3.0 + 1.0,
        returns: Tensor::randn([n], (Kind::Float, Device::Cpu)),
        old_values: Tensor::randn([n], (Kind::Float, Device::Cpu)),
    }
}

fn gradients(params: &[Tensor]) -> Vec<Tensor> {
    params.iter().map(|p| p.grad().copy()).collect()
}

#[test]
fn a_gradient_computed_in_parallel_parts_is_the_whole_minibatch_gradient() {
    crate::with_seed(11, || {
        let vs = nn::VarStore::new(Device::Cpu);
        let arch = Architecture::mocc(6);
        let model = ActorCritic::new(&vs.root(), arch.clone());
        let mut opt = Adam::new(&vs, 3e-4, 1e-5);
        // 101 rows: parts of 33/34 rows for three threads, 50/51 for two.
        let mb = random_minibatch(101, 6);
        let cfg = PpoConfig::default();
        opt.zero_grad();
        let whole = ppo_loss(&model, &mb, &cfg, 0.01);
        whole.loss.backward();
        let expect = gradients(opt.params());
        let expect_loss = whole.loss.double_value(&[]);
        for helpers in [1, 2] {
            let mut replicas = Replicas::new(&arch, Numerics::Native, Device::Cpu, helpers);
            let values =
                parallel_gradient(&model, &mut opt, &mut replicas, mb.rows(0, 101), &cfg, 0.01);
            assert!((values.loss - expect_loss).abs() < 1e-5, "{values:?}");
            for (g, e) in gradients(opt.params()).iter().zip(&expect) {
                let diff = (g - e).abs().max().double_value(&[]);
                let scale = e.abs().max().double_value(&[]).max(1e-3);
                assert!(diff < 1e-5 * scale, "{helpers} helpers: {diff} of {scale}");
            }
            // The replicas held the model's weights, not their own initialization.
            let theirs = trainable_in_name_order(&replicas.stores()[0]);
            for (a, b) in theirs.iter().zip(opt.params()) {
                assert!(a.equal(b));
            }
        }
    });
}

#[test]
fn two_group_loss_is_the_sum_of_the_single_group_losses() {
    crate::with_seed(4, || {
        let vs = nn::VarStore::new(Device::Cpu);
        let model = ActorCritic::new(&vs.root(), Architecture::mocc(4));
        let n = 10i64;
        let mb = Minibatch {
            obs: Tensor::randn([n, 4], (Kind::Float, Device::Cpu)),
            objectives: Tensor::rand([n, 3], (Kind::Float, Device::Cpu)),
            actions: Tensor::randn([n, 1], (Kind::Float, Device::Cpu)),
            old_logprobs: Tensor::randn([n], (Kind::Float, Device::Cpu)) - 1.0,
            advantages: Tensor::randn([n], (Kind::Float, Device::Cpu)),
            returns: Tensor::randn([n], (Kind::Float, Device::Cpu)),
            old_values: Tensor::randn([n], (Kind::Float, Device::Cpu)),
        };
        // Rows 0, 2, 3, 7 are the replayed objective's, the rest the current one's.
        let groups = [1u8, 0, 1, 1, 0, 0, 0, 1, 0, 0];
        let cfg = PpoConfig::default();
        let both = grouped_ppo_loss(&model, &mb, &groups, &cfg, 0.01);
        let rows = |g: u8| -> Vec<i64> { (0..n).filter(|&i| groups[i as usize] == g).collect() };
        let current = ppo_loss(
            &model,
            &mb.select(&Tensor::from_slice(&rows(0))),
            &cfg,
            0.01,
        );
        let replay = ppo_loss(
            &model,
            &mb.select(&Tensor::from_slice(&rows(1))),
            &cfg,
            0.01,
        );
        let sum = current.loss.double_value(&[]) + replay.loss.double_value(&[]);
        assert!((both.loss.double_value(&[]) - sum).abs() < 1e-6, "{both:?}");
        let whole = ppo_loss(&model, &mb, &cfg, 0.01).loss.double_value(&[]);
        assert!((whole - sum).abs() > 1e-3, "grouping changes the loss");
        // One group is plain PPO.
        let single = grouped_ppo_loss(&model, &mb, &[0; 10], &cfg, 0.01);
        assert_eq!(single.loss.double_value(&[]), whole);
    });
}

#[test]
fn explained_variance_hand_values() {
    assert_eq!(explained_variance(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]), 1.0);
    assert_eq!(explained_variance(&[0.0, 0.0], &[1.0, 3.0]), 0.0);
}
