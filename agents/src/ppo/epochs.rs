//! PPO's update: epochs of shuffled minibatches with Adam steps and an early stop at a target
//! KL, in one process (the gradient optionally computed in parts on [`Replicas`]) or on
//! several ranks ([`super::data_parallel`]); the update's statistics.

use super::batch::{minibatch_bounds, shuffle, Batch, BatchTensors};
use super::data_parallel::shared_step;
use super::loss::LossValues;
use super::replicas::{parallel_gradient, Replicas};
use super::step::{optimizer_step, step_on_gradient, UpdateError};
use crate::adam::Adam;
use crate::collective::Collective;
use crate::model::ActorCritic;
use crate::ppo_config::PpoConfig;
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use tch::Device;

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

/// Runs the PPO epochs on a batch: shuffled minibatches from `rng`, Adam steps on `opt`. With
/// `replicas` (and a batch of one loss group) each minibatch's gradient is computed in parts
/// on parallel threads ([`Replicas`]); on several ranks of `world`, see [`shared_update`].
/// Alone, `cancel` set for [`CANCEL_GRACE`] ends the update before its next minibatch with
/// [`UpdateError::Cancelled`] (the model is then mid-update: the caller discards it).
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
    cancel: Option<&AtomicBool>,
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
    let stats = run_epochs(n, cfg, (lr, ent_coef), rng, cancel, step)?;
    Ok(LossStats {
        explained_variance: explained_variance(&batch.values, &batch.returns),
        ..stats
    })
}

/// How long an update goes on after a stop request before it is abandoned: an update that
/// ends within it is kept (and checkpointed); a longer one (a huge `update_epochs`) is not,
/// so a stop takes at most this plus one minibatch.
pub const CANCEL_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

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
    cancel: Option<&AtomicBool>,
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
    let mut stop_seen = None;
    for epoch in 0..cfg.update_epochs {
        shuffle(&mut order, rng);
        stats.epochs = epoch + 1;
        for chunk in bounds.windows(2).map(|w| &order[w[0]..w[1]]) {
            if cancel.is_some_and(|c| c.load(Ordering::SeqCst)) {
                let since = *stop_seen.get_or_insert_with(std::time::Instant::now);
                if since.elapsed() >= CANCEL_GRACE {
                    return Err(UpdateError::Cancelled { epoch });
                }
            }
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
/// [`super::data_parallel::shared_step`]. A rank may hold no row of a minibatch.
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
        shared_step(model, opt, &mb, &groups, cfg, ent_coef, world, epoch)
    };
    let stats = run_epochs(total, cfg, (lr, ent_coef), rng, None, step)?;
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
