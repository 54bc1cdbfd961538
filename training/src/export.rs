//! `mocc export`: turns a training checkpoint into a deployable export folder
//! (`policy.json` + `policy.safetensors`, optionally a TorchScript `policy.pt`), and rebuilds
//! the gym setup an export was trained with so `mocc eval` / `mocc simulate` can run it.

use crate::checkpoint::{Checkpoint, CheckpointError};
use mocc_agents::{to_vec, ActorCritic, Architecture, RunningMeanStd};
use mocc_gym::ScenarioConfig;
use mocc_outputs::{StagedDir, EXPORT_FOLDER};
use mocc_policy::{
    MonitorIntervalSpec, NamedTensors, ObservationSpec, PolicyError, PolicySpec, Provenance,
    SenderRule, WeightsSpec, POLICY_FORMAT_VERSION,
};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use tch::{Kind, Tensor};

pub use mocc_policy::TORCHSCRIPT_FILE;

/// Errors of exporting.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The checkpoint could not be read.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// The export could not be written or does not validate.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The checkpoint's contents do not fit its config.
    #[error("{path}: {message}")]
    Mismatch {
        /// The checkpoint.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// What an export records besides the model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ExportOptions {
    /// Also write a TorchScript module taking (raw obs `[B, obs_dim]`, objective `[B, 3]`) and
    /// returning the mean action `[B, 1]`, normalization included.
    pub torchscript: bool,
    /// The exporting tool and its revision, e.g. `mocc 0.1.0 (rev abc)`.
    pub exported_by: String,
}

/// The description of a trained actor (weights checksum left empty for [`Policy::write`]),
/// its provenance recording the training scenario's rule as the one the weights learned under.
pub fn policy_spec(
    arch: &Architecture,
    log_std: f64,
    obs_norm: &RunningMeanStd,
    scenario: &ScenarioConfig,
    provenance: Provenance,
) -> PolicySpec {
    let provenance = Provenance {
        trained_rule: Some(SenderRule::new(
            scenario.action,
            scenario.observation.capacity_trains,
        )),
        untrained: Vec::new(),
        ..provenance
    };
    PolicySpec {
        format_version: POLICY_FORMAT_VERSION,
        architecture: arch.actor_spec(log_std),
        observation: ObservationSpec {
            config: scenario.observation.clone(),
            metrics: scenario.metrics,
            normalization: obs_norm.frozen(),
        },
        action: scenario.action,
        monitor_interval: MonitorIntervalSpec {
            sizing: scenario.monitor_interval,
            warmup_mis: scenario.warmup_mis,
        },
        default_objective: scenario.objective,
        provenance,
        weights: WeightsSpec {
            file: String::new(),
            sha256: String::new(),
        },
    }
}

/// The actor's tensors (f32, PyTorch layout) named as the architecture describes them.
pub fn actor_tensors(
    arch: &Architecture,
    vars: &HashMap<String, Tensor>,
) -> Result<NamedTensors, String> {
    let mut out = NamedTensors::new();
    for layer in arch.actor_spec(0.0).layers() {
        for part in ["weight", "bias"] {
            let name = format!("{}.{part}", layer.name);
            let t = vars
                .get(&name)
                .ok_or_else(|| format!("lacks weight {name}"))?;
            let shape: Vec<usize> = t.size().iter().map(|&d| d as usize).collect();
            out.insert(name, (shape, to_vec(t)));
        }
    }
    Ok(out)
}

/// Exports a checkpoint folder (or a run folder's newest checkpoint) to `out`: a new or empty
/// folder, or a previous export, which the new one replaces as a whole. The export is written
/// beside `out` and moved into place complete, so a failure or a kill leaves `out` as it was.
pub fn export_checkpoint(
    checkpoint_path: &Path,
    out: &Path,
    options: &ExportOptions,
) -> Result<PolicySpec, ExportError> {
    let ckpt = Checkpoint::open(checkpoint_path)?;
    let (state, tensors) = (&ckpt.state, &ckpt.tensors);
    let mismatch = |message: String| ExportError::Mismatch {
        path: ckpt.path.clone(),
        message,
    };
    let scenario = ckpt
        .scenario()
        .map_err(|e| mismatch(format!("training scenario: {e}")))?;
    let arch = state.config.agent.architecture_of(&scenario);
    let log_std = tensors
        .get("log_std")
        .map(|t| t.double_value(&[0]))
        .map(|v| arch.acting_log_std(v))
        .ok_or_else(|| mismatch("lacks weight log_std".into()))?;
    let weights = actor_tensors(&arch, tensors).map_err(mismatch)?;
    let provenance = Provenance {
        config_name: state
            .config_path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        config_path: portable(&state.config_path),
        git_revision: state.git_revision.clone(),
        checkpoint: portable(&ckpt.path),
        env_steps: state.counters.env_steps,
        exported_by: options.exported_by.clone(),
        ..Provenance::default()
    };
    // The actor's share of the statistics (a centralized critic's rows carry the global
    // state after the observation).
    let obs_norm = state.obs_norm.prefix(arch.obs_dim);
    let spec = policy_spec(&arch, log_std, &obs_norm, scenario.config(), provenance);
    let staged = StagedDir::replacing(out, EXPORT_FOLDER).map_err(PolicyError::from)?;
    let spec = mocc_outputs::write_export(staged.path(), spec, &weights)?;
    if options.torchscript {
        let frozen = ckpt.frozen_model(tch::Device::Cpu).map_err(mismatch)?;
        let path = staged.path().join(TORCHSCRIPT_FILE);
        ensure_room_for_torchscript(&path, &weights)?;
        write_torchscript(&frozen.model, &obs_norm, &path).map_err(mismatch)?;
    }
    staged.commit().map_err(PolicyError::from)?;
    Ok(spec)
}

/// Refuses to trace a TorchScript module where it would not fit: libtorch aborts the process
/// on a failed write instead of reporting it. The module holds the actor's weights and its
/// code; twice the weights and 16 MiB is a generous bound.
fn ensure_room_for_torchscript(path: &Path, weights: &NamedTensors) -> Result<(), ExportError> {
    let weight_bytes: u64 = weights.values().map(|(_, v)| 4 * v.len() as u64).sum();
    let needed = 2 * weight_bytes + 16 * 1024 * 1024;
    let dir = path.parent().unwrap_or(Path::new("."));
    match mocc_outputs::staged_dir::free_bytes(dir) {
        Some(free) if free < needed => Err(ExportError::Policy(PolicyError::Io(
            mocc_policy::FileError {
                path: path.to_path_buf(),
                source: std::io::Error::new(
                    std::io::ErrorKind::StorageFull,
                    format!(
                        "{free} bytes free, the TorchScript module needs up to {needed}; the \
                         export was not written"
                    ),
                ),
            },
        ))),
        _ => Ok(()),
    }
}

/// Traces the actor with its frozen normalization into a TorchScript module at `path`:
/// `forward(obs [B, obs_dim] raw, w [B, 3]) -> mean action [B, 1]` (`w` is ignored by
/// single-objective policies). The model must live on the CPU.
pub fn write_torchscript(
    model: &ActorCritic,
    obs_norm: &RunningMeanStd,
    path: &Path,
) -> Result<(), String> {
    let frozen = obs_norm.frozen();
    let mean = Tensor::from_slice(&frozen.mean).to_kind(Kind::Float);
    let std: Vec<f64> = frozen
        .var
        .iter()
        .map(|v| (v + frozen.epsilon).sqrt())
        .collect();
    let std = Tensor::from_slice(&std).to_kind(Kind::Float);
    let clip = f64::from(frozen.clip);
    let arch = model.architecture();
    let takes_objective = arch.takes_objective();
    let obs = Tensor::zeros([1, arch.obs_dim as i64], (Kind::Float, tch::Device::Cpu));
    let w = Tensor::full([1, 3], 1.0 / 3.0, (Kind::Float, tch::Device::Cpu));
    let module = tch::no_grad(|| {
        tch::CModule::create_by_tracing("MoccPolicy", "forward", &[obs, w], &mut |inputs| {
            let z = ((&inputs[0] - &mean) / &std).clamp(-clip, clip);
            vec![model.actor_mean(&z, takes_objective.then_some(&inputs[1]))]
        })
    })
    .map_err(|e| format!("tracing the TorchScript module: {e}"))?;
    module
        .save(path)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// `path` relative to the working directory when it lies below it (so exports made inside a
/// checkout name `configs/...` and `runs/...`), else as given.
fn portable(path: &Path) -> String {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| {
            let abs = std::fs::canonicalize(path).ok()?;
            let cwd = std::fs::canonicalize(cwd).ok()?;
            abs.strip_prefix(cwd).ok().map(Path::to_path_buf)
        })
        .unwrap_or_else(|| path.to_path_buf())
        .display()
        .to_string()
}
