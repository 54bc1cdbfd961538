//! Starting an adaptation run (`mocc adapt`): the pretrained run's config with its landmark
//! schedule replaced by an `adapt:` section, a trainer that starts from the pretrained weights,
//! and the pool of seen objectives on disk. The section itself and the replay rules live in
//! `crate::adapt`; the plan that applies them in `crate::plan`.

use crate::adapt::AdaptConfig;
use crate::checkpoint::{Checkpoint, CheckpointState};
use crate::config::{ConfigError, LoadedConfig, ScenarioRef, TrainConfig};
use crate::landmarks::{Landmarks, Objective};
use crate::trainer::{TrainError, Trainer};
use mocc_policy::objective::validate_field;
use std::path::{Path, PathBuf};

/// What `mocc adapt` does.
#[derive(Debug, Clone, PartialEq)]
pub struct AdaptSpec {
    /// The pretrained checkpoint (or run folder).
    pub from: PathBuf,
    /// The new objective.
    pub objective: Objective,
    /// PPO iterations (updates).
    pub iterations: u64,
    /// Replay the pool.
    pub replay: bool,
    /// Fraction of envs on the replayed objective.
    pub replay_fraction: f64,
    /// The pool; default: the checkpoint's landmarks plus every objective it adapted to.
    pub pool: Option<Vec<Objective>>,
    /// Seed (default: the checkpoint's).
    pub seed: Option<u64>,
}

pub use crate::run_folder::POOL_FILE;

/// The objectives a checkpoint has seen: its landmarks (MOCC runs), its adaptation's pool and
/// objective (adapted runs), else its scenario's objective.
pub fn seen_objectives(config: &TrainConfig) -> Result<Vec<Objective>, String> {
    if let Some(a) = &config.adapt {
        return Ok(a.pool_after());
    }
    if let Some(m) = &config.mocc {
        let l = Landmarks::from_spec(&m.landmarks)?;
        return Ok(l.points().to_vec());
    }
    match &config.scenario {
        ScenarioRef::Inline(s) => Ok(vec![s.objective]),
        ScenarioRef::Path(_) => Ok(Vec::new()),
    }
}

/// Reads a pool file: a YAML or JSON list of objectives (a `pool.json` an adaptation wrote).
pub fn read_pool(path: &Path) -> Result<Vec<Objective>, String> {
    let text = mocc_policy::error::read_text(path).map_err(|e| e.to_string())?;
    let pool: Vec<Objective> =
        serde_saphyr::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    for (i, w) in pool.iter().enumerate() {
        validate_field(&format!("{}: [{i}]", path.display()), w)?;
    }
    Ok(pool)
}

/// The training config of an adaptation: the pretrained run's config (scenario, networks,
/// PPO settings, envs) with the landmark schedule replaced by the `adapt` section and a budget
/// of `iterations` updates.
pub fn adaptation_config(
    state: &CheckpointState,
    spec: &AdaptSpec,
) -> Result<LoadedConfig, ConfigError> {
    let mut config = state.config.clone();
    let pool = match &spec.pool {
        Some(p) => p.clone(),
        None => seen_objectives(&state.config)
            .map_err(|e| ConfigError::Argument(format!("{}: {e}", spec.from.display())))?,
    };
    config.mocc = None;
    let adapt = AdaptConfig {
        objective: spec.objective,
        replay: spec.replay,
        replay_fraction: spec.replay_fraction,
        pool,
    };
    // The adaptation's values come from its arguments, not from the run's config file.
    adapt
        .validate(config.envs)
        .map_err(|e| ConfigError::Argument(argument_error(&e)))?;
    config.adapt = Some(adapt);
    if let ScenarioRef::Inline(s) = &mut config.scenario {
        s.objective = spec.objective;
    }
    config.seed = spec.seed.unwrap_or(config.seed);
    let batch = (config.ppo.num_steps * config.envs) as u64;
    config.budget.env_steps = spec.iterations.max(1) * batch;
    let loaded = LoadedConfig {
        config,
        path: state.config_path.clone(),
    };
    loaded.validate()?;
    Ok(loaded)
}

/// An `adapt.*` message in the words of `mocc adapt`'s flags (`--replay-fraction`, `--pool`).
fn argument_error(message: &str) -> String {
    let field = message.split(':').next().unwrap_or("");
    let flag = match field {
        "adapt.replay_fraction" => "--replay-fraction",
        "adapt.objective" => "--objective",
        f if f.starts_with("adapt.pool") => "--pool (or the checkpoint's seen objectives)",
        _ => "the adaptation",
    };
    format!("{flag}: {message}")
}

/// A trainer ready to adapt `spec.from` into `run_dir`, with the pool written to
/// `run_dir/pool.json`.
pub fn start_adaptation(spec: &AdaptSpec, run_dir: &Path) -> Result<Trainer, TrainError> {
    let ckpt = Checkpoint::open(&spec.from)?;
    let loaded = adaptation_config(&ckpt.state, spec)?;
    let mut trainer = Trainer::new(&loaded, run_dir)?;
    trainer.start_from(&ckpt)?;
    let pool = loaded
        .config
        .adapt
        .as_ref()
        .map(AdaptConfig::pool_after)
        .unwrap_or_default();
    let path = run_dir.join(POOL_FILE);
    let json =
        serde_json::to_string_pretty(&pool).map_err(|e| TrainError::Incompatible(e.to_string()))?;
    mocc_outputs::write_file_atomic(&path, (json + "\n").as_bytes()).map_err(|e| {
        TrainError::Io {
            path: e.path,
            source: e.source,
        }
    })?;
    Ok(trainer)
}
