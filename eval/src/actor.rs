//! The policies that evaluation, multi-flow runs, time series and benchmarks drive: a trained
//! actor behind the [`Actor`] trait (an export run with mocc-policy's libtorch-free runtime
//! here; mocc-training adds training checkpoints run with libtorch), or a baseline sender that
//! sets its own rate (a classic controller or a constant rate).

use mocc_gym::{ClassicKind, ControllerConfig, Range, ScenarioConfig, SenderConfig, StartRate};
use mocc_policy::{Mode, Policy, SenderRule, UntrainedPart};
use serde::Serialize;
use std::path::Path;

/// Why a policy could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum PolicyLoadError {
    /// The checkpoint could not be read (mocc-training's loader; its message names the file).
    #[error("{0}")]
    Checkpoint(String),
    /// The path is neither a baseline name nor an export folder, and no checkpoint loader was
    /// given (evaluation without mocc-training runs exports and baselines only).
    #[error(
        "{}: not a baseline name ({}, const:RATE) and not an export, checkpoint or run folder",
        .0.display(),
        ClassicKind::names()
    )]
    NotAPolicy(std::path::PathBuf),
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

impl Actor for Policy {
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
        Policy::takes_objective(self)
    }
}

/// A policy to run, with the name result rows give it.
pub struct LoadedPolicy {
    name: String,
    driver: Driver,
    scenario: ScenarioConfig,
    rule: Option<RuleRecord>,
}

/// The rule a learned policy runs under, beside the one its weights were trained under and
/// the parts between them that someone declared (what `mocc eval` writes to rules.json).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleRecord {
    /// The rule it runs under (a paired export's: the cooperative half's).
    pub rule: SenderRule,
    /// The rule its weights learned under (None: the export does not say).
    pub trained_rule: Option<SenderRule>,
    /// The parts it runs under that training did not use, each declared: a paired export's
    /// halves' together, each part once.
    pub untrained: Vec<UntrainedPart>,
}

impl RuleRecord {
    /// An export's record: its own rule and provenance, and its competitive half's
    /// declarations of parts the cooperative half does not declare.
    pub fn of_export(policy: &Policy) -> Self {
        let p = &policy.spec().provenance;
        let mut untrained = p.untrained.clone();
        for u in policy
            .competitive()
            .into_iter()
            .flat_map(|c| &c.spec().provenance.untrained)
        {
            if !untrained.iter().any(|o| o.part == u.part) {
                untrained.push(u.clone());
            }
        }
        Self {
            rule: policy.spec().sender_rule(),
            trained_rule: p.trained_rule,
            untrained,
        }
    }

    /// A checkpoint's record: it runs under its training scenario's rule.
    pub fn of_training(scenario: &ScenarioConfig) -> Self {
        let rule = SenderRule::new(scenario.action, scenario.observation.capacity_trains);
        Self {
            rule,
            trained_rule: Some(rule),
            untrained: Vec::new(),
        }
    }

    /// `action.mode_switch (mocc pair), action.startup (recipe r.yaml)`: the untrained parts
    /// with who declared each (None when there are none).
    pub fn untrained_text(&self) -> Option<String> {
        (!self.untrained.is_empty()).then(|| {
            self.untrained
                .iter()
                .map(|u| format!("{} ({})", u.part, u.declared_by))
                .collect::<Vec<_>>()
                .join(", ")
        })
    }
}

enum Driver {
    /// A trained actor; its sender is the scenario's agent.
    Learned(Box<dyn Actor>),
    /// A sender that sets its own rate (a classic controller or a constant rate): it is the
    /// observed sender, and actions are ignored.
    Baseline(SenderConfig),
}

/// The sender of a baseline name: a classic scheme's ([`ClassicKind::names`]: `cubic`, `bbr`,
/// `bbr3`, `copa`, `allegro`, `proteus_s`, `leocc`, ...) or `const:RATE` (packets/s).
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

/// The gym setup an export was trained with: its observation, metrics, action rule and MI
/// sizing on the default link (callers replace the link and senders).
pub fn export_scenario(policy: &Policy) -> ScenarioConfig {
    let spec = policy.spec();
    ScenarioConfig {
        monitor_interval: spec.monitor_interval.sizing,
        warmup_mis: spec.monitor_interval.warmup_mis,
        observation: spec.observation.config.clone(),
        metrics: spec.observation.metrics,
        action: spec.action,
        objective: spec.default_objective,
        ..ScenarioConfig::default()
    }
}

/// Whether `path` is an export folder (holds `policy.json`) or its `policy.json`.
pub fn is_export(path: &Path) -> bool {
    path.join(mocc_policy::SPEC_FILE).is_file()
        || path
            .file_name()
            .is_some_and(|n| n == mocc_policy::SPEC_FILE)
}

impl LoadedPolicy {
    /// Loads a baseline name or an export folder (it holds `policy.json`); anything else is
    /// [`PolicyLoadError::NotAPolicy`]. mocc-training's `load_policy` adds checkpoint and run
    /// folders.
    pub fn load(path: &Path) -> Result<Self, PolicyLoadError> {
        Self::load_baseline_or_export(path)?
            .ok_or_else(|| PolicyLoadError::NotAPolicy(path.to_path_buf()))
    }

    /// A baseline name or an export folder loaded, or `None` when `path` is neither.
    pub fn load_baseline_or_export(path: &Path) -> Result<Option<Self>, PolicyLoadError> {
        let name = path.display().to_string();
        if !path.exists() {
            if let Some(sender) = baseline_sender(&path.to_string_lossy()) {
                return Ok(Some(Self {
                    name,
                    scenario: ScenarioConfig::default(),
                    driver: Driver::Baseline(sender.map_err(PolicyLoadError::Invalid)?),
                    rule: None,
                }));
            }
        }
        if !is_export(path) {
            return Ok(None);
        }
        if path.join("checkpoints").is_dir() || path.join("state.json").is_file() {
            return Err(PolicyLoadError::Invalid(format!(
                "{}: holds both an export (policy.json) and training checkpoints, so which \
                 model it names is ambiguous; export into a folder of its own",
                path.display()
            )));
        }
        Ok(Some(Self::export(name, Policy::load(path)?)))
    }

    /// An export named `name` in result rows, run under the rule it says (which
    /// [`Policy::with_rule`] may have changed).
    pub fn export(name: String, policy: Policy) -> Self {
        let scenario = export_scenario(&policy);
        let rule = RuleRecord::of_export(&policy);
        Self {
            name,
            driver: Driver::Learned(Box::new(policy)),
            scenario,
            rule: Some(rule),
        }
    }

    /// A trained actor named `name` in result rows, with the gym setup it was trained with
    /// (and runs under).
    pub fn learned(name: String, actor: Box<dyn Actor>, scenario: ScenarioConfig) -> Self {
        Self {
            name,
            driver: Driver::Learned(actor),
            rule: Some(RuleRecord::of_training(&scenario)),
            scenario,
        }
    }

    /// The rule a learned policy runs under and what its weights were trained under (None for
    /// a baseline).
    pub fn rule(&self) -> Option<&RuleRecord> {
        self.rule.as_ref()
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
