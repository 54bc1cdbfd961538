//! Adam (PyTorch's update rule) with global grad-norm clipping and a state that checkpoints.
//!
//! tch's built-in optimizer cannot save its moments, so exact resume needs our own: the
//! moments live in tensors named after the parameters, the step count in a counter.

use crate::numerics::{self, Numerics};
use tch::nn::VarStore;
use tch::{Kind, Tensor};

/// `buffer`'s part of each of `params` (starting at `offsets`), shaped like it.
fn views_of<'a>(
    params: &'a [Tensor],
    offsets: &'a [i64],
    buffer: &'a Tensor,
) -> impl Iterator<Item = Tensor> + 'a {
    params.iter().zip(offsets).map(move |(p, &o)| {
        buffer
            .narrow(0, o, p.numel() as i64)
            .view(p.size().as_slice())
    })
}

/// The trainable variables of `vs` with their names, in name order (Adam's order).
pub(crate) fn trainable_by_name(vs: &VarStore) -> Vec<(String, Tensor)> {
    let mut vars: Vec<(String, Tensor)> = vs
        .variables()
        .into_iter()
        .filter(|(_, t)| t.requires_grad())
        .collect();
    vars.sort_by(|a, b| a.0.cmp(&b.0));
    vars
}

/// Adam over the trainable variables of a VarStore, in name order.
///
/// The parameters live in one flat buffer (each variable is a view into it), and so do the
/// moments, so a step is a dozen tensor operations whatever the number of parameters: at the
/// shipped networks' sizes a step is bound by the count of operations, not their arithmetic.
/// The arithmetic is element-wise and the same as per parameter, bit for bit.
#[derive(Debug)]
pub struct Adam {
    /// Learning rate (changed by schedules between updates).
    pub lr: f64,
    beta1: f64,
    beta2: f64,
    eps: f64,
    step: u64,
    names: Vec<String>,
    /// The variables, views into `flat`.
    params: Vec<Tensor>,
    /// Where each variable starts in the buffers (elements).
    offsets: Vec<i64>,
    flat: Tensor,
    /// The gradients gathered for a step (the gaps between variables stay zero).
    grad: Tensor,
    m: Tensor,
    v: Tensor,
    numerics: Numerics,
}

/// Variables start at multiples of this many elements in the flat buffer (64 bytes of f32, as
/// libtorch aligns every allocation): matrix kernels pick their code path, and with it their
/// rounding, by the alignment of the data, so a view must be aligned as its own allocation
/// was for the arithmetic to stay bit for bit.
const ALIGN_ELEMENTS: i64 = 16;

impl Adam {
    /// Adam with betas (0.9, 0.999) and the given epsilon (CleanRL: 1e-5). Moves the store's
    /// trainable variables into one buffer (their values and identities stay).
    pub fn new(vs: &VarStore, lr: f64, eps: f64) -> Self {
        let vars = trainable_by_name(vs);
        let (names, mut params): (Vec<String>, Vec<Tensor>) = vars.into_iter().unzip();
        let mut offsets = Vec::with_capacity(params.len());
        let mut total = 0i64;
        for p in &params {
            offsets.push(total);
            let n = p.numel() as i64;
            total += (n + ALIGN_ELEMENTS - 1) / ALIGN_ELEMENTS * ALIGN_ELEMENTS;
        }
        let flat = Tensor::zeros([total], (Kind::Float, vs.device()));
        {
            let _guard = tch::no_grad_guard();
            for (p, &offset) in params.iter_mut().zip(&offsets) {
                let mut view = flat
                    .narrow(0, offset, p.numel() as i64)
                    .view(p.size().as_slice());
                view.copy_(p);
                p.set_data(&view);
            }
        }
        Self {
            lr,
            beta1: 0.9,
            beta2: 0.999,
            eps,
            step: 0,
            names,
            params,
            offsets,
            grad: flat.zeros_like(),
            m: flat.zeros_like(),
            v: flat.zeros_like(),
            flat,
            numerics: Numerics::Native,
        }
    }

    /// Takes its square roots with `numerics`' kernel ([`numerics::sqrt`]).
    pub fn with_numerics(mut self, numerics: Numerics) -> Self {
        self.numerics = numerics;
        self
    }

    /// The trainable parameters, in name order.
    pub fn params(&self) -> &[Tensor] {
        &self.params
    }

    /// Updates taken so far.
    pub fn step_count(&self) -> u64 {
        self.step
    }

    /// Clears the gradients.
    pub fn zero_grad(&mut self) {
        for p in &mut self.params {
            p.zero_grad();
        }
    }

    /// Scales gradients so their global L2 norm is at most `max_norm`; returns the norm before.
    pub fn clip_grad_norm(&mut self, max_norm: f64) -> f64 {
        let _guard = tch::no_grad_guard();
        let mut total = 0.0;
        for p in &self.params {
            let g = p.grad();
            if g.defined() {
                total += g.square().sum(Kind::Double).double_value(&[]);
            }
        }
        let norm = total.sqrt();
        if norm > max_norm && norm.is_finite() {
            let scale = max_norm / (norm + 1e-6);
            for p in &self.params {
                let mut g = p.grad();
                if g.defined() {
                    let _ = g.g_mul_scalar_(scale);
                }
            }
        }
        norm
    }

    /// Gathers the gradients into the flat gradient buffer (zeros for a parameter without
    /// one: its moments and value then stay as they are while they are zero, as they are
    /// until its first gradient).
    fn gather_grad(&mut self) {
        for (p, mut dst) in
            self.params
                .iter()
                .zip(views_of(&self.params, &self.offsets, &self.grad))
        {
            let g = p.grad();
            if g.defined() {
                dst.copy_(&g);
            } else {
                let _ = dst.zero_();
            }
        }
    }

    /// One Adam step with the current gradients.
    pub fn step(&mut self) {
        let _guard = tch::no_grad_guard();
        self.step += 1;
        let bc1 = 1.0 - self.beta1.powi(self.step as i32);
        let bc2 = 1.0 - self.beta2.powi(self.step as i32);
        self.gather_grad();
        let g = &self.grad;
        let new_m = &self.m * self.beta1 + g * (1.0 - self.beta1);
        let new_v = &self.v * self.beta2 + g.square() * (1.0 - self.beta2);
        self.m.copy_(&new_m);
        self.v.copy_(&new_v);
        let denom = numerics::sqrt(self.numerics, &new_v) / bc2.sqrt() + self.eps;
        let update = new_m / denom * (self.lr / bc1);
        let next = &self.flat - update;
        self.flat.copy_(&next);
    }

    /// `buffer`'s part of each parameter, shaped like it, in name order.
    fn views_of<'a>(&'a self, buffer: &'a Tensor) -> impl Iterator<Item = Tensor> + 'a {
        views_of(&self.params, &self.offsets, buffer)
    }

    /// Moment tensors named `adam.m.<param>` / `adam.v.<param>` (for checkpoints).
    pub fn state_tensors(&self) -> Vec<(String, Tensor)> {
        let mut out = Vec::with_capacity(2 * self.names.len());
        for ((n, m), v) in self
            .names
            .iter()
            .zip(self.views_of(&self.m))
            .zip(self.views_of(&self.v))
        {
            out.push((format!("adam.m.{n}"), m));
            out.push((format!("adam.v.{n}"), v));
        }
        out
    }

    /// Restores moments and the step count; `lookup(name)` returns a saved tensor.
    pub fn load_state(
        &mut self,
        step: u64,
        mut lookup: impl FnMut(&str) -> Option<Tensor>,
    ) -> Result<(), String> {
        let _guard = tch::no_grad_guard();
        let moments: Vec<(String, Tensor)> = self.state_tensors();
        for (key, mut dst) in moments {
            let src = lookup(&key).ok_or_else(|| format!("missing tensor {key}"))?;
            if src.size() != dst.size() {
                return Err(format!(
                    "tensor {key}: shape {:?}, expected {:?}",
                    src.size(),
                    dst.size()
                ));
            }
            dst.copy_(&src);
        }
        self.step = step;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::{nn, Device};

    #[test]
    fn first_steps_match_hand_computed_adam() {
        let vs = nn::VarStore::new(Device::Cpu);
        let x = vs.root().var("x", &[1], nn::Init::Const(1.0));
        let mut opt = Adam::new(&vs, 0.1, 1e-8);
        // f = x^2, grad 2x. Step 1: m = 0.2, v = 0.004, mhat = 2, vhat = 4 -> x -= 0.1*2/2.
        for expected in [0.9f64, 0.8000000] {
            opt.zero_grad();
            (&x * &x).sum(Kind::Float).backward();
            opt.step();
            let got = x.double_value(&[0]);
            assert!((got - expected).abs() < 2e-3, "{got} vs {expected}");
        }
        assert_eq!(opt.step_count(), 2);
        assert_eq!(opt.state_tensors().len(), 2);
    }

    #[test]
    fn the_flat_step_is_the_per_parameter_step_bit_for_bit() {
        crate::with_seed(3, || {
            let vs = nn::VarStore::new(Device::Cpu);
            let root = vs.root();
            let shapes: [&[i64]; 4] = [&[3, 5], &[5], &[1], &[2, 2, 3]];
            let vars: Vec<Tensor> = shapes
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    root.var(
                        &format!("w{i}"),
                        s,
                        nn::Init::Randn {
                            mean: 0.0,
                            stdev: 1.0,
                        },
                    )
                })
                .collect();
            let coeffs: Vec<Tensor> = shapes
                .iter()
                .map(|s| Tensor::randn(*s, (Kind::Float, Device::Cpu)))
                .collect();
            let mut opt = Adam::new(&vs, 0.01, 1e-5);
            // The reference: PyTorch's Adam per parameter, on copies of the same values.
            let mut reference: Vec<Tensor> = vars.iter().map(|v| v.detach().copy()).collect();
            let mut m: Vec<Tensor> = vars.iter().map(|v| v.zeros_like()).collect();
            let mut v2: Vec<Tensor> = vars.iter().map(|v| v.zeros_like()).collect();
            for step in 1..=6 {
                opt.zero_grad();
                let loss = vars
                    .iter()
                    .zip(&coeffs)
                    .map(|(w, c)| (w * c).sum(Kind::Float) + w.square().sum(Kind::Float) * 0.3)
                    .fold(Tensor::zeros([], (Kind::Float, Device::Cpu)), |a, b| a + b);
                loss.backward();
                opt.clip_grad_norm(2.0);
                let grads: Vec<Tensor> = vars.iter().map(|w| w.grad().copy()).collect();
                opt.step();
                let (b1, b2, eps, lr) = (0.9f64, 0.999f64, 1e-5, 0.01);
                let bc1 = 1.0 - b1.powi(step);
                let bc2 = 1.0 - b2.powi(step);
                let _guard = tch::no_grad_guard();
                for i in 0..vars.len() {
                    let g = &grads[i];
                    m[i] = &m[i] * b1 + g * (1.0 - b1);
                    v2[i] = &v2[i] * b2 + g.square() * (1.0 - b2);
                    let denom = v2[i].sqrt() / bc2.sqrt() + eps;
                    reference[i] = &reference[i] - &m[i] / denom * (lr / bc1);
                    assert!(vars[i].equal(&reference[i]), "w{i} differs at step {step}");
                }
            }
            // The variables are views of the buffer: the store sees the trained values.
            let stored: Vec<(String, Tensor)> = vs.variables().into_iter().collect();
            for (name, t) in stored {
                let i: usize = name[1..].parse().unwrap();
                assert!(t.equal(&reference[i]), "{name}");
            }
            // Moments round-trip by name.
            let saved: std::collections::HashMap<String, Tensor> = opt
                .state_tensors()
                .into_iter()
                .map(|(k, t)| (k, t.copy()))
                .collect();
            let vs2 = nn::VarStore::new(Device::Cpu);
            for (i, s) in shapes.iter().enumerate() {
                let _ = vs2.root().var(&format!("w{i}"), s, nn::Init::Const(0.0));
            }
            let mut opt2 = Adam::new(&vs2, 0.01, 1e-5);
            opt2.load_state(6, |k| saved.get(k).map(|t| t.copy()))
                .unwrap();
            for (k, t) in opt2.state_tensors() {
                assert!(t.equal(&saved[&k]), "{k}");
            }
        });
    }

    #[test]
    fn clipping_bounds_the_norm() {
        let vs = nn::VarStore::new(Device::Cpu);
        let x = vs.root().var("x", &[2], nn::Init::Const(3.0));
        let mut opt = Adam::new(&vs, 0.1, 1e-8);
        opt.zero_grad();
        (&x * &x).sum(Kind::Float).backward(); // grad (6, 6), norm 8.485
        let before = opt.clip_grad_norm(1.0);
        assert!((before - 72f64.sqrt()).abs() < 1e-4);
        let g = x.grad();
        let after = g.square().sum(Kind::Double).double_value(&[]).sqrt();
        assert!((after - 1.0).abs() < 1e-4, "{after}");
    }
}
