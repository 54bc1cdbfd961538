//! PPO's update as CleanRL's `ppo_continuous_action` does it: advantage normalization, clipped
//! surrogate, (optionally clipped) value loss, entropy bonus, grad-norm clipping, Adam,
//! minibatch epochs and early stop at a target KL; optionally one loss per objective group
//! (MOCC's requirement replay). Advantages come from `crate::gae`, the batch from
//! `crate::rollout`.

use crate::adam::{trainable_by_name, Adam};
use crate::collective::Collective;
use crate::gaussian;
use crate::model::{ActorCritic, Architecture};
use crate::numerics::{self, Numerics};
use crate::ppo_config::PpoConfig;
use rand::Rng;
use serde::{Deserialize, Serialize};
use tch::{nn, Device, Kind, Tensor};

/// One minibatch's loss terms.
#[derive(Debug)]
pub struct LossParts {
    /// Total loss to minimize.
    pub loss: Tensor,
    /// Clipped-surrogate policy loss.
    pub pg_loss: Tensor,
    /// Value loss.
    pub v_loss: Tensor,
    /// Mean entropy.
    pub entropy: Tensor,
    /// `((ratio - 1) - log ratio).mean()`.
    pub approx_kl: Tensor,
    /// Fraction of samples whose ratio was clipped.
    pub clipfrac: Tensor,
}

/// A minibatch of rollout data on the model's device.
#[derive(Debug)]
pub struct Minibatch {
    /// Normalized observations `[B, obs_dim]`.
    pub obs: Tensor,
    /// Objectives `[B, 3]` (used only by preference networks).
    pub objectives: Tensor,
    /// Actions `[B, 1]`.
    pub actions: Tensor,
    /// Log-probabilities under the rollout policy `[B]`.
    pub old_logprobs: Tensor,
    /// Advantages `[B]`.
    pub advantages: Tensor,
    /// Returns `[B]`.
    pub returns: Tensor,
    /// Values under the rollout policy `[B]`.
    pub old_values: Tensor,
}

impl Minibatch {
    /// `len` rows from `start`.
    fn rows(&self, start: i64, len: i64) -> Self {
        let cut = |t: &Tensor| t.narrow(0, start, len);
        Self {
            obs: cut(&self.obs),
            objectives: cut(&self.objectives),
            actions: cut(&self.actions),
            old_logprobs: cut(&self.old_logprobs),
            advantages: cut(&self.advantages),
            returns: cut(&self.returns),
            old_values: cut(&self.old_values),
        }
    }

    /// The same rows with advantages normalized over them (as `ppo_loss` does with
    /// `norm_adv`), when `normalize` is set and there is more than one row.
    fn with_normalized_advantages(self, normalize: bool) -> Self {
        if !(normalize && self.advantages.size()[0] > 1) {
            return self;
        }
        let a = &self.advantages;
        let advantages = (a - a.mean(Kind::Float)) / (a.std(true) + 1e-8);
        Self { advantages, ..self }
    }

    /// The rows `idx` (an int64 index tensor).
    pub fn select(&self, idx: &Tensor) -> Self {
        Self {
            obs: self.obs.index_select(0, idx),
            objectives: self.objectives.index_select(0, idx),
            actions: self.actions.index_select(0, idx),
            old_logprobs: self.old_logprobs.index_select(0, idx),
            advantages: self.advantages.index_select(0, idx),
            returns: self.returns.index_select(0, idx),
            old_values: self.old_values.index_select(0, idx),
        }
    }
}

/// PPO's loss summed over sample groups: each group (e.g. the current objective and a
/// replayed one, MOCC's requirement replay) gets its own [`ppo_loss`], advantages normalized
/// within the group, and the losses add up. `groups[i]` is row `i`'s group; one group is
/// plain [`ppo_loss`]. KL and clip fraction are averaged over the groups.
pub fn grouped_ppo_loss(
    model: &ActorCritic,
    mb: &Minibatch,
    groups: &[u8],
    cfg: &PpoConfig,
    ent_coef: f64,
) -> LossParts {
    let mut ids: Vec<u8> = groups.to_vec();
    ids.sort_unstable();
    ids.dedup();
    if ids.len() <= 1 {
        return ppo_loss(model, mb, cfg, ent_coef);
    }
    let device = mb.obs.device();
    let parts: Vec<LossParts> = ids
        .iter()
        .map(|&g| {
            let rows: Vec<i64> = (0..groups.len() as i64)
                .filter(|&i| groups[i as usize] == g)
                .collect();
            let idx = Tensor::from_slice(&rows).to_device(device);
            ppo_loss(model, &mb.select(&idx), cfg, ent_coef)
        })
        .collect();
    let sum = |f: fn(&LossParts) -> &Tensor| {
        parts
            .iter()
            .map(f)
            .fold(Tensor::zeros([], (Kind::Float, device)), |acc, t| acc + t)
    };
    let k = parts.len() as f64;
    LossParts {
        loss: sum(|p| &p.loss),
        pg_loss: sum(|p| &p.pg_loss),
        v_loss: sum(|p| &p.v_loss),
        entropy: sum(|p| &p.entropy) / k,
        approx_kl: sum(|p| &p.approx_kl) / k,
        clipfrac: sum(|p| &p.clipfrac) / k,
    }
}

/// PPO's loss for a minibatch (CleanRL's formulas).
pub fn ppo_loss(model: &ActorCritic, mb: &Minibatch, cfg: &PpoConfig, ent_coef: f64) -> LossParts {
    let w = model
        .architecture()
        .takes_objective()
        .then_some(&mb.objectives);
    let out = model.forward(&mb.obs, w);
    let numerics = model.numerics();
    let new_logprob = gaussian::log_prob(numerics, &mb.actions, &out.mean, &out.log_std);
    let entropy = gaussian::entropy(&out.log_std).mean(Kind::Float);
    let logratio = &new_logprob - &mb.old_logprobs;
    let ratio = numerics::exp(numerics, &logratio);
    let (approx_kl, clipfrac) = tch::no_grad(|| {
        let kl = ((&ratio - 1.0) - &logratio).mean(Kind::Float);
        let cf = (&ratio - 1.0)
            .abs()
            .gt(cfg.clip_coef)
            .to_kind(Kind::Float)
            .mean(Kind::Float);
        (kl, cf)
    });
    let adv = if cfg.norm_adv && mb.advantages.size()[0] > 1 {
        (&mb.advantages - mb.advantages.mean(Kind::Float)) / (mb.advantages.std(true) + 1e-8)
    } else {
        mb.advantages.shallow_clone()
    };
    let pg1 = -&adv * &ratio;
    let pg2 = -&adv * ratio.clamp(1.0 - cfg.clip_coef, 1.0 + cfg.clip_coef);
    let pg_loss = pg1.maximum(&pg2).mean(Kind::Float);
    let v_unclipped = (&out.value - &mb.returns).square();
    let v_loss = if cfg.clip_vloss {
        let v_clipped =
            &mb.old_values + (&out.value - &mb.old_values).clamp(-cfg.clip_coef, cfg.clip_coef);
        let v_clipped_loss = (v_clipped - &mb.returns).square();
        v_unclipped.maximum(&v_clipped_loss).mean(Kind::Float) * 0.5
    } else {
        v_unclipped.mean(Kind::Float) * 0.5
    };
    let loss = &pg_loss - &entropy * ent_coef + &v_loss * cfg.vf_coef;
    LossParts {
        loss,
        pg_loss,
        v_loss,
        entropy,
        approx_kl,
        clipfrac,
    }
}

/// Statistics of one PPO update (means over the minibatches run).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct LossStats {
    /// Policy loss.
    pub pg_loss: f64,
    /// Value loss.
    pub v_loss: f64,
    /// Entropy.
    pub entropy: f64,
    /// Approximate KL (of the last minibatch, as CleanRL logs it).
    pub approx_kl: f64,
    /// Clip fraction.
    pub clipfrac: f64,
    /// Explained variance of the values w.r.t. the returns.
    pub explained_variance: f64,
    /// Gradient norm before clipping (mean).
    pub grad_norm: f64,
    /// Epochs run (fewer than configured after a KL early stop).
    pub epochs: usize,
    /// Learning rate used.
    pub learning_rate: f64,
    /// Entropy coefficient used.
    pub ent_coef: f64,
    /// Seconds spent summing gradients over ranks (waiting for the others included; 0 alone).
    #[serde(default)]
    pub gradient_sum_seconds: f64,
}

/// Flattened rollout ready for the update (all `[steps * envs, ...]`, row-major, CPU).
#[derive(Debug, Clone, Default)]
pub struct Batch {
    /// Normalized observations.
    pub obs: Vec<f32>,
    /// Objectives.
    pub objectives: Vec<f32>,
    /// Actions.
    pub actions: Vec<f32>,
    /// Log-probabilities.
    pub logprobs: Vec<f32>,
    /// Advantages.
    pub advantages: Vec<f32>,
    /// Returns.
    pub returns: Vec<f32>,
    /// Values.
    pub values: Vec<f32>,
    /// Each sample's loss group (see [`grouped_ppo_loss`]); empty means one group.
    pub groups: Vec<u8>,
}

/// Errors of an update.
#[derive(Debug, thiserror::Error)]
pub enum UpdateError {
    /// A loss became NaN or infinite.
    #[error("non-finite {what} ({value}) in epoch {epoch}")]
    NonFinite {
        /// Which quantity.
        what: &'static str,
        /// Its value.
        value: f64,
        /// The epoch it appeared in.
        epoch: usize,
    },
}

/// The whole batch as tensors on the model's device.
struct BatchTensors {
    rows: Minibatch,
    groups: Vec<u8>,
}

impl BatchTensors {
    fn new(batch: &Batch, device: Device) -> Self {
        let n = batch.logprobs.len();
        let obs_dim = batch.obs.len() / n.max(1);
        let to = |v: &[f32], cols: i64| {
            let t = Tensor::from_slice(v).to_device(device);
            if cols > 0 {
                t.view([-1, cols])
            } else {
                t
            }
        };
        Self {
            rows: Minibatch {
                obs: to(&batch.obs, obs_dim as i64),
                objectives: to(&batch.objectives, 3),
                actions: to(&batch.actions, 1),
                old_logprobs: to(&batch.logprobs, 0),
                advantages: to(&batch.advantages, 0),
                returns: to(&batch.returns, 0),
                old_values: to(&batch.values, 0),
            },
            groups: batch.groups.clone(),
        }
    }

    /// The index tensor of the rows `chunk`.
    fn index(&self, chunk: &[i64]) -> Tensor {
        Tensor::from_slice(chunk).to_device(self.rows.obs.device())
    }

    /// The loss of the rows `chunk` (per group when the batch has groups).
    fn loss(
        &self,
        model: &ActorCritic,
        chunk: &[i64],
        cfg: &PpoConfig,
        ent_coef: f64,
    ) -> LossParts {
        let mb = self.rows.select(&self.index(chunk));
        if self.groups.is_empty() {
            ppo_loss(model, &mb, cfg, ent_coef)
        } else {
            let groups: Vec<u8> = chunk.iter().map(|&i| self.groups[i as usize]).collect();
            grouped_ppo_loss(model, &mb, &groups, cfg, ent_coef)
        }
    }
}

/// `value`, or the error naming `what` went non-finite in `epoch`.
fn finite(what: &'static str, value: f64, epoch: usize) -> Result<f64, UpdateError> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(UpdateError::NonFinite { what, value, epoch })
    }
}

/// One Adam step on a minibatch's loss: refuses a non-finite loss or gradient; returns the
/// gradient norm before clipping.
fn optimizer_step(
    opt: &mut Adam,
    parts: &LossParts,
    cfg: &PpoConfig,
    epoch: usize,
) -> Result<f64, UpdateError> {
    let loss = finite("loss", parts.loss.double_value(&[]), epoch)?;
    opt.zero_grad();
    parts.loss.backward();
    step_on_gradient(opt, loss, cfg, epoch)
}

/// Where `k` near-equal minibatches of `n` samples start and end: `k + 1` increasing bounds
/// `floor(i * n / k)`, so sizes differ by at most one and none is empty (at most `n`
/// minibatches). With `k` dividing `n` these are CleanRL's equal minibatches.
pub fn minibatch_bounds(n: usize, k: usize) -> Vec<usize> {
    let k = k.clamp(1, n.max(1));
    (0..=k).map(|i| i * n / k).collect()
}

/// Copies of the model that compute parts of each minibatch's gradient on their own threads
/// (`PpoConfig::update_workers` - 1 of them; the model itself takes the first part).
pub struct Replicas {
    stores: Vec<nn::VarStore>,
    models: Vec<ActorCritic>,
    /// Each replica's trainable parameters, in name order (as `Adam::params`).
    params: Vec<Vec<Tensor>>,
}

impl Replicas {
    /// `count` copies of a model of `arch` on `device` (weights are copied before each use).
    pub fn new(arch: &Architecture, numerics: Numerics, device: Device, count: usize) -> Self {
        let stores: Vec<nn::VarStore> = (0..count).map(|_| nn::VarStore::new(device)).collect();
        // Their initial weights are overwritten.
        let models = stores
            .iter()
            .map(|vs| ActorCritic::unseeded(&vs.root(), arch.clone(), numerics))
            .collect();
        let params = stores.iter().map(trainable_in_name_order).collect();
        Self {
            stores,
            models,
            params,
        }
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.models.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.models.is_empty()
    }

    /// Sets every replica's weights to `params` (the model's, in name order) and clears their
    /// gradients.
    fn copy_from(&mut self, params: &[Tensor]) {
        let _guard = tch::no_grad_guard();
        for mine in &mut self.params {
            for (dst, src) in mine.iter_mut().zip(params) {
                dst.copy_(src);
                dst.zero_grad();
            }
        }
    }

    /// The stores (for tests).
    pub fn stores(&self) -> &[nn::VarStore] {
        &self.stores
    }
}

/// A store's trainable variables in name order.
fn trainable_in_name_order(vs: &nn::VarStore) -> Vec<Tensor> {
    trainable_by_name(vs).into_iter().map(|(_, t)| t).collect()
}

/// Runs the PPO epochs on a batch: shuffled minibatches from `rng`, Adam steps on `opt`. With
/// `replicas` (and a batch of one loss group) each minibatch's gradient is computed in parts
/// on parallel threads ([`Replicas`]); on several ranks of `world`, see [`shared_update`].
#[allow(clippy::too_many_arguments)]
pub fn update<R: Rng>(
    model: &ActorCritic,
    opt: &mut Adam,
    replicas: &mut Replicas,
    batch: &Batch,
    cfg: &PpoConfig,
    ent_coef: f64,
    device: Device,
    rng: &mut R,
    world: &dyn Collective,
) -> Result<LossStats, UpdateError> {
    if world.ranks() > 1 {
        return shared_update(model, opt, batch, cfg, ent_coef, device, rng, world);
    }
    let n = batch.logprobs.len();
    let tensors = BatchTensors::new(batch, device);
    let lr = opt.lr;
    let step = |epoch: usize, chunk: &[i64]| {
        let (values, norm) = if replicas.is_empty() || !tensors.groups.is_empty() {
            let parts = tensors.loss(model, chunk, cfg, ent_coef);
            let norm = optimizer_step(opt, &parts, cfg, epoch)?;
            (LossValues::of(&parts), norm)
        } else {
            let mb = tensors.rows.select(&tensors.index(chunk));
            let values = parallel_gradient(model, opt, replicas, mb, cfg, ent_coef);
            (values, step_on_gradient(opt, values.loss, cfg, epoch)?)
        };
        Ok(Some((values, norm, 0.0)))
    };
    let stats = run_epochs(n, cfg, (lr, ent_coef), rng, step)?;
    Ok(LossStats {
        explained_variance: explained_variance(&batch.values, &batch.returns),
        ..stats
    })
}

/// One minibatch step's loss terms, gradient norm before clipping and seconds spent summing
/// gradients over ranks; `None` for a minibatch no rank holds a row of.
type StepOutcome = Option<(LossValues, f64, f64)>;

/// PPO's epochs over `rows` rows: each epoch shuffles their order with `rng` and runs `step`
/// (epoch, the minibatch's rows) on each of `num_minibatches` minibatches, stopping after the
/// epoch whose last KL passes `target_kl`; the statistics are means over the steps run, with
/// the learning rate and entropy coefficient `(lr, ent_coef)`.
fn run_epochs<R: Rng>(
    rows: usize,
    cfg: &PpoConfig,
    (lr, ent_coef): (f64, f64),
    rng: &mut R,
    mut step: impl FnMut(usize, &[i64]) -> Result<StepOutcome, UpdateError>,
) -> Result<LossStats, UpdateError> {
    let bounds = minibatch_bounds(rows, cfg.num_minibatches);
    let mut order: Vec<i64> = (0..rows as i64).collect();
    let mut stats = LossStats {
        learning_rate: lr,
        ent_coef,
        ..LossStats::default()
    };
    let mut minibatches = 0usize;
    for epoch in 0..cfg.update_epochs {
        shuffle(&mut order, rng);
        stats.epochs = epoch + 1;
        for chunk in bounds.windows(2).map(|w| &order[w[0]..w[1]]) {
            let Some((values, norm, summing)) = step(epoch, chunk)? else {
                continue;
            };
            stats.gradient_sum_seconds += summing;
            minibatches += 1;
            stats.add_minibatch(&values, norm);
        }
        if cfg.target_kl.is_some_and(|kl| stats.approx_kl > kl) {
            break;
        }
    }
    stats.average_over(minibatches);
    Ok(stats)
}

/// [`update`] on several ranks, each holding its own rows of the batch. The rows of every
/// rank, rank after rank, are the batch one process would shuffle: every rank draws that
/// shuffle from `rng` (so `rng` moves as one process's would, and stays the same on every
/// rank) and takes its own rows of each minibatch, through
/// [`crate::data_parallel::shared_step`]. A rank may hold no row of a minibatch.
#[allow(clippy::too_many_arguments)]
fn shared_update<R: Rng>(
    model: &ActorCritic,
    opt: &mut Adam,
    batch: &Batch,
    cfg: &PpoConfig,
    ent_coef: f64,
    device: Device,
    rng: &mut R,
    world: &dyn Collective,
) -> Result<LossStats, UpdateError> {
    let n = batch.logprobs.len();
    let tensors = BatchTensors::new(batch, device);
    let counts = world.all_gather_f64(&[n as f64]);
    let first = counts[..world.rank()].iter().sum::<f64>() as i64;
    let total = counts.iter().sum::<f64>() as usize;
    let own = first..first + n as i64;
    let lr = opt.lr;
    let step = |epoch: usize, whole: &[i64]| {
        let chunk: Vec<i64> = whole
            .iter()
            .filter(|i| own.contains(i))
            .map(|i| i - first)
            .collect();
        let mb = tensors.rows.select(&tensors.index(&chunk));
        let groups: Vec<u8> = if tensors.groups.is_empty() {
            vec![0; chunk.len()]
        } else {
            chunk.iter().map(|&i| tensors.groups[i as usize]).collect()
        };
        crate::data_parallel::shared_step(model, opt, &mb, &groups, cfg, ent_coef, world, epoch)
    };
    let stats = run_epochs(total, cfg, (lr, ent_coef), rng, step)?;
    Ok(LossStats {
        explained_variance: explained_variance(&batch.values, &batch.returns),
        ..stats
    })
}

impl LossStats {
    /// Adds one minibatch's terms and gradient norm (the KL is the last minibatch's).
    fn add_minibatch(&mut self, values: &LossValues, grad_norm: f64) {
        self.pg_loss += values.pg_loss;
        self.v_loss += values.v_loss;
        self.entropy += values.entropy;
        self.clipfrac += values.clipfrac;
        self.grad_norm += grad_norm;
        self.approx_kl = values.approx_kl;
    }

    /// The sums of [`LossStats::add_minibatch`] become means over `minibatches` (at least one).
    fn average_over(&mut self, minibatches: usize) {
        let m = minibatches.max(1) as f64;
        self.pg_loss /= m;
        self.v_loss /= m;
        self.entropy /= m;
        self.clipfrac /= m;
        self.grad_norm /= m;
    }
}

/// Clipping and Adam's step on the gradient already in `opt`, whose loss was `loss`: refuses a
/// non-finite loss or gradient; returns the gradient norm before clipping.
pub(crate) fn step_on_gradient(
    opt: &mut Adam,
    loss: f64,
    cfg: &PpoConfig,
    epoch: usize,
) -> Result<f64, UpdateError> {
    finite("loss", loss, epoch)?;
    let norm = finite(
        "gradient norm",
        opt.clip_grad_norm(cfg.max_grad_norm),
        epoch,
    )?;
    opt.step();
    Ok(norm)
}

/// A minibatch's loss terms as numbers.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LossValues {
    pub(crate) loss: f64,
    pg_loss: f64,
    v_loss: f64,
    entropy: f64,
    approx_kl: f64,
    clipfrac: f64,
}

impl LossValues {
    pub(crate) fn of(p: &LossParts) -> Self {
        Self {
            loss: p.loss.double_value(&[]),
            pg_loss: p.pg_loss.double_value(&[]),
            v_loss: p.v_loss.double_value(&[]),
            entropy: p.entropy.double_value(&[]),
            approx_kl: p.approx_kl.double_value(&[]),
            clipfrac: p.clipfrac.double_value(&[]),
        }
    }

    /// `self` plus a loss group's terms with `share` of its rows, the means over groups
    /// (entropy, KL, clip fraction) also weighted by `per_group` (1 / the number of groups),
    /// as [`grouped_ppo_loss`] combines them.
    pub(crate) fn add_group(self, share: f64, per_group: f64, o: &LossValues) -> Self {
        let w = share * per_group;
        Self {
            loss: self.loss + share * o.loss,
            pg_loss: self.pg_loss + share * o.pg_loss,
            v_loss: self.v_loss + share * o.v_loss,
            entropy: self.entropy + w * o.entropy,
            approx_kl: self.approx_kl + w * o.approx_kl,
            clipfrac: self.clipfrac + w * o.clipfrac,
        }
    }

    /// The terms as a vector (for a sum over ranks), in [`LossValues::from_sums`]' order.
    pub(crate) fn to_vec(self) -> Vec<f64> {
        vec![
            self.loss,
            self.pg_loss,
            self.v_loss,
            self.entropy,
            self.approx_kl,
            self.clipfrac,
        ]
    }

    /// The terms from [`LossValues::to_vec`]'s order.
    pub(crate) fn from_sums(v: &[f64]) -> Self {
        Self {
            loss: v[0],
            pg_loss: v[1],
            v_loss: v[2],
            entropy: v[3],
            approx_kl: v[4],
            clipfrac: v[5],
        }
    }

    /// `self + w * other`, term by term.
    fn add_weighted(self, w: f64, o: &LossValues) -> Self {
        Self {
            loss: self.loss + w * o.loss,
            pg_loss: self.pg_loss + w * o.pg_loss,
            v_loss: self.v_loss + w * o.v_loss,
            entropy: self.entropy + w * o.entropy,
            approx_kl: self.approx_kl + w * o.approx_kl,
            clipfrac: self.clipfrac + w * o.clipfrac,
        }
    }
}

/// Leaves in the model's gradients the gradient of `mb`'s loss, computed in near-equal parts:
/// the first on the model in this thread, the others on `replicas` in parallel threads. The
/// loss is the mean over rows, so the minibatch's gradient is the parts' gradients weighted by
/// their share of the rows. Advantages are normalized over the whole minibatch first, as one
/// thread would. Returns the loss terms, weighted the same way.
fn parallel_gradient(
    model: &ActorCritic,
    opt: &mut Adam,
    replicas: &mut Replicas,
    mb: Minibatch,
    cfg: &PpoConfig,
    ent_coef: f64,
) -> LossValues {
    let mb = mb.with_normalized_advantages(cfg.norm_adv);
    let part_cfg = PpoConfig {
        norm_adv: false,
        ..*cfg
    };
    let n = mb.obs.size()[0];
    let bounds = minibatch_bounds(n as usize, replicas.len() + 1);
    let parts: Vec<Minibatch> = bounds
        .windows(2)
        .map(|w| mb.rows(w[0] as i64, (w[1] - w[0]) as i64))
        .collect();
    let weights: Vec<f64> = bounds
        .windows(2)
        .map(|w| (w[1] - w[0]) as f64 / n as f64)
        .collect();
    opt.zero_grad();
    replicas.copy_from(opt.params());
    let mut parts = parts.into_iter();
    let own = parts.next();
    let values: Vec<LossValues> = std::thread::scope(|scope| {
        // `&mut`: a model's tensors may move to another thread but not be shared.
        let handles: Vec<_> = replicas
            .models
            .iter_mut()
            .zip(parts)
            .map(|(replica, part)| {
                let part_cfg = &part_cfg;
                scope.spawn(move || {
                    // OpenMP's thread count is per thread: a new thread would otherwise start
                    // a team of one per core and contend with the others.
                    tch::set_num_threads(1);
                    gradient_of(replica, &part, part_cfg, ent_coef)
                })
            })
            .collect();
        let mut values = vec![own.map_or_else(LossValues::default, |p| {
            gradient_of(model, &p, &part_cfg, ent_coef)
        })];
        values.extend(
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))),
        );
        values
    });
    combine_gradients(opt.params(), &replicas.params, &weights);
    values
        .iter()
        .zip(&weights)
        .fold(LossValues::default(), |acc, (v, &w)| acc.add_weighted(w, v))
}

/// Backpropagates `mb`'s loss on `model`; returns its terms.
fn gradient_of(model: &ActorCritic, mb: &Minibatch, cfg: &PpoConfig, ent_coef: f64) -> LossValues {
    let parts = ppo_loss(model, mb, cfg, ent_coef);
    parts.loss.backward();
    LossValues::of(&parts)
}

/// `main`'s gradients become `w[0] * main + sum_k w[k + 1] * replicas[k]`, parameter by
/// parameter.
fn combine_gradients(main: &[Tensor], replicas: &[Vec<Tensor>], w: &[f64]) {
    let _guard = tch::no_grad_guard();
    for (i, p) in main.iter().enumerate() {
        let mut g = p.grad();
        if !g.defined() {
            continue;
        }
        let _ = g.g_mul_scalar_(w[0]);
        for (k, replica) in replicas.iter().enumerate() {
            let other = replica[i].grad();
            if other.defined() {
                let _ = g.g_add_(&(other * w[k + 1]));
            }
        }
    }
}

/// `1 - Var(returns - values) / Var(returns)` (NaN when the returns are constant).
pub fn explained_variance(values: &[f32], returns: &[f32]) -> f64 {
    let n = returns.len() as f64;
    if n == 0.0 {
        return f64::NAN;
    }
    let var = |xs: &mut dyn Iterator<Item = f64>| {
        let v: Vec<f64> = xs.collect();
        let m = v.iter().sum::<f64>() / n;
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n
    };
    let var_y = var(&mut returns.iter().map(|&r| f64::from(r)));
    let var_diff = var(&mut returns
        .iter()
        .zip(values)
        .map(|(&r, &v)| f64::from(r) - f64::from(v)));
    if var_y == 0.0 {
        f64::NAN
    } else {
        1.0 - var_diff / var_y
    }
}

/// Fisher-Yates shuffle.
pub fn shuffle<T, R: Rng>(xs: &mut [T], rng: &mut R) {
    for i in (1..xs.len()).rev() {
        let j = rng.random_range(0..=i);
        xs.swap(i, j);
    }
}

#[cfg(test)]
mod tests {

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

    use super::*;
    use crate::model::Architecture;
    use tch::nn;

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
            let rows =
                |g: u8| -> Vec<i64> { (0..n).filter(|&i| groups[i as usize] == g).collect() };
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
}
