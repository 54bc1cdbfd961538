//! One minibatch step of a PPO update shared by several ranks (data-parallel PPO, as PPO1's
//! MpiAdam): each rank holds its own rows of the minibatch, and every rank ends the step with
//! the same weights, those one process holding all the rows would reach.
//!
//! The loss of the whole minibatch is a mean over its rows (per loss group, see
//! `grouped_ppo_loss`), so its gradient is the sum over the ranks of each rank's gradient of
//! its own rows' loss weighted by its share of the rows. Advantages are normalized with the
//! statistics of the whole minibatch. The sum of the gradients is the same on every rank, and
//! so are clipping and Adam's step.

use super::loss::{ppo_loss, LossValues, Minibatch};
use super::step::{step_on_gradient, UpdateError};
use crate::adam::Adam;
use crate::collective::Collective;
use crate::model::ActorCritic;
use crate::ppo_config::PpoConfig;
use tch::{Kind, Tensor};

/// Loss groups are `u8`: statistics for every possible group travel in one fixed-size vector.
const GROUP_IDS: usize = 256;

/// Each group's row count, sum and sum of squares of advantages over every rank's rows.
struct GroupStats {
    count: Vec<f64>,
    sum: Vec<f64>,
    sum_sq: Vec<f64>,
}

impl GroupStats {
    fn across(advantages: &[f32], groups: &[u8], world: &dyn Collective) -> Self {
        let mut local = vec![0.0f64; 3 * GROUP_IDS];
        for (&a, &g) in advantages.iter().zip(groups) {
            let (a, g) = (f64::from(a), usize::from(g));
            local[g] += 1.0;
            local[GROUP_IDS + g] += a;
            local[2 * GROUP_IDS + g] += a * a;
        }
        let all = world.sum_f64(&local);
        Self {
            count: all[..GROUP_IDS].to_vec(),
            sum: all[GROUP_IDS..2 * GROUP_IDS].to_vec(),
            sum_sq: all[2 * GROUP_IDS..].to_vec(),
        }
    }

    /// Groups with rows on some rank.
    fn present(&self) -> usize {
        self.count.iter().filter(|&&n| n > 0.0).count()
    }

    /// Group `g`'s mean and sample standard deviation (as `Tensor::std(true)`), when it has
    /// more than one row.
    fn mean_std(&self, g: usize) -> Option<(f64, f64)> {
        let n = self.count[g];
        if n <= 1.0 {
            return None;
        }
        let mean = self.sum[g] / n;
        let var = ((self.sum_sq[g] - n * mean * mean) / (n - 1.0)).max(0.0);
        Some((mean, var.sqrt()))
    }
}

/// Leaves in `opt`'s parameters the gradient of the whole minibatch's loss, of which this rank
/// holds `mb` (rows of loss groups `groups`; possibly none), and returns the whole minibatch's
/// loss terms and the seconds the gradient sum took; `None` when no rank holds a row. Every
/// rank calls it for every minibatch.
pub(crate) fn shared_gradient(
    model: &ActorCritic,
    opt: &mut Adam,
    mb: &Minibatch,
    groups: &[u8],
    cfg: &PpoConfig,
    ent_coef: f64,
    world: &dyn Collective,
) -> Option<(LossValues, f64)> {
    // Every rank must pass a statistics vector of the same length: a conversion failure is a
    // bug, and the panic ends every rank (the binary's panic hook aborts the job).
    let advantages = Vec::<f32>::try_from(&mb.advantages.to_device(tch::Device::Cpu))
        .expect("advantages are a float tensor");
    let stats = GroupStats::across(&advantages, groups, world);
    if stats.present() == 0 {
        return None;
    }
    let part_cfg = PpoConfig {
        norm_adv: false,
        ..*cfg
    };
    opt.zero_grad();
    let mut total: Option<Tensor> = None;
    let mut mine = LossValues::default();
    let per_group = 1.0 / stats.present() as f64;
    let mut here: Vec<u8> = groups.to_vec();
    here.sort_unstable();
    here.dedup();
    for g in here.into_iter().map(usize::from) {
        let rows: Vec<i64> = (0..groups.len() as i64)
            .filter(|&i| usize::from(groups[i as usize]) == g)
            .collect();
        let idx = Tensor::from_slice(&rows).to_device(mb.obs.device());
        let mut part = mb.select(&idx);
        if let Some((mean, std)) = stats.mean_std(g).filter(|_| cfg.norm_adv) {
            part.advantages = (&part.advantages - mean) / (std + 1e-8);
        }
        let share = rows.len() as f64 / stats.count[g];
        let parts = ppo_loss(model, &part, &part_cfg, ent_coef);
        let values = LossValues::of(&parts);
        mine = mine.add_group(share, per_group, &values);
        let weighted = parts.loss * share;
        total = Some(match total {
            Some(t) => t + weighted,
            None => weighted,
        });
    }
    match total {
        Some(loss) => loss.backward(),
        // No rows here: zero gradients, defined, so that every rank sums the same shapes.
        None => zero_loss(opt.params()).backward(),
    }
    let tic = std::time::Instant::now();
    sum_gradients(opt.params(), world);
    let summing = tic.elapsed().as_secs_f64();
    Some((
        LossValues::from_sums(&world.sum_f64(&mine.to_vec())),
        summing,
    ))
}

/// A loss of zero that depends on every parameter.
fn zero_loss(params: &[Tensor]) -> Tensor {
    params.iter().map(|p| p.sum(Kind::Float) * 0.0).fold(
        Tensor::zeros([], (Kind::Float, params[0].device())),
        |a, b| a + b,
    )
}

/// Replaces every parameter's gradient by its sum over the ranks.
fn sum_gradients(params: &[Tensor], world: &dyn Collective) {
    let _guard = tch::no_grad_guard();
    let grads: Vec<Tensor> = params.iter().map(Tensor::grad).collect();
    let flat = Tensor::cat(
        &grads.iter().map(|g| g.reshape([-1])).collect::<Vec<_>>(),
        0,
    )
    .to_device(tch::Device::Cpu);
    let mut host = Vec::<f32>::try_from(&flat).expect("gradients are float tensors");
    world.sum_f32(&mut host);
    let mut at = 0i64;
    for mut g in grads {
        let n = g.numel() as i64;
        let summed = Tensor::from_slice(&host[at as usize..(at + n) as usize])
            .view(g.size().as_slice())
            .to_device(g.device());
        g.copy_(&summed);
        at += n;
    }
}

/// The whole minibatch's step: its gradient, then clipping and Adam's step; the loss terms,
/// the gradient norm before clipping and the seconds the gradient sum took, or `None` when no
/// rank holds a row.
#[allow(clippy::too_many_arguments)]
pub(crate) fn shared_step(
    model: &ActorCritic,
    opt: &mut Adam,
    mb: &Minibatch,
    groups: &[u8],
    cfg: &PpoConfig,
    ent_coef: f64,
    world: &dyn Collective,
    epoch: usize,
) -> Result<Option<(LossValues, f64, f64)>, UpdateError> {
    let Some((values, summing)) = shared_gradient(model, opt, mb, groups, cfg, ent_coef, world)
    else {
        return Ok(None);
    };
    let norm = step_on_gradient(opt, values.loss, cfg, epoch)?;
    Ok(Some((values, norm, summing)))
}
