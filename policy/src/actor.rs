//! The actor network of an exported policy, evaluated in plain f32 without libtorch.
//!
//! Layers are dense (`y = act(W x + b)` with PyTorch's `[out, in]` weight layout on disk). The
//! weights are stored transposed (`[in, out]`) so that each input scales one contiguous row of
//! outputs: the inner loop has no reduction and the compiler vectorizes it, while every output
//! still sums its terms in input order, so results are the same on every machine.

use serde::{Deserialize, Serialize};

/// Number of objective weights (throughput, latency, loss).
pub const OBJECTIVE_DIM: usize = 3;

/// A layer's nonlinearity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Activation {
    /// tanh (Aurora and MOCC hidden layers).
    #[default]
    Tanh,
    /// max(0, x).
    Relu,
    /// No nonlinearity (output heads).
    Identity,
}

impl Activation {
    /// Applies the nonlinearity in place.
    pub fn apply(self, values: &mut [f32]) {
        match self {
            Activation::Tanh => values.iter_mut().for_each(|v| *v = tanh(*v)),
            Activation::Relu => values.iter_mut().for_each(|v| *v = v.max(0.0)),
            Activation::Identity => {}
        }
    }
}

/// tanh in f32: a [13/6] rational approximation on [-9, 9] (the form Eigen and PyTorch's
/// vectorized CPU kernels use), within a few f32 ulps of the exact value and several times
/// faster than libm's `tanhf`. Beyond |x| = 9 tanh rounds to +-1 in f32.
#[inline]
pub fn tanh(x: f32) -> f32 {
    const CLAMP: f32 = 7.905_311;
    const TINY: f32 = 0.000_4;
    const A1: f32 = 4.893_524_6e-3;
    const A3: f32 = 6.372_619e-4;
    const A5: f32 = 1.485_722_4e-5;
    const A7: f32 = 5.122_297e-8;
    const A9: f32 = -8.604_672e-11;
    const A11: f32 = 2.000_188e-13;
    const A13: f32 = -2.760_768e-16;
    const B0: f32 = 4.893_525e-3;
    const B2: f32 = 2.268_434_7e-3;
    const B4: f32 = 1.185_347_1e-4;
    const B6: f32 = 1.198_258_4e-6;
    if x.is_nan() {
        return x;
    }
    if x.abs() < TINY {
        return x;
    }
    let x = x.clamp(-CLAMP, CLAMP);
    let x2 = x * x;
    let mut p = A13;
    p = p * x2 + A11;
    p = p * x2 + A9;
    p = p * x2 + A7;
    p = p * x2 + A5;
    p = p * x2 + A3;
    p = p * x2 + A1;
    let p = p * x;
    let mut q = B6;
    q = q * x2 + B4;
    q = q * x2 + B2;
    q = q * x2 + B0;
    p / q
}

/// One dense layer.
#[derive(Debug, Clone, PartialEq)]
pub struct Dense {
    inputs: usize,
    outputs: usize,
    /// `[inputs, outputs]`, row-major (the transpose of PyTorch's weight).
    weight_t: Vec<f32>,
    bias: Vec<f32>,
    activation: Activation,
}

impl Dense {
    /// A layer from PyTorch's layout: `weight` is `[outputs, inputs]` row-major, `bias` is
    /// `[outputs]`. Returns `None` when the lengths do not fit the sizes.
    pub fn from_torch_layout(
        inputs: usize,
        outputs: usize,
        weight: &[f32],
        bias: &[f32],
        activation: Activation,
    ) -> Option<Self> {
        if weight.len() != inputs * outputs || bias.len() != outputs {
            return None;
        }
        let mut weight_t = vec![0.0; inputs * outputs];
        for o in 0..outputs {
            for i in 0..inputs {
                weight_t[i * outputs + o] = weight[o * inputs + i];
            }
        }
        Some(Self {
            inputs,
            outputs,
            weight_t,
            bias: bias.to_vec(),
            activation,
        })
    }

    /// Input width.
    pub fn inputs(&self) -> usize {
        self.inputs
    }

    /// Output width.
    pub fn outputs(&self) -> usize {
        self.outputs
    }

    /// `out = act(W x + b)`; `x.len() == inputs`, `out.len() == outputs`.
    pub fn forward(&self, x: &[f32], out: &mut [f32]) {
        debug_assert_eq!(x.len(), self.inputs);
        debug_assert_eq!(out.len(), self.outputs);
        out.copy_from_slice(&self.bias);
        for (&xi, row) in x.iter().zip(self.weight_t.chunks_exact(self.outputs)) {
            for (o, &w) in out.iter_mut().zip(row) {
                *o += xi * w;
            }
        }
        self.activation.apply(out);
    }
}

/// A chain of dense layers.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Mlp {
    layers: Vec<Dense>,
}

impl Mlp {
    /// The layers, first to last; consecutive widths must chain (checked by the caller).
    pub fn new(layers: Vec<Dense>) -> Self {
        Self { layers }
    }

    /// The layers.
    pub fn layers(&self) -> &[Dense] {
        &self.layers
    }

    /// The widest layer output (scratch size).
    fn max_width(&self) -> usize {
        self.layers.iter().map(Dense::outputs).max().unwrap_or(0)
    }

    /// Runs the layers on `x`, writing the last layer's output into `out`, using `a` and `b`
    /// (each at least `max_width` long) as scratch. With no layers `out` receives `x`.
    fn forward(&self, x: &[f32], out: &mut [f32], a: &mut [f32], b: &mut [f32]) {
        let Some((last, hidden)) = self.layers.split_last() else {
            out.copy_from_slice(x);
            return;
        };
        let (mut cur, mut next) = (a, b);
        let mut width = x.len();
        cur[..width].copy_from_slice(x);
        for layer in hidden {
            layer.forward(&cur[..width], &mut next[..layer.outputs()]);
            width = layer.outputs();
            std::mem::swap(&mut cur, &mut next);
        }
        last.forward(&cur[..width], out);
    }
}

/// Scratch memory for [`ActorNet::forward`], so deciding allocates nothing.
#[derive(Debug, Clone, Default)]
pub struct Workspace {
    input: Vec<f32>,
    hidden: Vec<f32>,
    a: Vec<f32>,
    b: Vec<f32>,
    out: [f32; 1],
}

/// The actor: an optional preference MLP on the objective, whose output is appended to the
/// (normalized) observation, then the body MLP and a one-unit mean head.
#[derive(Debug, Clone, PartialEq)]
pub struct ActorNet {
    obs_dim: usize,
    preference: Option<Mlp>,
    body: Mlp,
    head: Dense,
}

impl ActorNet {
    /// Assembles the actor; widths are assumed consistent (the loader checks them).
    pub fn new(obs_dim: usize, preference: Option<Mlp>, body: Mlp, head: Dense) -> Self {
        Self {
            obs_dim,
            preference,
            body,
            head,
        }
    }

    /// Observation width.
    pub fn obs_dim(&self) -> usize {
        self.obs_dim
    }

    /// Whether the objective is an input.
    pub fn takes_objective(&self) -> bool {
        self.preference.is_some()
    }

    /// Scratch memory sized for this network.
    pub fn workspace(&self) -> Workspace {
        let input = self.obs_dim + self.preference_width();
        let widest = [
            input,
            OBJECTIVE_DIM,
            self.body.max_width(),
            self.preference.as_ref().map_or(0, Mlp::max_width),
        ]
        .into_iter()
        .max()
        .unwrap_or(1);
        Workspace {
            input: vec![0.0; input],
            hidden: vec![0.0; self.head.inputs()],
            a: vec![0.0; widest],
            b: vec![0.0; widest],
            out: [0.0],
        }
    }

    fn preference_width(&self) -> usize {
        self.preference
            .as_ref()
            .and_then(|p| p.layers().last())
            .map_or(0, Dense::outputs)
    }

    /// The mean action for a normalized observation (`obs_dim` values) and an objective
    /// (ignored without a preference sub-network). `ws` must come from [`Self::workspace`].
    pub fn forward(
        &self,
        obs: &[f32],
        objective: &[f32; OBJECTIVE_DIM],
        ws: &mut Workspace,
    ) -> f32 {
        let d = self.obs_dim;
        ws.input[..d].copy_from_slice(obs);
        if let Some(pref) = &self.preference {
            pref.forward(objective, &mut ws.input[d..], &mut ws.a, &mut ws.b);
        }
        self.body
            .forward(&ws.input, &mut ws.hidden, &mut ws.a, &mut ws.b);
        self.head.forward(&ws.hidden, &mut ws.out);
        ws.out[0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tanh_is_close_to_libm_everywhere() {
        let mut worst = 0.0f32;
        let mut x = -12.0f32;
        while x < 12.0 {
            let err = (tanh(x) - x.tanh()).abs();
            worst = worst.max(err);
            x += 1e-3;
        }
        assert!(worst < 5e-7, "worst error {worst}");
        assert_eq!(tanh(0.0), 0.0);
        assert_eq!(tanh(1e-5), 1e-5);
        assert!(tanh(f32::NAN).is_nan());
        assert_eq!(tanh(f32::INFINITY), tanh(100.0));
        assert!((tanh(f32::INFINITY) - 1.0).abs() < 1e-6);
        assert!((tanh(f32::NEG_INFINITY) + 1.0).abs() < 1e-6);
    }

    #[test]
    fn dense_matches_hand_computation() {
        // W = [[1, 2], [3, 4], [5, 6]] (3 outputs, 2 inputs), b = [0.5, -1, 0].
        let layer = Dense::from_torch_layout(
            2,
            3,
            &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            &[0.5, -1.0, 0.0],
            Activation::Relu,
        )
        .unwrap();
        let mut out = [0.0; 3];
        layer.forward(&[1.0, -1.0], &mut out);
        // [1-2+0.5, 3-4-1, 5-6+0] = [-0.5, -2, -1] -> relu -> 0.
        assert_eq!(out, [0.0, 0.0, 0.0]);
        layer.forward(&[2.0, 0.5], &mut out);
        assert_eq!(out, [3.5, 7.0, 13.0]);
        assert!(Dense::from_torch_layout(2, 3, &[1.0; 5], &[0.0; 3], Activation::Tanh).is_none());
    }
}
