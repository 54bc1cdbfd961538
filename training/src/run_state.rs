//! What a checkpoint's `state.json` holds of a run's simulators under `envs`: every env's
//! snapshot and the episode accounting, per rank on several ranks, and this rank's share of
//! it on resume.

use crate::episodes::EpisodesState;
use mocc_agents::Collective;
use mocc_gym::EnvSnapshot;
use serde::{Deserialize, Serialize};

/// Simulator state and episode accounting, as `state.json` stores them under `envs` (with
/// one process).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct EnvsState {
    pub(crate) snapshots: Vec<EnvSnapshot>,
    #[serde(flatten)]
    pub(crate) episodes: EpisodesState,
}

/// One rank's own state (its envs, and its lanes' discounted returns when rewards are
/// scaled), as `state.json` stores them in `envs.ranks`, in rank order, for a run on several
/// ranks.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RankState {
    pub(crate) envs: EnvsState,
    #[serde(default)]
    pub(crate) reward_returns: Option<Vec<f64>>,
}

/// `envs` of a run on several ranks.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RanksState {
    pub(crate) ranks: Vec<RankState>,
}

/// This rank's share of a checkpoint's `envs`; an error when the checkpoint was written by
/// another number of ranks.
pub(crate) fn own_state(
    envs: serde_json::Value,
    world: &dyn Collective,
) -> Result<RankState, String> {
    let written_by = envs
        .get("ranks")
        .and_then(|r| r.as_array())
        .map_or(1, Vec::len);
    if written_by != world.ranks() {
        return Err(format!(
            "the checkpoint was written by {written_by} rank(s); resume it with as many \
             (mpirun -np {written_by}), not {}",
            world.ranks()
        ));
    }
    if world.ranks() == 1 {
        let envs: EnvsState =
            serde_json::from_value(envs).map_err(|e| format!("env state: {e}"))?;
        return Ok(RankState {
            envs,
            reward_returns: None,
        });
    }
    let mut all: RanksState =
        serde_json::from_value(envs).map_err(|e| format!("env state: {e}"))?;
    Ok(all.ranks.swap_remove(world.rank()))
}
