//! Checkpoints that never lose work: one folder per checkpoint, written under a temporary
//! name (files fsynced), then renamed into place, so a run killed at any moment leaves every
//! completed checkpoint loadable. `model.safetensors` holds the weights and Adam's moments;
//! `state.json` the resolved config, counters, obs-normalization statistics and RNG states.

use crate::config::{ConfigError, LoadedConfig, ScenarioRef, TrainConfig};
use crate::schedule::MoccSchedule;
use mocc_agents::{
    load_weights, prepare_kernels, resolve_device, ActorCritic, RewardScaler, RunningMeanStd,
};
use mocc_gym::Scenario;
use mocc_policy::export::sha256_hex;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use tch::{nn, Device, Tensor};

/// Format version of `state.json`.
pub const CHECKPOINT_FORMAT: u32 = 1;
/// A checkpoint's weights file.
pub(crate) const WEIGHTS: &str = "model.safetensors";
/// A checkpoint's state file.
pub(crate) const STATE: &str = "state.json";

/// Errors of checkpoint I/O; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// Reading or writing failed.
    #[error(transparent)]
    Io(#[from] mocc_policy::FileError),
    /// An input file of the run changed since the checkpoint recorded its digest.
    #[error("{path}: {message}")]
    InputChanged {
        /// The input file.
        path: PathBuf,
        /// The digests then and now, and what to do.
        message: String,
    },
    /// A checkpoint that no run folder owns, or that belongs to another run than the folder it
    /// lies in.
    #[error("{path}: {message}")]
    NotInRun {
        /// The checkpoint (or run) folder.
        path: PathBuf,
        /// Why, and what to do instead.
        message: String,
    },
    /// A checkpoint part could not be written (a full disk, say).
    #[error("{path}: cannot write the checkpoint: {message}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The file exists but is not a valid checkpoint part (truncated, corrupted, wrong format).
    #[error("{path}: not a valid checkpoint: {message}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CheckpointError + '_ {
    move |source| {
        CheckpointError::Io(mocc_policy::FileError {
            path: path.to_path_buf(),
            source,
        })
    }
}

/// Training progress counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Counters {
    /// Env steps taken.
    pub env_steps: u64,
    /// PPO updates done.
    pub updates: u64,
    /// Episodes finished.
    pub episodes: u64,
}

/// Everything but the tensors.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckpointState {
    /// `CHECKPOINT_FORMAT`.
    pub format: u32,
    /// The resolved config of the run.
    pub config: TrainConfig,
    /// Where the config came from (anchors its relative paths).
    pub config_path: PathBuf,
    /// Progress.
    pub counters: Counters,
    /// Adam's step count.
    pub adam_step: u64,
    /// Observation normalization statistics.
    pub obs_norm: RunningMeanStd,
    /// Reward scaling statistics (absent when `ppo.normalize_reward` is off, and in older
    /// checkpoints).
    #[serde(default)]
    pub reward_norm: Option<RewardScaler>,
    /// Return statistics of value normalization (absent when `ppo.value_norm` is off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_norm: Option<mocc_agents::ValueNorm>,
    /// The trainer's RNG (action noise, minibatch order).
    pub rng: ChaCha8Rng,
    /// Mean episodic return of the recent episodes at save time, if any finished.
    pub recent_return: Option<f64>,
    /// Simulator state (envs' RNGs, networks, histories, episode accounting).
    pub envs: serde_json::Value,
    /// MOCC's schedule position (phase, walk position, per-landmark rewards).
    #[serde(default)]
    pub schedule: Option<MoccSchedule>,
    /// Git revision of the code that wrote this checkpoint, when known.
    #[serde(default)]
    pub git_revision: Option<String>,
    /// SHA-256 of `model.safetensors` as written, verified on every load (absent in
    /// checkpoints written before digests).
    #[serde(default)]
    pub weights_sha256: Option<String>,
    /// The files the run reads again on resume (the scenario is inlined in `config`; a trace
    /// is read by path), with their SHA-256 when the run started.
    #[serde(default)]
    pub inputs: Vec<InputDigest>,
}

/// An input file and its SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputDigest {
    /// The file, as the config names it (absolute after resolution).
    pub path: PathBuf,
    /// Lowercase hex SHA-256 of its bytes.
    pub sha256: String,
}

impl InputDigest {
    /// The digest of `path` now.
    pub fn of(path: &Path) -> Result<Self, CheckpointError> {
        let bytes = read_model_file(path)?;
        Ok(Self {
            path: path.to_path_buf(),
            sha256: sha256_hex(&bytes),
        })
    }

    /// The digests of the files `config` reads by path: its trace (a config whose scenario is
    /// still a file path also reads that file).
    pub fn of_inputs(loaded: &LoadedConfig) -> Result<Vec<Self>, CheckpointError> {
        let base = loaded.path.parent().unwrap_or(Path::new("."));
        let anchored = |p: &Path| {
            if p.is_relative() {
                base.join(p)
            } else {
                p.to_path_buf()
            }
        };
        let mut files = Vec::new();
        match &loaded.config.scenario {
            ScenarioRef::Inline(s) => files.extend(s.link.trace.as_deref().map(anchored)),
            ScenarioRef::Path(p) => files.push(anchored(p)),
        }
        files.iter().map(|f| Self::of(f)).collect()
    }

    /// `Err` naming the first file that changed or vanished since `saved` was taken.
    pub fn check_unchanged(saved: &[Self]) -> Result<(), CheckpointError> {
        for d in saved {
            let now = Self::of(&d.path)?;
            if now.sha256 != d.sha256 {
                return Err(CheckpointError::InputChanged {
                    path: d.path.clone(),
                    message: format!(
                        "this input changed since the run started (SHA-256 {} then, {} now); \
                         resuming would train on other data: restore the file or start a new run",
                        short(&d.sha256),
                        short(&now.sha256)
                    ),
                });
            }
        }
        Ok(())
    }
}

/// The first 12 hex digits of a digest, for messages.
fn short(hex: &str) -> &str {
    hex.get(..12).unwrap_or(hex)
}

impl CheckpointState {
    /// Checks every loaded statistic and tensor: the observation statistics fit the scenario's
    /// observation and are finite with variances >= 0, the reward statistics are finite, and no
    /// weight or optimizer moment is NaN or infinite. `Err` names the field.
    pub fn validate(&self, tensors: &HashMap<String, Tensor>) -> Result<(), String> {
        let dim = match &self.config.scenario {
            ScenarioRef::Inline(s) => {
                let slots = s.observed_senders().len();
                self.config
                    .agent
                    .architecture_for(s.observation.obs_len(), slots)
                    .input_dim()
            }
            ScenarioRef::Path(_) => self.obs_norm.dim(),
        };
        self.obs_norm
            .frozen()
            .validate(dim)
            .map_err(|(f, m)| format!("obs_norm.{f}: {m}"))?;
        if !(self.obs_norm.count.is_finite() && self.obs_norm.count > 0.0) {
            return Err(format!(
                "obs_norm.count: must be finite and > 0 (got {})",
                self.obs_norm.count
            ));
        }
        if self.value_norm.as_ref().is_some_and(|v| !v.is_finite()) {
            return Err("value_norm: its moments must be finite".into());
        }
        if let Some(r) = &self.reward_norm {
            r.return_stats
                .frozen()
                .validate(1)
                .map_err(|(f, m)| format!("reward_norm.return_stats.{f}: {m}"))?;
            if let Some(i) = r.returns.iter().position(|v| !v.is_finite()) {
                return Err(format!(
                    "reward_norm.returns[{i}]: must be finite (got {})",
                    r.returns[i]
                ));
            }
        }
        let mut names: Vec<&String> = tensors.keys().collect();
        names.sort();
        for name in names {
            let finite = tensors[name].isfinite().all().int64_value(&[]) != 0;
            if !finite {
                return Err(format!(
                    "{WEIGHTS}: tensor {name} holds NaN or infinite values"
                ));
            }
        }
        Ok(())
    }
}

/// The folder name of the checkpoint after `updates` updates.
pub(crate) fn checkpoint_name(updates: u64) -> String {
    format!("ckpt-{updates:08}")
}

/// Saves a checkpoint as `dir/ckpt-<updates>`; returns its path.
pub fn save(
    dir: &Path,
    state: &CheckpointState,
    tensors: &[(String, Tensor)],
) -> Result<PathBuf, CheckpointError> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let name = checkpoint_name(state.counters.updates);
    let final_path = dir.join(&name);
    remove_stale_temporaries(dir);
    let tmp = dir.join(format!("{name}.tmp-{}", std::process::id()));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(io(&tmp))?;
    }
    std::fs::create_dir_all(&tmp).map_err(io(&tmp))?;
    let weights = tmp.join(WEIGHTS);
    Tensor::write_safetensors(tensors, &weights).map_err(|e| CheckpointError::Write {
        path: weights.clone(),
        message: e.to_string(),
    })?;
    fsync_file(&weights)?;
    let mut state = state.clone();
    state.weights_sha256 = Some(sha256_hex(&std::fs::read(&weights).map_err(io(&weights))?));
    let state_path = tmp.join(STATE);
    let json = serde_json::to_vec(&state).map_err(|e| CheckpointError::Write {
        path: state_path.clone(),
        message: e.to_string(),
    })?;
    let mut f = std::fs::File::create(&state_path).map_err(io(&state_path))?;
    f.write_all(&json).map_err(io(&state_path))?;
    f.sync_all().map_err(io(&state_path))?;
    if final_path.exists() {
        std::fs::remove_dir_all(&final_path).map_err(io(&final_path))?;
    }
    std::fs::rename(&tmp, &final_path).map_err(io(&final_path))?;
    fsync_dir(dir)?;
    Ok(final_path)
}

/// Deletes half-written checkpoint folders left by killed runs (best effort).
fn remove_stale_temporaries(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_name().to_string_lossy().contains(".tmp-") {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

pub(crate) fn fsync_file(path: &Path) -> Result<(), CheckpointError> {
    std::fs::File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(io(path))
}

pub(crate) fn fsync_dir(dir: &Path) -> Result<(), CheckpointError> {
    // Directories can be fsynced on Unix; elsewhere this is best effort.
    match std::fs::File::open(dir).and_then(|f| f.sync_all()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Ok(()),
        Err(e) => Err(CheckpointError::Io(mocc_policy::FileError {
            path: dir.to_path_buf(),
            source: e,
        })),
    }
}

/// Resolves what `--resume`/`--policy` point at: a checkpoint folder, or a run folder (its
/// newest checkpoint).
pub fn resolve(path: &Path) -> Result<PathBuf, CheckpointError> {
    if !path.exists() {
        return Err(CheckpointError::Io(mocc_policy::FileError {
            path: path.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file or folder"),
        }));
    }
    if path.join(STATE).exists() {
        return Ok(path.to_path_buf());
    }
    let ckpts = path.join(CHECKPOINTS_DIR);
    if ckpts.is_dir() {
        if let Some(latest) = list(&ckpts)?.into_iter().max_by_key(|(u, _)| *u) {
            return Ok(latest.1);
        }
    }
    Err(CheckpointError::Io(mocc_policy::FileError {
        path: path.to_path_buf(),
        source: std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no checkpoint here (expected state.json, or a run folder with checkpoints/)",
        ),
    }))
}

/// A checkpoint file's bytes, within [`mocc_policy::error::MAX_MODEL_BYTES`].
pub(crate) fn read_model_file(path: &Path) -> Result<Vec<u8>, CheckpointError> {
    Ok(mocc_policy::error::read_bytes(
        path,
        mocc_policy::error::MAX_MODEL_BYTES,
    )?)
}

/// The folder of a run's checkpoints, inside its run folder.
pub const CHECKPOINTS_DIR: &str = "checkpoints";

/// Completed checkpoints in `dir` as (updates, path); temporary folders are ignored.
pub fn list(dir: &Path) -> Result<Vec<(u64, PathBuf)>, CheckpointError> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(n) = name
            .strip_prefix("ckpt-")
            .and_then(|s| s.parse::<u64>().ok())
        {
            out.push((n, entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// Loads a checkpoint folder.
pub fn load(path: &Path) -> Result<(CheckpointState, HashMap<String, Tensor>), CheckpointError> {
    let state_path = path.join(STATE);
    let bytes = read_model_file(&state_path)?;
    let state: CheckpointState =
        serde_json::from_slice(&bytes).map_err(|e| CheckpointError::Corrupt {
            path: state_path.clone(),
            message: e.to_string(),
        })?;
    if state.format != CHECKPOINT_FORMAT {
        return Err(CheckpointError::Corrupt {
            path: state_path,
            message: format!(
                "format {} (this build reads {CHECKPOINT_FORMAT})",
                state.format
            ),
        });
    }
    // Before its tensors, libtorch's first kernels in a process that resumes the run.
    prepare_kernels(state.config.ppo.numerics);
    let weights = path.join(WEIGHTS);
    let bytes = read_model_file(&weights)?;
    if let Some(expected) = &state.weights_sha256 {
        let actual = sha256_hex(&bytes);
        if &actual != expected {
            return Err(CheckpointError::Corrupt {
                path: weights,
                message: format!(
                    "SHA-256 {} does not match the {} recorded in {STATE} when it was written",
                    short(&actual),
                    short(expected)
                ),
            });
        }
    }
    let tensors: HashMap<String, Tensor> = Tensor::read_safetensors(&weights)
        .map_err(|e| CheckpointError::Corrupt {
            path: weights.clone(),
            message: e.to_string(),
        })?
        .into_iter()
        .collect();
    state
        .validate(&tensors)
        .map_err(|message| CheckpointError::Corrupt {
            path: path.to_path_buf(),
            message,
        })?;
    Ok((state, tensors))
}

/// A checkpoint loaded from disk: where it is, its state and its tensors. Every command that
/// starts from a checkpoint (resume, adapt, eval, export, experiments) opens it through here.
pub struct Checkpoint {
    /// The checkpoint folder.
    pub path: PathBuf,
    /// Config, counters, statistics, RNGs, env snapshots, schedule.
    pub state: CheckpointState,
    /// Weights and Adam's moments by name.
    pub tensors: HashMap<String, Tensor>,
}

/// A checkpoint's actor-critic, frozen on a device, with the observation statistics it acts on.
pub struct FrozenModel {
    /// Holds the variables alive.
    pub vs: nn::VarStore,
    /// The network.
    pub model: ActorCritic,
    /// Observation statistics (normalize raw observations with them before `model`).
    pub obs_norm: RunningMeanStd,
    /// Where the model lives.
    pub device: Device,
}

impl Checkpoint {
    /// Opens a checkpoint folder, or a run folder's newest checkpoint.
    pub fn open(path: &Path) -> Result<Self, CheckpointError> {
        let path = resolve(path)?;
        let (state, tensors) = load(&path)?;
        Ok(Self {
            path,
            state,
            tensors,
        })
    }

    /// The run's config, anchored where the run's config file was.
    pub fn loaded_config(&self) -> LoadedConfig {
        LoadedConfig {
            config: self.state.config.clone(),
            path: self.state.config_path.clone(),
        }
    }

    /// The scenario the run trained on.
    pub fn scenario(&self) -> Result<Scenario, ConfigError> {
        self.loaded_config().scenario()
    }

    /// The run's device, or the CPU when that device is not here.
    pub fn device(&self) -> Device {
        resolve_device(self.state.config.device).unwrap_or(Device::Cpu)
    }

    /// The run's network on `device`, weights loaded and frozen.
    pub fn frozen_model(&self, device: Device) -> Result<FrozenModel, String> {
        let mut vs = nn::VarStore::new(device);
        let scenario = self
            .scenario()
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        let arch = self.state.config.agent.architecture_of(&scenario);
        // With the kernels the run trained with; the initial weights are overwritten.
        let numerics = self.state.config.ppo.numerics;
        let model = ActorCritic::unseeded(&vs.root(), arch, numerics);
        load_weights(&vs, &self.tensors).map_err(|e| format!("{}: {e}", self.path.display()))?;
        vs.freeze();
        Ok(FrozenModel {
            vs,
            model,
            obs_norm: self.state.obs_norm.clone(),
            device,
        })
    }
}

/// The score (recent mean return) stored in a checkpoint, if readable.
pub fn load_score(path: &Path) -> Option<f64> {
    #[derive(Deserialize)]
    struct Score {
        recent_return: Option<f64>,
    }
    let bytes = read_model_file(&path.join(STATE)).ok()?;
    serde_json::from_slice::<Score>(&bytes).ok()?.recent_return
}

/// Which checkpoints to delete: all but the newest `keep_last` and the best-scoring one.
/// Pure: `(updates, score)` in any order; returns the `updates` to delete.
pub fn retention(existing: &[(u64, Option<f64>)], keep_last: usize) -> Vec<u64> {
    let mut by_age: Vec<(u64, Option<f64>)> = existing.to_vec();
    by_age.sort_by_key(|e| std::cmp::Reverse(e.0));
    let best = existing
        .iter()
        .filter_map(|&(u, s)| s.filter(|x| x.is_finite()).map(|s| (u, s)))
        .max_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
        .map(|(u, _)| u);
    by_age
        .iter()
        .skip(keep_last)
        .map(|e| e.0)
        .filter(|u| Some(*u) != best)
        .collect()
}

#[cfg(test)]
mod tests {

    fn fixture() -> (CheckpointState, HashMap<String, Tensor>) {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/checkpoints-8e046a1/mocc/checkpoints/ckpt-00000009");
        load(&dir).unwrap()
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("mocc-ckpt-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn named(tensors: &HashMap<String, Tensor>) -> Vec<(String, Tensor)> {
        tensors
            .iter()
            .map(|(k, v)| (k.clone(), v.shallow_clone()))
            .collect()
    }

    #[test]
    fn a_saved_checkpoint_records_its_digest_and_a_flipped_bit_is_refused() {
        let (state, tensors) = fixture();
        let dir = scratch("digest");
        let saved = save(&dir, &state, &named(&tensors)).unwrap();
        let (again, _) = load(&saved).unwrap();
        let digest = again.weights_sha256.clone().unwrap();
        let weights = saved.join(WEIGHTS);
        assert_eq!(digest, sha256_hex(&std::fs::read(&weights).unwrap()));
        let mut bytes = std::fs::read(&weights).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&weights, bytes).unwrap();
        let e = load(&saved).unwrap_err().to_string();
        assert!(e.contains("SHA-256") && e.contains(WEIGHTS), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_nan_weight_with_a_matching_digest_is_refused_by_name() {
        let (state, mut tensors) = fixture();
        let name = tensors.keys().min().unwrap().clone();
        let poisoned = tensors[&name].copy();
        let _ = poisoned.view([-1]).get(0).fill_(f64::NAN);
        tensors.insert(name.clone(), poisoned);
        let dir = scratch("nan");
        let saved = save(&dir, &state, &named(&tensors)).unwrap();
        let e = load(&saved).unwrap_err().to_string();
        assert!(e.contains(&format!("tensor {name} holds NaN")), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn statistics_that_cannot_be_are_named() {
        let (state, tensors) = fixture();
        assert!(state.validate(&tensors).is_ok());
        let mut s = state.clone();
        s.obs_norm.var[2] = -1.0;
        assert!(s
            .validate(&tensors)
            .unwrap_err()
            .starts_with("obs_norm.var[2]"));
        let mut s = state.clone();
        s.obs_norm.mean.pop();
        assert!(s
            .validate(&tensors)
            .unwrap_err()
            .starts_with("obs_norm.mean"));
        let mut s = state.clone();
        s.obs_norm.count = 0.0;
        assert!(s
            .validate(&tensors)
            .unwrap_err()
            .starts_with("obs_norm.count"));
    }

    use super::*;

    #[test]
    fn retention_keeps_last_and_best() {
        let e = [
            (10, Some(1.0)),
            (20, Some(5.0)),
            (30, Some(2.0)),
            (40, None),
            (50, Some(3.0)),
        ];
        let mut d = retention(&e, 2);
        d.sort();
        assert_eq!(d, vec![10, 30]);
        assert!(retention(&e, 10).is_empty());
        let mut d = retention(&[(1, None), (2, None), (3, None)], 1);
        d.sort();
        assert_eq!(d, vec![1, 2]);
    }
}
