//! Training checkpoints as policies to evaluate: a checkpoint's frozen model is an
//! evaluation [`Actor`], and [`load_policy`] opens whatever a user names (a baseline, an export,
//! a checkpoint folder or a run folder's newest checkpoint) as a [`LoadedPolicy`].

use crate::checkpoint::{Checkpoint, FrozenModel};
use mocc_eval::actor::{Actor, LoadedPolicy, PolicyLoadError};
use mocc_policy::Mode;
use std::path::Path;

impl Actor for FrozenModel {
    /// One network: the modes do not matter.
    fn mean_actions(&self, _modes: &[Mode], raw_obs: &[f32], objectives: &[f32]) -> Vec<f32> {
        let mut normalized = vec![0.0f32; raw_obs.len()];
        // The actor's share of the statistics (a centralized critic's rows are wider).
        let obs_dim = self.model.architecture().obs_dim;
        self.obs_norm
            .prefix(obs_dim)
            .normalize(raw_obs, &mut normalized);
        self.model.infer_actor(&normalized, objectives, self.device)
    }

    fn takes_objective(&self) -> bool {
        self.model.architecture().takes_objective()
    }
}

/// Loads a baseline name, an export folder (it holds `policy.json`), a checkpoint folder, or
/// a run folder (its newest checkpoint).
pub fn load_policy(path: &Path) -> Result<LoadedPolicy, PolicyLoadError> {
    if let Some(policy) = LoadedPolicy::load_baseline_or_export(path)? {
        return Ok(policy);
    }
    if !path.exists() {
        return Err(PolicyLoadError::NotAPolicy(path.to_path_buf()));
    }
    let ckpt = Checkpoint::open(path).map_err(|e| PolicyLoadError::Checkpoint(e.to_string()))?;
    let scenario = ckpt.scenario().map_err(|e| {
        PolicyLoadError::Invalid(format!("training scenario of {}: {e}", ckpt.path.display()))
    })?;
    let frozen = ckpt
        .frozen_model(ckpt.device())
        .map_err(PolicyLoadError::Invalid)?;
    Ok(LoadedPolicy::learned(
        path.display().to_string(),
        Box::new(frozen),
        scenario.config().clone(),
    ))
}
