//! A run's state on disk: saving a checkpoint (learner, envs, episodes, plan, counters) with
//! retention, resuming from one bit for bit, and starting a fresh run from a pretrained model.

use crate::checkpoint::{self, Checkpoint, CheckpointState, InputDigest, CHECKPOINT_FORMAT};
use crate::episodes::{Episodes, EpisodesState};
use crate::recorder::{truncate_csv_after, METRICS_CSV};
use crate::run_lock::RunLock;
use crate::trainer::{TrainError, Trainer};
use mocc_agents::LearnerState;
use mocc_gym::EnvSnapshot;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Simulator state and episode accounting, as `state.json` stores them under `envs`.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct EnvsState {
    snapshots: Vec<EnvSnapshot>,
    #[serde(flatten)]
    episodes: EpisodesState,
}

impl Trainer {
    /// Continues the run saved in `checkpoint` (a checkpoint or run folder), writing into the
    /// run folder that holds it.
    pub fn resume(checkpoint: &Path) -> Result<Self, TrainError> {
        let resolved = checkpoint::resolve(checkpoint)?;
        let run_dir = checkpoint::run_dir_of(&resolved);
        let lock = RunLock::acquire(&run_dir)?;
        let ckpt = Checkpoint::open(&resolved)?;
        let loaded = ckpt.loaded_config();
        loaded.validate()?;
        InputDigest::check_unchanged(&ckpt.state.inputs)?;
        let Checkpoint {
            path,
            state,
            tensors,
        } = ckpt;
        let dropped = truncate_csv_after(&run_dir.join(METRICS_CSV), state.counters.env_steps)
            .map_err(|source| TrainError::Io {
                path: run_dir.join(METRICS_CSV),
                source,
            })?;
        let mut t = Self::build(&loaded, &run_dir, lock, state.schedule.clone())?;
        if dropped > 0 {
            t.log.warn(format!(
                "{METRICS_CSV}: dropped {dropped} rows logged after the checkpoint at {} env \
                 steps (they are logged again as the run repeats that work)",
                state.counters.env_steps
            ));
        }
        t.inputs = state.inputs;
        let incompatible = |e: String| TrainError::Incompatible(format!("{}: {e}", path.display()));
        t.learner
            .restore(
                &tensors,
                LearnerState {
                    adam_step: state.adam_step,
                    obs_norm: state.obs_norm,
                    reward_norm: state.reward_norm,
                    rng: state.rng,
                },
            )
            .map_err(incompatible)?;
        t.counters = state.counters;
        let envs: EnvsState = serde_json::from_value(state.envs)
            .map_err(|e| incompatible(format!("env state: {e}")))?;
        t.venv.restore(envs.snapshots)?;
        t.episodes = Episodes::restore(envs.episodes);
        t.saved_updates = Some(t.counters.updates);
        t.last_checkpoint = Some(path);
        t.git_revision = state.git_revision;
        Ok(t)
    }

    /// Starts this fresh run from a pretrained checkpoint's weights and observation statistics
    /// (Adam starts afresh). The architectures must match.
    pub fn load_pretrained(&mut self, checkpoint: &Path) -> Result<(), TrainError> {
        let ckpt = Checkpoint::open(checkpoint)?;
        self.start_from(&ckpt)
    }

    /// [`Self::load_pretrained`] from a checkpoint already open.
    pub fn start_from(&mut self, ckpt: &Checkpoint) -> Result<(), TrainError> {
        if self.counters.updates > 0 {
            return Err(TrainError::Incompatible(
                "pretrained weights can only be loaded before the first update".into(),
            ));
        }
        self.learner
            .load_pretrained(
                &ckpt.tensors,
                &ckpt.state.obs_norm,
                ckpt.state.reward_norm.as_ref(),
            )
            .map_err(|e| TrainError::Incompatible(format!("{}: {e}", ckpt.path.display())))
    }

    /// Saves a checkpoint now and applies the retention policy.
    pub fn save_checkpoint(&mut self) -> Result<PathBuf, TrainError> {
        let envs = EnvsState {
            snapshots: self.venv.snapshot(),
            episodes: self.episodes.state(),
        };
        let learner = self.learner.state();
        let state = CheckpointState {
            format: CHECKPOINT_FORMAT,
            config: self.config.clone(),
            config_path: self.config_path.clone(),
            counters: self.counters,
            adam_step: learner.adam_step,
            obs_norm: learner.obs_norm,
            reward_norm: learner.reward_norm,
            rng: learner.rng,
            recent_return: self.episodes.mean_recent_return(),
            envs: serde_json::to_value(&envs)
                .map_err(|e| TrainError::Incompatible(format!("env state: {e}")))?,
            schedule: self.plan.schedule().cloned(),
            git_revision: self.git_revision.clone(),
            weights_sha256: None,
            inputs: self.inputs.clone(),
        };
        let dir = self.run_dir.join("checkpoints");
        let path = checkpoint::save(&dir, &state, &self.learner.tensors())?;
        self.last_checkpoint = Some(path.clone());
        self.saved_updates = Some(self.counters.updates);
        self.apply_retention(&dir);
        Ok(path)
    }

    fn apply_retention(&mut self, dir: &Path) {
        let Ok(existing) = checkpoint::list(dir) else {
            return;
        };
        let scored: Vec<(u64, Option<f64>)> = existing
            .iter()
            .map(|(u, p)| (*u, checkpoint::load_score(p)))
            .collect();
        for u in checkpoint::retention(&scored, self.config.checkpoint.keep_last) {
            if let Some((_, p)) = existing.iter().find(|(x, _)| *x == u) {
                if let Err(e) = std::fs::remove_dir_all(p) {
                    self.log.warn(format!(
                        "could not delete old checkpoint {}: {e}",
                        p.display()
                    ));
                }
            }
        }
    }
}
