//! A run's state on disk, from the trainer's side: saving a checkpoint (learner, envs,
//! episodes, plan, counters) with retention, resuming from one bit for bit, and starting a
//! fresh run from a pretrained model.

use super::{lock_on_rank_zero, TrainError, Trainer, World};
use crate::checkpoint::{self, Checkpoint, CheckpointState, InputDigest, CHECKPOINT_FORMAT};
use crate::episodes::Episodes;
use crate::recorder::{truncate_csv_after, METRICS_CSV};
use crate::run_state::{own_state, EnvsState, RankState, RanksState};
use mocc_agents::{Collective, LearnerState, SingleProcess};
use std::path::{Path, PathBuf};
use std::sync::Arc;

impl Trainer {
    /// Continues the run saved in `checkpoint` (a checkpoint or run folder), writing into the
    /// run folder that holds it.
    pub fn resume(checkpoint: &Path) -> Result<Self, TrainError> {
        Self::resume_on(checkpoint, Arc::new(SingleProcess))
    }

    /// [`Self::resume`] on the ranks of `world`, as many as wrote the checkpoint. The
    /// checkpoint must lie in its own run's `checkpoints/` folder
    /// ([`run_folder::run_dir_of`](crate::run_folder::run_dir_of)).
    pub fn resume_on(checkpoint: &Path, world: World) -> Result<Self, TrainError> {
        let resolved = checkpoint::resolve(checkpoint)?;
        let run_dir = crate::run_folder::run_dir_of(&resolved)?;
        let lock = lock_on_rank_zero(&run_dir, &*world)?;
        Self::resume_locked(&resolved, &run_dir, lock, world)
    }

    /// Continues the run saved in `checkpoint` in the run folder `run_dir` (new, or without
    /// checkpoints), into which the checkpoint is copied first: for a checkpoint that lies
    /// outside its run folder, or to branch a run without touching it.
    pub fn resume_into(
        checkpoint: &Path,
        run_dir: &Path,
        world: World,
    ) -> Result<Self, TrainError> {
        let resolved = checkpoint::resolve(checkpoint)?;
        let lock = lock_on_rank_zero(run_dir, &*world)?;
        let copy = if world.rank() == 0 {
            crate::run_folder::adopt(&resolved, run_dir)?
        } else {
            resolved
        };
        Self::resume_locked(&copy, run_dir, lock, world)
    }

    /// Resumes checkpoint folder `resolved` into `run_dir`, whose lock rank 0 holds.
    fn resume_locked(
        resolved: &Path,
        run_dir: &Path,
        lock: Option<super::RunLock>,
        world: World,
    ) -> Result<Self, TrainError> {
        let ckpt = Checkpoint::open(resolved)?;
        let loaded = ckpt.loaded_config();
        loaded.validate()?;
        InputDigest::check_unchanged(&ckpt.state.inputs)?;
        let Checkpoint {
            path,
            state,
            tensors,
        } = ckpt;
        let incompatible = |e: String| TrainError::Incompatible(format!("{}: {e}", path.display()));
        let own = own_state(state.envs.clone(), &*world).map_err(incompatible)?;
        let dropped = if world.rank() == 0 {
            truncate_csv_after(&run_dir.join(METRICS_CSV), state.counters.env_steps).map_err(
                |source| TrainError::Io {
                    path: run_dir.join(METRICS_CSV),
                    source,
                },
            )?
        } else {
            0
        };
        let mut t = Self::build(&loaded, run_dir, lock, state.schedule.clone(), world)?;
        if dropped > 0 {
            t.log.warn(format!(
                "{METRICS_CSV}: dropped {dropped} rows logged after the checkpoint at {} env \
                 steps (they are logged again as the run repeats that work)",
                state.counters.env_steps
            ));
        }
        t.inputs = state.inputs;
        let mut reward_norm = state.reward_norm;
        if let (Some(scaler), Some(returns)) = (&mut reward_norm, own.reward_returns) {
            scaler.returns = returns;
        }
        t.learner
            .restore(
                &tensors,
                LearnerState {
                    adam_step: state.adam_step,
                    obs_norm: state.obs_norm,
                    reward_norm,
                    value_norm: state.value_norm,
                    rng: state.rng,
                },
            )
            .map_err(incompatible)?;
        t.counters = state.counters;
        t.venv.restore(own.envs.snapshots)?;
        t.episodes = Episodes::restore(own.envs.episodes);
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

    /// Saves a checkpoint now and applies the retention policy. On several ranks every rank
    /// calls it; rank 0 gathers the others' envs and writes the checkpoint (the others return
    /// `None`).
    pub fn save_checkpoint(&mut self) -> Result<Option<PathBuf>, TrainError> {
        let envs = EnvsState {
            snapshots: self.venv.snapshot(),
            episodes: self.episodes.state(),
        };
        self.check_ranks_agree()?;
        let recent_return = self.mean_recent_return();
        let Some(envs) = self.envs_of_every_rank(envs)? else {
            // Rank 0 writes; this rank has taken its part in this update's checkpoint.
            self.saved_updates = Some(self.counters.updates);
            return Ok(None);
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
            value_norm: learner.value_norm,
            rng: learner.rng,
            recent_return,
            envs,
            schedule: self.plan.schedule().cloned(),
            git_revision: self.git_revision.clone(),
            weights_sha256: None,
            inputs: self.inputs.clone(),
        };
        let dir = self.run_dir.join(checkpoint::CHECKPOINTS_DIR);
        let path = checkpoint::save(&dir, &state, &self.learner.tensors())?;
        self.last_checkpoint = Some(path.clone());
        self.saved_updates = Some(self.counters.updates);
        self.apply_retention(&dir);
        Ok(Some(path))
    }

    /// `state.json`'s `envs` on rank 0: this process's envs alone, or every rank's (gathered
    /// from the others); `None` on the other ranks.
    fn envs_of_every_rank(&self, envs: EnvsState) -> Result<Option<serde_json::Value>, TrainError> {
        let json_error = |e: serde_json::Error| TrainError::Incompatible(format!("env state: {e}"));
        if self.world.ranks() == 1 {
            return serde_json::to_value(&envs).map(Some).map_err(json_error);
        }
        let own = RankState {
            envs,
            reward_returns: self.learner.reward_scaler().map(|s| s.returns.clone()),
        };
        let bytes = serde_json::to_vec(&own).map_err(json_error)?;
        let Some(all) = self.world.gather_bytes(&bytes) else {
            return Ok(None);
        };
        let ranks = all
            .iter()
            .map(|b| serde_json::from_slice(b))
            .collect::<Result<Vec<RankState>, _>>()
            .map_err(json_error)?;
        serde_json::to_value(RanksState { ranks })
            .map(Some)
            .map_err(json_error)
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
