//! Copies of the model that compute parts of each minibatch's gradient on their own threads;
//! the parts' gradients, weighted by their share of the rows, are the minibatch's.

use super::batch::minibatch_bounds;
use super::loss::{ppo_loss, LossValues, Minibatch};
use crate::adam::{trainable_by_name, Adam};
use crate::model::{ActorCritic, Architecture};
use crate::numerics::Numerics;
use crate::ppo_config::PpoConfig;
use tch::{nn, Device, Tensor};

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
pub(crate) fn trainable_in_name_order(vs: &nn::VarStore) -> Vec<Tensor> {
    trainable_by_name(vs).into_iter().map(|(_, t)| t).collect()
}

/// Leaves in the model's gradients the gradient of `mb`'s loss, computed in near-equal parts:
/// the first on the model in this thread, the others on `replicas` in parallel threads. The
/// loss is the mean over rows, so the minibatch's gradient is the parts' gradients weighted by
/// their share of the rows. Advantages are normalized over the whole minibatch first, as one
/// thread would. Returns the loss terms, weighted the same way.
pub(crate) fn parallel_gradient(
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
