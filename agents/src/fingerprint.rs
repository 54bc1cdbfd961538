//! The numerics fingerprint of this machine: the digest of one fixed PPO update through the
//! learner's kernels. Two machines with the same fingerprint compute the same bits for the same
//! training; two with different ones round differently somewhere (libtorch picks kernels by
//! the CPU, [`crate::numerics`]), and then only properties can be compared across them.
//!
//! The update: a MOCC actor-critic (30 observation features, the preference sub-network)
//! initialized from seed 1, a minibatch of 256 rows drawn on the host from a seeded stream, the
//! PPO loss and its gradient, gradient clipping and one Adam step. The digest covers the loss,
//! the gradients and the updated weights, bit for bit. The loss and the gradient norm are kept
//! as numbers too: where the bits differ, they still agree to rounding.

use crate::adam::Adam;
use crate::gaussian::standard_normal;
use crate::model::{ActorCritic, Architecture, OBJECTIVE_DIM};
use crate::numerics::Numerics;
use crate::ppo::{ppo_loss, Minibatch};
use crate::ppo_config::PpoConfig;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sha2::{Digest, Sha256};
use tch::{nn, Device, Kind, Tensor};

/// Rows of the fixed minibatch: as many as a tiny run's, enough for matrix kernels to block
/// their sums.
const ROWS: usize = 256;
/// Observation features of the fixed network.
const OBS_DIM: usize = 30;

/// What [`fingerprint`] measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Fingerprint {
    /// The kernels it ran.
    pub numerics: Numerics,
    /// SHA-256 (hex) of the loss, gradients and updated weights, bit for bit.
    pub digest: String,
    /// The loss.
    pub loss: f64,
    /// The gradient's global L2 norm (before clipping).
    pub grad_norm: f64,
    /// SHA-256 (hex) of each stage's values on its own: the initial weights (`init`), the
    /// network's outputs on the minibatch (`forward`), the loss (`loss`), the gradients
    /// (`gradient`) and the weights after the Adam step (`step`). Where two machines'
    /// fingerprints differ, the first stage that differs says where their arithmetic parts.
    pub stages: Vec<(String, String)>,
}

/// Runs the fixed update with `numerics` on the CPU, on one libtorch thread (as trainers run by
/// default; it sets libtorch's intra-op thread count to 1, since sums split over threads round
/// otherwise). Holds libtorch's RNG lock while a native network draws its weights; otherwise
/// independent of anything else in the process, but for the kernels libtorch chose at its
/// first use.
pub fn fingerprint(numerics: Numerics) -> Fingerprint {
    crate::device::init_torch_threads(1);
    let vs = nn::VarStore::new(Device::Cpu);
    let model = ActorCritic::seeded(&vs.root(), Architecture::mocc(OBS_DIM), numerics, 1);
    let mut opt = Adam::new(&vs, 3e-4, 1e-5).with_numerics(numerics);
    let mb = fixed_minibatch(&mut ChaCha8Rng::seed_from_u64(2));
    let cfg = PpoConfig {
        numerics,
        ..PpoConfig::default()
    };
    let init = hex(Sha256::digest(concat_bits(opt.params())));
    let forward = tch::no_grad(|| {
        let out = model.forward(&mb.obs, Some(&mb.objectives));
        hex(Sha256::digest(concat_bits(&[out.mean, out.value])))
    });
    opt.zero_grad();
    let parts = ppo_loss(&model, &mb, &cfg, 0.01);
    parts.loss.backward();
    let loss = parts.loss.double_value(&[]);
    let loss_bits = f32_bits(&parts.loss);
    let grads: Vec<Tensor> = opt.params().iter().map(Tensor::grad).collect();
    let grad_bits = concat_bits(&grads);
    let grad_norm = opt.clip_grad_norm(0.5);
    opt.step();
    let step_bits = concat_bits(opt.params());
    let mut hash = Sha256::new();
    hash.update(&loss_bits);
    hash.update(&grad_bits);
    hash.update(&step_bits);
    let stages = [
        ("init", init),
        ("forward", forward),
        ("loss", hex(Sha256::digest(&loss_bits))),
        ("gradient", hex(Sha256::digest(&grad_bits))),
        ("step", hex(Sha256::digest(&step_bits))),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    Fingerprint {
        numerics,
        digest: hex(hash.finalize()),
        loss,
        grad_norm,
        stages,
    }
}

/// Lower-case hex of a digest.
fn hex(bytes: impl AsRef<[u8]>) -> String {
    bytes.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// The f32 bytes of several tensors, one after another.
fn concat_bits(tensors: &[Tensor]) -> Vec<u8> {
    tensors.iter().flat_map(f32_bits).collect()
}

/// A minibatch of plausible magnitudes: normalized observations, objectives on the simplex,
/// actions around zero, advantages and returns of both signs.
fn fixed_minibatch(rng: &mut ChaCha8Rng) -> Minibatch {
    let mut normal = |n: usize, scale: f32| -> Tensor {
        let v: Vec<f32> = (0..n).map(|_| scale * standard_normal(rng)).collect();
        Tensor::from_slice(&v)
    };
    let obs = normal(ROWS * OBS_DIM, 1.0).view([ROWS as i64, OBS_DIM as i64]);
    let actions = normal(ROWS, 0.5).view([ROWS as i64, 1]);
    let old_logprobs = normal(ROWS, 0.1) - 0.92;
    let advantages = normal(ROWS, 1.0);
    let returns = normal(ROWS, 2.0);
    let old_values = normal(ROWS, 0.1);
    let w: Vec<f32> = (0..ROWS)
        .flat_map(|_| {
            let raw: [f32; OBJECTIVE_DIM] = std::array::from_fn(|_| rng.random::<f32>() + 0.05);
            let sum: f32 = raw.iter().sum();
            raw.map(|x| x / sum)
        })
        .collect();
    Minibatch {
        obs,
        objectives: Tensor::from_slice(&w).view([ROWS as i64, OBJECTIVE_DIM as i64]),
        actions,
        old_logprobs,
        advantages,
        returns,
        old_values,
    }
}

/// The CPU's model name (`model name` in /proc/cpuinfo; "unknown" where there is none), to
/// say which machine a fingerprint came from.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|name| name.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".to_string())
}

/// The little-endian bytes of a tensor's values as f32.
fn f32_bits(t: &Tensor) -> Vec<u8> {
    let t = t.detach().to_kind(Kind::Float).contiguous().view([-1]);
    let n = t.numel();
    let mut v = vec![0.0f32; n];
    t.copy_data(&mut v, n);
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_repeats_and_tells_the_kernels_apart() {
        let portable = fingerprint(Numerics::Portable);
        assert_eq!(portable, fingerprint(Numerics::Portable));
        let native = fingerprint(Numerics::Native);
        assert_eq!(native, fingerprint(Numerics::Native));
        // Different initial weights and kernels: other bits, yet a loss of the same kind.
        assert_ne!(portable.digest, native.digest);
        assert!(portable.loss.is_finite() && native.loss.is_finite());
        assert!(portable.grad_norm > 0.0 && native.grad_norm > 0.0);
        assert_eq!(portable.digest.len(), 64);
        let names: Vec<&str> = portable.stages.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["init", "forward", "loss", "gradient", "step"]);
        // Other initial weights: every stage differs.
        for ((_, p), (_, n)) in portable.stages.iter().zip(&native.stages) {
            assert_ne!(p, n);
        }
    }
}
