//! Which kernels the learner's arithmetic runs on: libtorch's fastest (`native`) or only those
//! whose bits do not depend on the CPU (`portable`).
//!
//! libtorch's CPU arithmetic follows the machine. Matrix products go to MKL's SGEMM, which
//! picks its kernel (and with it the order of each sum) by the CPU it finds; `tanh`, `exp`, `log`
//! and `sqrt` of contiguous tensors go to MKL's vector math (VML), which dispatches on the CPU
//! too (its square root is not IEEE's on an AMD EPYC: an ulp off for one value in five); the
//! orthogonal initialization runs MKL's QR; ATen's own kernels come in one build per vector
//! extension (AVX-512 sums 16 lanes at a time, AVX2 8). Two machines of different kinds then
//! train other bits from the same seed (an Intel and an AMD machine did, with MKL's
//! "compatible" path in force).
//!
//! `portable` leaves MKL out of the learner altogether:
//! - matrix products are ATen element-wise products and sums (no SGEMM);
//! - `tanh` is `2 sigmoid(2x) - 1` and `exp(x)` is `exp2(x log2 e)` (ATen's own kernels:
//!   sigmoid and exp2 are not routed to VML);
//! - square roots are taken on the host ([`sqrt`]);
//! - weights are initialized on the host in f64 ([`crate::orthogonal`]), not by libtorch's RNG
//!   and QR;
//! - ATen's kernels are the build without vector extensions when [`pin_portable_kernels`] ran
//!   before libtorch's first kernel (trainers of portable runs and the tests do it).
//!
//! What is left is IEEE arithmetic in an order fixed by the code, correctly rounded square
//! roots and glibc's `expf` and `exp2f`, which take their FMA variants on every x86-64 CPU
//! with AVX2. [`crate::fingerprint`] digests a fixed update through these kernels, so two
//! machines can tell whether they agree. The cost: the update's products are slower than
//! SGEMM's (docs/reproducibility.md measures it).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use tch::{Kind, Tensor};

/// The learner's kernels (`ppo.numerics` in a config).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Numerics {
    /// libtorch's fastest kernels (MKL's SGEMM and vector math, libtorch's initialization);
    /// bit for bit the same only on machines of one kind.
    #[default]
    Native,
    /// No MKL: the same bits on every x86-64 machine with AVX2 (see the module page).
    Portable,
}

impl Numerics {
    /// Whether this is the default (configs and checkpoints omit it then).
    pub fn is_native(&self) -> bool {
        *self == Self::Native
    }

    /// The name configs use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Native => "native",
            Self::Portable => "portable",
        }
    }
}

impl fmt::Display for Numerics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Numerics {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "native" => Ok(Self::Native),
            "portable" => Ok(Self::Portable),
            other => Err(format!(
                "numerics: unknown value {other:?} (expected native or portable)"
            )),
        }
    }
}

/// The environment variable that selects ATen's kernel build, and the build portable numerics
/// need.
pub const ATEN_CAPABILITY_VAR: &str = "ATEN_CPU_CAPABILITY";
const PORTABLE_CAPABILITY: &str = "default";

/// Selects ATen's kernels without vector extensions (`ATEN_CPU_CAPABILITY=default`) and MKL's
/// compatible path (`MKL_CBWR=COMPATIBLE`), unless the environment already sets them. libtorch
/// reads both once, at its first kernel: call this before libtorch computes anything (a run
/// with portable numerics does, in `Trainer` and when its checkpoint is opened); later it
/// changes nothing, and the run's fingerprint then shows it.
pub fn pin_portable_kernels() {
    for (var, value) in [
        (ATEN_CAPABILITY_VAR, PORTABLE_CAPABILITY),
        ("MKL_CBWR", "COMPATIBLE"),
    ] {
        if std::env::var_os(var).is_none() {
            std::env::set_var(var, value);
        }
    }
}

/// What a run with `numerics` needs before libtorch's first kernel in its process: for portable
/// numerics, [`pin_portable_kernels`]; nothing for native ones.
pub fn prepare_kernels(numerics: Numerics) {
    if numerics == Numerics::Portable {
        pin_portable_kernels();
    }
}

/// `x W^T + b` for `x` `[B, in]`, `W` `[out, in]`, `b` `[out]`.
pub fn linear(numerics: Numerics, x: &Tensor, w: &Tensor, b: &Tensor) -> Tensor {
    match numerics {
        Numerics::Native => x.linear(w, Some(b)),
        // [B, 1, in] * [1, out, in], summed over `in` (the innermost, contiguous dimension).
        Numerics::Portable => {
            (x.unsqueeze(1) * w.unsqueeze(0)).sum_dim_intlist(-1, false, Kind::Float) + b
        }
    }
}

/// Hyperbolic tangent.
pub fn tanh(numerics: Numerics, x: &Tensor) -> Tensor {
    match numerics {
        Numerics::Native => x.tanh(),
        Numerics::Portable => (x * 2.0).sigmoid() * 2.0 - 1.0,
    }
}

/// Exponential.
pub fn exp(numerics: Numerics, x: &Tensor) -> Tensor {
    match numerics {
        Numerics::Native => x.exp(),
        Numerics::Portable => (x * std::f64::consts::LOG2_E).exp2(),
    }
}

/// Square root: IEEE's correctly rounded one on every CPU, taken on the host for portable
/// numerics (libtorch hands contiguous tensors to MKL's vector math, which promises its error
/// bound, not the rounding).
pub fn sqrt(numerics: Numerics, x: &Tensor) -> Tensor {
    match numerics {
        Numerics::Native => x.sqrt(),
        Numerics::Portable => {
            let host = x
                .to_device(tch::Device::Cpu)
                .to_kind(Kind::Float)
                .contiguous();
            let n = host.numel();
            let mut values = vec![0.0f32; n];
            host.copy_data(&mut values, n);
            values.iter_mut().for_each(|v| *v = v.sqrt());
            Tensor::from_slice(&values)
                .view(x.size().as_slice())
                .to_device(x.device())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Device;

    fn randn(shape: &[i64]) -> Tensor {
        crate::with_seed(11, || Tensor::randn(shape, (Kind::Float, Device::Cpu)))
    }

    fn max_abs_diff(a: &Tensor, b: &Tensor) -> f64 {
        (a - b).abs().max().double_value(&[])
    }

    #[test]
    fn portable_kernels_compute_the_same_functions() {
        let x = randn(&[37, 23]);
        let w = randn(&[5, 23]);
        let b = randn(&[5]);
        // f32 sums of 23 products of N(0,1) draws: rounding of order 23 * 2^-24 * |terms|.
        let lin = max_abs_diff(
            &linear(Numerics::Portable, &x, &w, &b),
            &linear(Numerics::Native, &x, &w, &b),
        );
        assert!(lin < 1e-4, "linear differs by {lin}");
        let t = max_abs_diff(&tanh(Numerics::Portable, &x), &x.tanh());
        assert!(t < 1e-6, "tanh differs by {t}");
        let e = (exp(Numerics::Portable, &x) / x.exp() - 1.0)
            .abs()
            .max()
            .double_value(&[]);
        assert!(e < 1e-6, "exp differs by a relative {e}");
        // The correctly rounded square root, element by element (libtorch's own is not, on
        // some machines: one value in five was an ulp off on an AMD EPYC).
        let sq = x.abs();
        let want: Vec<f32> = Vec::<f32>::try_from(&sq.view([-1]))
            .unwrap()
            .iter()
            .map(|v| v.sqrt())
            .collect();
        let got: Vec<f32> = Vec::try_from(sqrt(Numerics::Portable, &sq).view([-1])).unwrap();
        assert_eq!(got, want);
        assert_eq!(sqrt(Numerics::Portable, &sq).size(), sq.size());
        // Saturation: no NaN where tanh is +-1 and exp overflows or vanishes.
        let big = Tensor::from_slice(&[-100.0f32, 100.0, 0.0]);
        let got: Vec<f32> = Vec::try_from(tanh(Numerics::Portable, &big)).unwrap();
        assert_eq!(got, vec![-1.0, 1.0, 0.0]);
        let got: Vec<f32> = Vec::try_from(exp(Numerics::Portable, &big)).unwrap();
        assert!((0.0..1e-40).contains(&got[0]), "{got:?}");
        assert_eq!(&got[1..], &[f32::INFINITY, 1.0]);
    }

    #[test]
    fn portable_gradients_match_native_ones() {
        let x = randn(&[16, 7]);
        let grads = |numerics| {
            let w = randn(&[3, 7]).set_requires_grad(true);
            let b = Tensor::zeros([3], (Kind::Float, Device::Cpu)).set_requires_grad(true);
            let y = exp(numerics, &tanh(numerics, &linear(numerics, &x, &w, &b)));
            y.sum(Kind::Float).backward();
            (w.grad(), b.grad())
        };
        let (wn, bn) = grads(Numerics::Native);
        let (wp, bp) = grads(Numerics::Portable);
        assert!(max_abs_diff(&wn, &wp) < 1e-4);
        assert!(max_abs_diff(&bn, &bp) < 1e-4);
    }

    #[test]
    fn names_round_trip() {
        for n in [Numerics::Native, Numerics::Portable] {
            assert_eq!(n.name().parse::<Numerics>(), Ok(n));
        }
        assert!("fast".parse::<Numerics>().unwrap_err().contains("numerics"));
    }
}
