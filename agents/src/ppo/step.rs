//! One optimizer step on a minibatch's gradient: a non-finite loss or gradient is refused,
//! the gradient norm clipped, Adam steps.

use super::loss::LossParts;
use crate::adam::Adam;
use crate::ppo_config::PpoConfig;

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
    /// A stop was requested during the update (a signal): the model is mid-update.
    #[error("stopped in epoch {epoch}, before the update finished")]
    Cancelled {
        /// The epoch it stopped in.
        epoch: usize,
    },
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
pub(crate) fn optimizer_step(
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
