//! The policies that evaluation, multi-flow runs, time series and benchmarks drive: a trained
//! actor (a training checkpoint run with libtorch, or an export run with mocc-policy's
//! libtorch-free runtime, both behind the [`Actor`] trait), or a baseline sender that sets its
//! own rate (a classic controller or a constant rate).

use crate::checkpoint::{Checkpoint, CheckpointError, FrozenModel};
use crate::export;
use mocc_gym::{ClassicKind, ControllerConfig, Range, ScenarioConfig, SenderConfig, StartRate};
use mocc_policy::Mode;
use std::path::Path;

/// Why a policy could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum PolicyLoadError {
    /// The checkpoint could not be read.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// The export folder is invalid.
    #[error(transparent)]
    Export(#[from] mocc_policy::PolicyError),
    /// The policy does not fit (shapes, scenario) or the name is not a baseline.
    #[error("{0}")]
    Invalid(String),
}

/// A frozen actor: mean actions for observations and objectives, deterministically.
pub trait Actor {
    /// Mean actions for raw observations `[n, obs_dim]` and objectives `[n, 3]`, row `i` by
    /// the network of `modes[i]` (a single network decides in every mode).
    fn mean_actions(&self, modes: &[Mode], raw_obs: &[f32], objectives: &[f32]) -> Vec<f32>;

    /// Whether the actions depend on the objective (a MOCC network).
    fn takes_objective(&self) -> bool;
}

impl Actor for FrozenModel {
    /// One network: the modes do not matter.
    fn mean_actions(&self, _modes: &[Mode], raw_obs: &[f32], objectives: &[f32]) -> Vec<f32> {
        let mut normalized = vec![0.0f32; raw_obs.len()];
        self.obs_norm.normalize(raw_obs, &mut normalized);
        self.model.infer(&normalized, objectives, self.device).mean
    }

    fn takes_objective(&self) -> bool {
        self.model.architecture().takes_objective()
    }
}

impl Actor for mocc_policy::Policy {
    fn mean_actions(&self, modes: &[Mode], raw_obs: &[f32], objectives: &[f32]) -> Vec<f32> {
        let mut ws = self.workspace();
        raw_obs
            .chunks_exact(self.obs_len())
            .zip(objectives.chunks_exact(3))
            .zip(modes)
            .map(|((obs, w), &mode)| self.mean_action_in(mode, obs, &[w[0], w[1], w[2]], &mut ws))
            .collect()
    }

    fn takes_objective(&self) -> bool {
        mocc_policy::Policy::takes_objective(self)
    }
}

/// A policy to run, with the name result rows give it.
pub struct LoadedPolicy {
    name: String,
    driver: Driver,
    scenario: ScenarioConfig,
}

enum Driver {
    /// A trained actor; its sender is the scenario's agent.
    Learned(Box<dyn Actor>),
    /// A sender that sets its own rate (a classic controller or a constant rate): it is the
    /// observed sender, and actions are ignored.
    Baseline(SenderConfig),
}

/// The sender of a baseline name: `cubic`, `bbr`, `copa`, `vegas`, `vivace` or `const:RATE`
/// (packets/s).
pub fn baseline_sender(name: &str) -> Option<Result<SenderConfig, String>> {
    if let Some(kind) = ClassicKind::from_name(name) {
        return Some(Ok(SenderConfig {
            controller: ControllerConfig::from_classic(kind),
            ..SenderConfig::default()
        }));
    }
    let rate = name.strip_prefix("const:")?;
    let checked = rate
        .parse::<f64>()
        .map_err(|_| format!("not a number: {rate:?}"))
        .and_then(|r| mocc_gym::limits::check_rate(r).map(|()| r));
    Some(match checked {
        Ok(r) => Ok(SenderConfig {
            controller: ControllerConfig::Constant,
            start_rate: StartRate::Pps(Range::Fixed(r)),
            ..SenderConfig::default()
        }),
        Err(m) => Err(format!("{name}: const:RATE {m}")),
    })
}

impl LoadedPolicy {
    /// Loads a baseline name, an export folder (it holds `policy.json`), a checkpoint folder, or
    /// a run folder (its newest checkpoint).
    pub fn load(path: &Path) -> Result<Self, PolicyLoadError> {
        let name = path.display().to_string();
        if !path.exists() {
            if let Some(sender) = baseline_sender(&path.to_string_lossy()) {
                return Ok(Self {
                    name,
                    scenario: ScenarioConfig::default(),
                    driver: Driver::Baseline(sender.map_err(PolicyLoadError::Invalid)?),
                });
            }
        }
        if export::is_export(path) {
            let policy = mocc_policy::Policy::load(path)?;
            return Ok(Self {
                name,
                scenario: export::export_scenario(&policy),
                driver: Driver::Learned(Box::new(policy)),
            });
        }
        let ckpt = Checkpoint::open(path)?;
        let scenario = ckpt.scenario().map_err(|e| {
            PolicyLoadError::Invalid(format!("training scenario of {}: {e}", ckpt.path.display()))
        })?;
        let frozen = ckpt
            .frozen_model(scenario.obs_len(), ckpt.device())
            .map_err(PolicyLoadError::Invalid)?;
        Ok(Self {
            name,
            driver: Driver::Learned(Box::new(frozen)),
            scenario: scenario.config().clone(),
        })
    }

    /// The name used in result rows.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The gym setup the policy was trained with (observation, metrics, action rule, MI sizing).
    pub fn scenario(&self) -> &ScenarioConfig {
        &self.scenario
    }

    /// Whether the policy's actions depend on the objective (a MOCC network).
    pub fn takes_objective(&self) -> bool {
        match &self.driver {
            Driver::Learned(a) => a.takes_objective(),
            Driver::Baseline(_) => false,
        }
    }

    /// The observed sender of a baseline (none for learned policies, whose sender is the agent).
    pub fn baseline(&self) -> Option<&SenderConfig> {
        match &self.driver {
            Driver::Baseline(s) => Some(s),
            Driver::Learned(_) => None,
        }
    }

    /// Mean actions for raw observations `[n, obs_dim]` and objectives `[n, 3]`, row `i` by the
    /// network of `modes[i]` (the deciding sender's [`mocc_gym::Env::slot_mode`]; only a paired
    /// export has two); zeros for a baseline, which ignores them.
    pub fn act(&self, modes: &[Mode], raw_obs: &[f32], objectives: &[f32]) -> Vec<f32> {
        let n = objectives.len() / 3;
        assert_eq!(modes.len(), n, "one mode per row");
        match &self.driver {
            Driver::Learned(a) => a.mean_actions(modes, raw_obs, objectives),
            Driver::Baseline(_) => vec![0.0; n],
        }
    }
}
