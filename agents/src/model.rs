//! Gaussian actor-critic with a state-independent log std, optional preference sub-network.
//!
//! Variables live under stable VarStore paths: `pi/l{i}`, `pi/mean`, `vf/l{i}`, `vf/value`,
//! `pi/pref/l{i}`, `vf/pref/l{i}` and `log_std`, so checkpoints and exports keep their names.

use crate::numerics::{self, Numerics};
use crate::orthogonal::orthogonal;
use mocc_policy::{ArchitectureSpec, LayerSpec};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use tch::nn;
use tch::{Kind, Tensor};

pub use mocc_policy::Activation;

/// Applies a layer nonlinearity to a tensor (the same functions the libtorch-free runtime uses).
fn activate(numerics: Numerics, activation: Activation, x: &Tensor) -> Tensor {
    match activation {
        Activation::Tanh => numerics::tanh(numerics, x),
        Activation::Relu => x.relu(),
        Activation::Identity => x.shallow_clone(),
    }
}

/// Shapes of an actor-critic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Architecture {
    /// Observation length (history x features).
    pub obs_dim: usize,
    /// Hidden sizes of the policy MLP.
    pub pi: Vec<usize>,
    /// Hidden sizes of the value MLP.
    pub vf: Vec<usize>,
    /// Hidden nonlinearity.
    pub activation: Activation,
    /// Hidden sizes of the preference sub-network mapping the objective `w` (3 weights) to
    /// features concatenated with the observation; `None` for single-objective policies.
    pub preference: Option<Vec<usize>>,
    /// Initial log standard deviation of the Gaussian policy.
    pub init_log_std: f64,
    /// Lower bound on the policy's log std (none: free). Long MOCC runs otherwise let the
    /// exploration noise collapse (docs/mocc.md, paper scale); below the bound the parameter gets no
    /// gradient and the policy keeps `exp(min_log_std)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_log_std: Option<f64>,
    /// Width of the global state a centralized critic reads after the observation (0: the
    /// critic reads what the actor reads). Rows fed to the network are then the observation
    /// followed by the global state; the actor reads the first `obs_dim` values alone.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub global_dim: usize,
}

fn is_zero(x: &usize) -> bool {
    *x == 0
}

impl Architecture {
    /// Aurora: separate pi and vf MLPs [32, 16] tanh over the feature history.
    pub fn aurora(obs_dim: usize) -> Self {
        Self {
            obs_dim,
            pi: vec![32, 16],
            vf: vec![32, 16],
            activation: Activation::Tanh,
            preference: None,
            init_log_std: 0.0,
            min_log_std: None,
            global_dim: 0,
        }
    }

    /// MOCC: [64, 32] tanh plus a preference sub-network of [16] on w, in actor and critic.
    pub fn mocc(obs_dim: usize) -> Self {
        Self {
            obs_dim,
            pi: vec![64, 32],
            vf: vec![64, 32],
            activation: Activation::Tanh,
            preference: Some(vec![16]),
            init_log_std: 0.0,
            min_log_std: None,
            global_dim: 0,
        }
    }

    /// Width of the rows the network takes: the observation and, for a centralized critic,
    /// the global state after it.
    pub fn input_dim(&self) -> usize {
        self.obs_dim + self.global_dim
    }

    /// The log std the policy acts with for a parameter value `raw`: `raw` floored at
    /// `min_log_std`. For exports, which read the raw parameter from a checkpoint; a live
    /// network floors its tensor in [`ActorCritic::effective_log_std`].
    pub fn acting_log_std(&self, raw: f64) -> f64 {
        self.min_log_std.map_or(raw, |m| raw.max(m))
    }

    /// Whether the network takes the objective as input.
    pub fn takes_objective(&self) -> bool {
        self.preference.is_some()
    }

    /// The actor's layers as an export describes them, with the VarStore names of their
    /// tensors (`pi.pref.l{i}`, `pi.l{i}`, `pi.mean`).
    pub fn actor_spec(&self, log_std: f64) -> ArchitectureSpec {
        let layers = |prefix: &str, input: usize, sizes: &[usize]| {
            let mut width = input;
            sizes
                .iter()
                .enumerate()
                .map(|(i, &h)| {
                    let l = LayerSpec {
                        name: format!("{prefix}l{i}"),
                        inputs: width,
                        outputs: h,
                        activation: self.activation,
                    };
                    width = h;
                    l
                })
                .collect::<Vec<_>>()
        };
        let preference = self
            .preference
            .as_deref()
            .map_or_else(Vec::new, |sizes| layers("pi.pref.", OBJECTIVE_DIM, sizes));
        let pref_out = preference.last().map_or(0, |l| l.outputs);
        let body = layers("pi.", self.obs_dim + pref_out, &self.pi);
        let head = LayerSpec {
            name: "pi.mean".to_string(),
            inputs: body.last().map_or(self.obs_dim + pref_out, |l| l.outputs),
            outputs: 1,
            activation: Activation::Identity,
        };
        ArchitectureSpec {
            obs_dim: self.obs_dim,
            objective_dim: if self.takes_objective() {
                OBJECTIVE_DIM
            } else {
                0
            },
            preference,
            body,
            head,
            log_std,
        }
    }
}

pub use mocc_policy::OBJECTIVE_DIM;

/// Where a new network's weights come from.
enum WeightSource {
    /// libtorch's global RNG and QR (draws from the seed [`crate::with_seed`] set).
    Libtorch,
    /// [`orthogonal`] on the host, from this stream.
    Host(Box<ChaCha8Rng>),
}

impl WeightSource {
    /// A layer of `inputs -> outputs` under `p`: orthogonal weights times `gain`, zero bias.
    fn dense(&mut self, p: &nn::Path, inputs: usize, outputs: usize, gain: f64) -> Dense {
        match self {
            Self::Libtorch => {
                let config = nn::LinearConfig {
                    ws_init: nn::Init::Orthogonal { gain },
                    bs_init: Some(nn::Init::Const(0.0)),
                    bias: true,
                };
                let l = nn::linear(p, inputs as i64, outputs as i64, config);
                // `bias: true` always creates one.
                let bs = match l.bs {
                    Some(b) => b,
                    None => p.var("bias", &[outputs as i64], nn::Init::Const(0.0)),
                };
                Dense { ws: l.ws, bs }
            }
            Self::Host(rng) => {
                let w = orthogonal(outputs, inputs, gain, rng);
                let w = Tensor::from_slice(&w).view([outputs as i64, inputs as i64]);
                let ws = p.var_copy("weight", &w);
                let bs = p.var("bias", &[outputs as i64], nn::Init::Const(0.0));
                Dense { ws, bs }
            }
        }
    }
}

/// A fully connected layer (`weight` `[out, in]`, `bias` `[out]`, as `nn::Linear` names them).
#[derive(Debug)]
struct Dense {
    ws: Tensor,
    bs: Tensor,
}

impl Dense {
    fn forward(&self, numerics: Numerics, x: &Tensor) -> Tensor {
        numerics::linear(numerics, x, &self.ws, &self.bs)
    }
}

#[derive(Debug)]
struct Mlp {
    layers: Vec<Dense>,
    activation: Activation,
}

impl Mlp {
    fn new(
        p: &nn::Path,
        input: usize,
        hidden: &[usize],
        activation: Activation,
        source: &mut WeightSource,
    ) -> (Self, usize) {
        let mut layers = Vec::with_capacity(hidden.len());
        let mut last = input;
        for (i, &h) in hidden.iter().enumerate() {
            layers.push(source.dense(&(p / format!("l{i}")), last, h, 2f64.sqrt()));
            last = h;
        }
        (Self { layers, activation }, last)
    }

    fn forward(&self, numerics: Numerics, x: &Tensor) -> Tensor {
        let mut h = x.shallow_clone();
        for l in &self.layers {
            h = activate(numerics, self.activation, &l.forward(numerics, &h));
        }
        h
    }
}

#[derive(Debug)]
struct Branch {
    preference: Option<Mlp>,
    body: Mlp,
    head: Dense,
}

impl Branch {
    fn new(
        p: &nn::Path,
        arch: &Architecture,
        input: usize,
        hidden: &[usize],
        head: &str,
        gain: f64,
        source: &mut WeightSource,
    ) -> Self {
        let (preference, pref_out) = match &arch.preference {
            Some(sizes) => {
                let (mlp, out) =
                    Mlp::new(&(p / "pref"), OBJECTIVE_DIM, sizes, arch.activation, source);
                (Some(mlp), out)
            }
            None => (None, 0),
        };
        let (body, last) = Mlp::new(p, input + pref_out, hidden, arch.activation, source);
        let head = source.dense(&(p / head), last, 1, gain);
        Self {
            preference,
            body,
            head,
        }
    }

    fn forward(&self, numerics: Numerics, obs: &Tensor, objective: Option<&Tensor>) -> Tensor {
        let input = match (&self.preference, objective) {
            (Some(pref), Some(w)) => {
                Tensor::cat(&[obs.shallow_clone(), pref.forward(numerics, w)], 1)
            }
            _ => obs.shallow_clone(),
        };
        self.head
            .forward(numerics, &self.body.forward(numerics, &input))
    }
}

/// Output of a forward pass.
#[derive(Debug)]
pub struct PolicyOutput {
    /// Mean action `[B, 1]`.
    pub mean: Tensor,
    /// Log std broadcast `[B, 1]`.
    pub log_std: Tensor,
    /// State value `[B]`.
    pub value: Tensor,
}

/// The actor-critic. Inputs are already normalized observations `[B, obs_dim]` and, for
/// preference networks, objectives `[B, 3]`.
#[derive(Debug)]
pub struct ActorCritic {
    arch: Architecture,
    numerics: Numerics,
    actor: Branch,
    critic: Branch,
    log_std: Tensor,
}

impl ActorCritic {
    /// Creates the variables under `p` with native numerics and libtorch's initialization,
    /// drawn from its global RNG (CleanRL's orthogonal init: gain sqrt(2) in hidden layers,
    /// 0.01 on the action mean, 1 on the value).
    pub fn new(p: &nn::Path, arch: Architecture) -> Self {
        Self::build(p, arch, Numerics::Native, WeightSource::Libtorch)
    }

    /// Creates the variables under `p` for `numerics`, initialized from `seed`: native
    /// numerics draw from libtorch's RNG seeded with it (as [`Self::new`] inside
    /// [`crate::with_seed`]), portable ones compute the same kind of orthogonal matrices on the
    /// host ([`crate::orthogonal`]), the same on every machine.
    pub fn seeded(p: &nn::Path, arch: Architecture, numerics: Numerics, seed: u64) -> Self {
        match numerics {
            Numerics::Native => crate::with_seed(seed as i64, || Self::new(p, arch)),
            Numerics::Portable => Self::build(
                p,
                arch,
                numerics,
                WeightSource::Host(Box::new(init_rng(seed))),
            ),
        }
    }

    /// A network whose weights are about to be overwritten (a replica, a loaded checkpoint):
    /// no seed, and no draws from libtorch's RNG under another thread's seed.
    pub fn unseeded(p: &nn::Path, arch: Architecture, numerics: Numerics) -> Self {
        match numerics {
            Numerics::Native => crate::unseeded(|| Self::new(p, arch)),
            Numerics::Portable => {
                Self::build(p, arch, numerics, WeightSource::Host(Box::new(init_rng(0))))
            }
        }
    }

    fn build(
        p: &nn::Path,
        arch: Architecture,
        numerics: Numerics,
        mut source: WeightSource,
    ) -> Self {
        let actor = Branch::new(
            &(p / "pi"),
            &arch,
            arch.obs_dim,
            &arch.pi,
            "mean",
            0.01,
            &mut source,
        );
        let critic = Branch::new(
            &(p / "vf"),
            &arch,
            arch.input_dim(),
            &arch.vf,
            "value",
            1.0,
            &mut source,
        );
        let log_std = p.var("log_std", &[1], nn::Init::Const(arch.init_log_std));
        Self {
            arch,
            numerics,
            actor,
            critic,
            log_std,
        }
    }

    /// The kernels this network computes with.
    pub fn numerics(&self) -> Numerics {
        self.numerics
    }

    /// The architecture.
    pub fn architecture(&self) -> &Architecture {
        &self.arch
    }

    /// The log std parameter `[1]` (before `min_log_std`; see [`Self::effective_log_std`]).
    pub fn log_std(&self) -> &Tensor {
        &self.log_std
    }

    /// The log std the policy acts with: the parameter, floored at `min_log_std`.
    pub fn effective_log_std(&self) -> Tensor {
        match self.arch.min_log_std {
            Some(m) => self.log_std.clamp_min(m),
            None => self.log_std.shallow_clone(),
        }
    }

    /// The actor's part of rows `[B, input_dim]`: the observation.
    fn local(&self, rows: &Tensor) -> Tensor {
        if self.arch.global_dim == 0 {
            rows.shallow_clone()
        } else {
            rows.narrow(1, 0, self.arch.obs_dim as i64)
        }
    }

    /// Policy mean, log std and value of rows `[B, input_dim]` (the observation, then for a
    /// centralized critic the global state).
    pub fn forward(&self, obs: &Tensor, objective: Option<&Tensor>) -> PolicyOutput {
        let mean = self
            .actor
            .forward(self.numerics, &self.local(obs), objective);
        let value = self
            .critic
            .forward(self.numerics, obs, objective)
            .squeeze_dim(-1);
        let log_std = self.effective_log_std().expand_as(&mean);
        PolicyOutput {
            mean,
            log_std,
            value,
        }
    }

    /// The actor's mean action for normalized observations `[B, obs_dim]` alone (what an export
    /// computes; no global state).
    pub fn actor_mean(&self, obs: &Tensor, objective: Option<&Tensor>) -> Tensor {
        self.actor.forward(self.numerics, obs, objective)
    }

    /// The actor's mean actions alone, without gradients, for normalized observations `[n,
    /// obs_dim]` (no global state: what a deployed sender has) and objectives `[n, 3]`.
    pub fn infer_actor(&self, obs: &[f32], objectives: &[f32], device: tch::Device) -> Vec<f32> {
        let n = (objectives.len() / OBJECTIVE_DIM) as i64;
        tch::no_grad(|| {
            let obs = Tensor::from_slice(obs)
                .view([n, self.arch.obs_dim as i64])
                .to_device(device);
            let w = Tensor::from_slice(objectives)
                .view([n, OBJECTIVE_DIM as i64])
                .to_device(device);
            let mean = self.actor.forward(
                self.numerics,
                &obs,
                self.arch.takes_objective().then_some(&w),
            );
            to_vec(&mean.view([-1]))
        })
    }

    /// Batched inference without gradients on flat CPU slices: normalized rows `[n,
    /// input_dim]` and objectives `[n, 3]` (ignored by networks without a preference
    /// sub-network) in; action means `[n]`, values `[n]` and the log std out.
    pub fn infer(&self, obs: &[f32], objectives: &[f32], device: tch::Device) -> Inference {
        let n = (objectives.len() / OBJECTIVE_DIM) as i64;
        tch::no_grad(|| {
            let obs = Tensor::from_slice(obs)
                .view([n, self.arch.input_dim() as i64])
                .to_device(device);
            let w = Tensor::from_slice(objectives)
                .view([n, OBJECTIVE_DIM as i64])
                .to_device(device);
            let out = self.forward(&obs, self.arch.takes_objective().then_some(&w));
            Inference {
                mean: to_vec(&out.mean.view([-1])),
                value: to_vec(&out.value),
                log_std: self.effective_log_std().double_value(&[0]) as f32,
            }
        })
    }

    /// State value only.
    pub fn value(&self, obs: &Tensor, objective: Option<&Tensor>) -> Tensor {
        self.critic
            .forward(self.numerics, obs, objective)
            .squeeze_dim(-1)
    }
}

/// The stream host initialization draws from (seeded by the run's seed; a stream of its own,
/// apart from the learner's action noise and the envs').
fn init_rng(seed: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(u64::MAX - 1);
    rng
}

/// Copies every variable of `vs` from `tensors` (by name, onto the store's device) without
/// tracking gradients. The error names the first missing or mis-shaped weight.
pub fn load_weights(
    vs: &nn::VarStore,
    tensors: &std::collections::HashMap<String, Tensor>,
) -> Result<(), String> {
    let device = vs.device();
    let _guard = tch::no_grad_guard();
    for (name, mut var) in vs.variables() {
        let src = tensors
            .get(&name)
            .ok_or_else(|| format!("lacks weight {name}"))?;
        if src.size() != var.size() {
            return Err(format!(
                "weight {name} has shape {:?}, the network needs {:?}",
                src.size(),
                var.size()
            ));
        }
        var.copy_(&src.to_device(device));
    }
    Ok(())
}

/// Copies `tensors` of a network with a local critic into `vs`, whose critic is centralized
/// (`arch.global_dim > 0`): every variable as [`load_weights`] does, but the critic's first
/// layer, which reads the global state besides, takes the saved columns for the observation and
/// the preference output and zeros for the global state, so the critic starts as the saved one.
pub fn load_weights_into_central(
    vs: &nn::VarStore,
    tensors: &std::collections::HashMap<String, Tensor>,
    arch: &Architecture,
) -> Result<(), String> {
    const FIRST: &str = "vf.l0.weight";
    let src = tensors
        .get(FIRST)
        .ok_or_else(|| format!("lacks weight {FIRST}"))?;
    let (obs, global) = (arch.obs_dim as i64, arch.global_dim as i64);
    let size = src.size();
    if size.len() != 2 || size[1] < obs {
        return Err(format!(
            "weight {FIRST} has shape {size:?}, not a local critic's"
        ));
    }
    let widened = Tensor::cat(
        &[
            src.narrow(1, 0, obs),
            Tensor::zeros([size[0], global], (src.kind(), src.device())),
            src.narrow(1, obs, size[1] - obs),
        ],
        1,
    );
    let mut local: std::collections::HashMap<String, Tensor> = tensors
        .iter()
        .map(|(name, t)| (name.clone(), t.shallow_clone()))
        .collect();
    local.insert(FIRST.to_string(), widened);
    load_weights(vs, &local)
}

/// Result of [`ActorCritic::infer`].
#[derive(Debug, Clone, PartialEq)]
pub struct Inference {
    /// Action means, one per row.
    pub mean: Vec<f32>,
    /// State values, one per row.
    pub value: Vec<f32>,
    /// The policy's log std.
    pub log_std: f32,
}

/// A tensor's values as f32 on the CPU, row-major.
pub fn to_vec(t: &Tensor) -> Vec<f32> {
    let t = t
        .to_device(tch::Device::Cpu)
        .to_kind(Kind::Float)
        .contiguous();
    let n = t.numel();
    let mut out = vec![0.0f32; n];
    t.copy_data(&mut out, n);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Device;

    #[test]
    fn shapes_and_names_are_stable() {
        crate::with_seed(0, || {
            let vs = nn::VarStore::new(Device::Cpu);
            let net = ActorCritic::new(&vs.root(), Architecture::mocc(30));
            let obs = Tensor::zeros([5, 30], (Kind::Float, Device::Cpu));
            let w = Tensor::full([5, 3], 1.0 / 3.0, (Kind::Float, Device::Cpu));
            let out = net.forward(&obs, Some(&w));
            assert_eq!(out.mean.size(), vec![5, 1]);
            assert_eq!(out.value.size(), vec![5]);
            let mut names: Vec<String> = vs.variables().into_keys().collect();
            names.sort();
            assert!(
                names.contains(&"pi.pref.l0.weight".to_string()),
                "{names:?}"
            );
            assert!(names.contains(&"vf.value.bias".to_string()), "{names:?}");
            assert!(names.contains(&"log_std".to_string()), "{names:?}");
            let pi_l0 = &vs.variables()["pi.l0.weight"];
            assert_eq!(pi_l0.size(), vec![64, 30 + 16]);
        });
    }

    /// Portable initial weights: the same bits on every machine (pinned here: they come from
    /// a seeded ChaCha stream, f64 Box-Muller and Gram-Schmidt on the host), whatever else
    /// drew from libtorch's RNG, and other ones for another seed.
    #[test]
    fn portable_initial_weights_are_pinned_and_ignore_libtorchs_rng() {
        use sha2::{Digest, Sha256};
        let weights = |seed: u64| {
            let vs = nn::VarStore::new(Device::Cpu);
            let _net =
                ActorCritic::seeded(&vs.root(), Architecture::mocc(30), Numerics::Portable, seed);
            let _noise = crate::unseeded(|| Tensor::randn([100], (Kind::Float, Device::Cpu)));
            let mut vars: Vec<(String, Tensor)> = vs.variables().into_iter().collect();
            vars.sort_by(|a, b| a.0.cmp(&b.0));
            let mut hash = Sha256::new();
            for (name, t) in &vars {
                hash.update(name.as_bytes());
                for v in to_vec(t) {
                    hash.update(v.to_le_bytes());
                }
            }
            hash.finalize()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        };
        let one = weights(1);
        assert_eq!(one, weights(1));
        assert_ne!(one, weights(2));
        assert_eq!(
            one,
            "6336f2ac6d3a0f4f7692ffc3f1a22adab8e8ca414b937dcf5e8e2b71f6387983"
        );
    }

    #[test]
    fn min_log_std_floors_the_acting_std_and_blocks_its_gradient() {
        let obs = Tensor::zeros([4, 30], (Kind::Float, Device::Cpu));
        let w = Tensor::full([4, 3], 1.0 / 3.0, (Kind::Float, Device::Cpu));
        let w_flat = [1.0f32 / 3.0; 12];
        for (floor, expect) in [(None, -3.0), (Some(-1.0), -1.0), (Some(-4.0), -3.0)] {
            let arch = Architecture {
                init_log_std: -3.0,
                min_log_std: floor,
                ..Architecture::mocc(30)
            };
            let vs = nn::VarStore::new(Device::Cpu);
            let net = crate::unseeded(|| ActorCritic::new(&vs.root(), arch));
            let out = net.forward(&obs, Some(&w));
            let got: Vec<f32> = Vec::try_from(out.log_std.view([-1])).unwrap();
            assert!(
                got.iter().all(|&v| (f64::from(v) - expect).abs() < 1e-6),
                "{floor:?}: {got:?}"
            );
            let inf = net.infer(&[0.0; 120], &w_flat, Device::Cpu);
            assert!((f64::from(inf.log_std) - expect).abs() < 1e-6, "{floor:?}");
            // The parameter itself keeps its value; below the floor it gets no gradient.
            assert!((net.log_std().double_value(&[0]) + 3.0).abs() < 1e-6);
            out.log_std.sum(Kind::Float).backward();
            let grad = net.log_std().grad().double_value(&[0]);
            let bound = floor.is_some_and(|m| m > -3.0);
            assert_eq!(grad, if bound { 0.0 } else { 4.0 }, "{floor:?}");
        }
    }
}
