//! Adam (PyTorch's update rule) with global grad-norm clipping and a state that checkpoints.
//!
//! tch's built-in optimizer cannot save its moments, so exact resume needs our own: the
//! moments live in tensors named after the parameters, the step count in a counter.

use tch::nn::VarStore;
use tch::{Kind, Tensor};

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
#[derive(Debug)]
pub struct Adam {
    /// Learning rate (changed by schedules between updates).
    pub lr: f64,
    beta1: f64,
    beta2: f64,
    eps: f64,
    step: u64,
    names: Vec<String>,
    params: Vec<Tensor>,
    m: Vec<Tensor>,
    v: Vec<Tensor>,
}

impl Adam {
    /// Adam with betas (0.9, 0.999) and the given epsilon (CleanRL: 1e-5).
    pub fn new(vs: &VarStore, lr: f64, eps: f64) -> Self {
        let vars = trainable_by_name(vs);
        let m = vars.iter().map(|(_, t)| t.zeros_like()).collect();
        let v = vars.iter().map(|(_, t)| t.zeros_like()).collect();
        let (names, params) = vars.into_iter().unzip();
        Self {
            lr,
            beta1: 0.9,
            beta2: 0.999,
            eps,
            step: 0,
            names,
            params,
            m,
            v,
        }
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

    /// One Adam step with the current gradients.
    pub fn step(&mut self) {
        let _guard = tch::no_grad_guard();
        self.step += 1;
        let bc1 = 1.0 - self.beta1.powi(self.step as i32);
        let bc2 = 1.0 - self.beta2.powi(self.step as i32);
        for ((p, m), v) in self.params.iter_mut().zip(&mut self.m).zip(&mut self.v) {
            let g = p.grad();
            if !g.defined() {
                continue;
            }
            let new_m = &*m * self.beta1 + &g * (1.0 - self.beta1);
            let new_v = &*v * self.beta2 + g.square() * (1.0 - self.beta2);
            m.copy_(&new_m);
            v.copy_(&new_v);
            let denom = new_v.sqrt() / bc2.sqrt() + self.eps;
            let update = new_m / denom * (self.lr / bc1);
            let next = &*p - update;
            p.copy_(&next);
        }
    }

    /// Moment tensors named `adam.m.<param>` / `adam.v.<param>` (for checkpoints).
    pub fn state_tensors(&self) -> Vec<(String, Tensor)> {
        let mut out = Vec::with_capacity(2 * self.names.len());
        for ((n, m), v) in self.names.iter().zip(&self.m).zip(&self.v) {
            out.push((format!("adam.m.{n}"), m.shallow_clone()));
            out.push((format!("adam.v.{n}"), v.shallow_clone()));
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
        for ((n, m), v) in self.names.iter().zip(&mut self.m).zip(&mut self.v) {
            for (prefix, dst) in [("adam.m.", &mut *m), ("adam.v.", &mut *v)] {
                let key = format!("{prefix}{n}");
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
