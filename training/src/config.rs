//! `TrainConfig`: everything a training run needs, from YAML (strict) with `--set` overrides.

use crate::adapt::AdaptConfig;
use crate::schedule::MoccConfig;
use mocc_agents::{Activation, Architecture, DeviceChoice, PpoConfig};
use mocc_gym::{limits, Scenario, ScenarioConfig, ScenarioError};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Errors of training configs.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// YAML that does not fit the schema (unknown field, wrong type).
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message (with line and column).
        message: String,
    },
    /// A value out of its domain; `field` is the dotted path.
    #[error("{path}: {field}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Dotted field path.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A malformed `--set` override.
    #[error("--set {0}")]
    Override(String),
    /// The scenario could not be used.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
}

/// Most samples in one rollout (`ppo.num_steps x envs`): the rollout buffers hold this many
/// observations.
pub const MAX_BATCH: usize = 1 << 22;

/// A scenario given by path (relative to the config file) or inline.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ScenarioRef {
    /// Path to a scenario YAML file.
    Path(PathBuf),
    /// The scenario itself.
    Inline(Box<ScenarioConfig>),
}

/// A string is a path, a mapping an inline scenario whose own errors (an unknown field, a
/// wrong type) come through with the field's name, which an untagged enum would replace by
/// "did not match any variant".
impl<'de> Deserialize<'de> for ScenarioRef {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct RefVisitor;
        impl<'de> serde::de::Visitor<'de> for RefVisitor {
            type Value = ScenarioRef;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a scenario file path or an inline scenario mapping")
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ScenarioRef, E> {
                Ok(ScenarioRef::Path(PathBuf::from(v)))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<ScenarioRef, A::Error> {
                let inline =
                    ScenarioConfig::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(ScenarioRef::Inline(Box::new(inline)))
            }
        }
        d.deserialize_any(RefVisitor)
    }
}

/// Network presets and their overrides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    /// Separate pi and vf MLPs [32, 16] tanh over the feature history.
    Aurora,
    /// [64, 32] tanh with a preference sub-network on the objective.
    Mocc,
}

/// The agent's networks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// Starting point of the architecture.
    #[serde(default = "default_preset")]
    pub preset: Preset,
    /// Hidden sizes of the policy MLP (preset's when absent).
    #[serde(default)]
    pub pi: Option<Vec<usize>>,
    /// Hidden sizes of the value MLP (preset's when absent).
    #[serde(default)]
    pub vf: Option<Vec<usize>>,
    /// Hidden nonlinearity (preset's when absent).
    #[serde(default)]
    pub activation: Option<Activation>,
    /// Hidden sizes of the preference sub-network (preset's when absent; `[]` is invalid).
    #[serde(default)]
    pub preference: Option<Vec<usize>>,
    /// Initial log std of the Gaussian policy.
    #[serde(default)]
    pub init_log_std: Option<f64>,
    /// Lower bound on the policy's log std (none: free).
    #[serde(default)]
    pub min_log_std: Option<f64>,
}

fn default_preset() -> Preset {
    Preset::Aurora
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            preset: Preset::Aurora,
            pi: None,
            vf: None,
            activation: None,
            preference: None,
            init_log_std: None,
            min_log_std: None,
        }
    }
}

impl AgentConfig {
    /// Checks layer sizes and log-std bounds; the error is (field, message).
    pub fn validate(&self) -> Result<(), (String, String)> {
        for (name, sizes) in [("agent.pi", &self.pi), ("agent.vf", &self.vf)] {
            if sizes.as_ref().is_some_and(|s| s.contains(&0)) {
                return Err((name.into(), "layer sizes must be >= 1".into()));
            }
        }
        for (name, value) in [
            ("agent.init_log_std", self.init_log_std),
            ("agent.min_log_std", self.min_log_std),
        ] {
            if let Some(s) = value.filter(|s| !(s.is_finite() && (-20.0..=5.0).contains(s))) {
                return Err((name.into(), format!("must lie in [-20, 5] (got {s})")));
            }
        }
        if let Some(p) = &self.preference {
            if p.is_empty() || p.contains(&0) {
                return Err((
                    "agent.preference".into(),
                    "needs at least one layer, each of size >= 1".into(),
                ));
            }
        }
        Ok(())
    }

    /// The architecture for observations of `obs_dim`.
    pub fn architecture(&self, obs_dim: usize) -> Architecture {
        let mut a = match self.preset {
            Preset::Aurora => Architecture::aurora(obs_dim),
            Preset::Mocc => Architecture::mocc(obs_dim),
        };
        if let Some(pi) = &self.pi {
            a.pi = pi.clone();
        }
        if let Some(vf) = &self.vf {
            a.vf = vf.clone();
        }
        if let Some(act) = self.activation {
            a.activation = act;
        }
        if let Some(p) = &self.preference {
            a.preference = Some(p.clone());
        }
        if let Some(s) = self.init_log_std {
            a.init_log_std = s;
        }
        a.min_log_std = self.min_log_std;
        a
    }
}

/// How much to train.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetConfig {
    /// Environment steps (MIs over all envs).
    pub env_steps: u64,
}

/// What to log.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoggingConfig {
    /// Write TensorBoard event files.
    #[serde(default = "yes")]
    pub tensorboard: bool,
    /// Write metrics.csv.
    #[serde(default = "yes")]
    pub csv: bool,
}

fn yes() -> bool {
    true
}

impl Default for LoggingConfig {
    fn default() -> Self {
        Self {
            tensorboard: true,
            csv: true,
        }
    }
}

/// Checkpoint cadence and retention.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointConfig {
    /// Save every this many updates (and always at the end).
    #[serde(default = "default_every")]
    pub every_updates: u64,
    /// Keep the newest this many checkpoints (plus the best).
    #[serde(default = "default_keep")]
    pub keep_last: usize,
}

fn default_every() -> u64 {
    10
}
fn default_keep() -> usize {
    3
}

impl Default for CheckpointConfig {
    fn default() -> Self {
        Self {
            every_updates: default_every(),
            keep_last: default_keep(),
        }
    }
}

/// A training run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainConfig {
    /// The environment: a scenario file path (relative to this file) or an inline scenario.
    pub scenario: ScenarioRef,
    /// The networks.
    #[serde(default)]
    pub agent: AgentConfig,
    /// PPO hyper-parameters.
    #[serde(default)]
    pub ppo: PpoConfig,
    /// Number of parallel envs.
    #[serde(default = "default_envs")]
    pub envs: usize,
    /// Training length.
    pub budget: BudgetConfig,
    /// Seed of everything (envs, init, sampling, minibatches).
    #[serde(default)]
    pub seed: u64,
    /// `auto`, `cpu` or `cuda`.
    #[serde(default)]
    pub device: DeviceChoice,
    /// Simulator worker threads (rayon).
    #[serde(default = "default_threads")]
    pub threads: usize,
    /// libtorch threads (1 by default: more fights the simulator for cores).
    #[serde(default = "default_torch_threads")]
    pub torch_threads: usize,
    /// Logging.
    #[serde(default)]
    pub logging: LoggingConfig,
    /// Checkpoints.
    #[serde(default)]
    pub checkpoint: CheckpointConfig,
    /// MOCC's landmark objectives and two-phase schedule (single-objective training when
    /// absent). Needs the scenario's `reward: mocc`.
    #[serde(default)]
    pub mocc: Option<MoccConfig>,
    /// Adaptation of a pretrained model to a new objective, with requirement replay
    /// (`mocc adapt` writes it). Needs the scenario's `reward: mocc`.
    #[serde(default)]
    pub adapt: Option<AdaptConfig>,
}

fn default_envs() -> usize {
    16
}
fn default_threads() -> usize {
    2
}
fn default_torch_threads() -> usize {
    1
}

/// A config together with the folder its relative paths refer to.
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    /// The config.
    pub config: TrainConfig,
    /// The file it came from.
    pub path: PathBuf,
}

impl LoadedConfig {
    /// Reads a config, applies `key.path=value` overrides, validates.
    pub fn load(path: &Path, overrides: &[String]) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_yaml(&text, path, overrides)
    }

    /// Parses YAML text (`path` names it and anchors relative paths).
    pub fn from_yaml(text: &str, path: &Path, overrides: &[String]) -> Result<Self, ConfigError> {
        let parse_err = |e: &dyn std::fmt::Display| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        let config: TrainConfig = if overrides.is_empty() {
            serde_saphyr::from_str(text).map_err(|e| parse_err(&e))?
        } else {
            let mut tree: serde_json::Value =
                serde_saphyr::from_str(text).map_err(|e| parse_err(&e))?;
            if overrides
                .iter()
                .any(|o| o.trim_start().starts_with("scenario."))
            {
                inline_scenario_file(&mut tree, path)?;
            }
            for o in overrides {
                apply_override(&mut tree, o)?;
            }
            from_tree(tree, path, overrides)?
        };
        let loaded = Self {
            config,
            path: path.to_path_buf(),
        };
        loaded.validate()?;
        Ok(loaded)
    }

    fn invalid(&self, field: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::Invalid {
            path: self.path.clone(),
            field: field.to_string(),
            message: message.into(),
        }
    }

    /// Checks every value; the error names the field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let c = &self.config;
        self.check_counts()?;
        c.ppo
            .validate()
            .map_err(|m| self.invalid_section("ppo", &m))?;
        let batch = c.ppo.num_steps.saturating_mul(c.envs);
        if batch > MAX_BATCH {
            return Err(self.invalid(
                "ppo.num_steps",
                format!(
                    "the batch num_steps x envs = {} x {} exceeds {MAX_BATCH} samples",
                    c.ppo.num_steps, c.envs
                ),
            ));
        }
        if batch < c.ppo.num_minibatches {
            return Err(self.invalid(
                "ppo.num_minibatches",
                format!("exceeds the batch size num_steps x envs = {batch}"),
            ));
        }
        c.agent.validate().map_err(|(f, m)| self.invalid(&f, m))?;
        self.check_objective_plan()
    }

    /// Counts that must be at least 1.
    fn check_counts(&self) -> Result<(), ConfigError> {
        let c = &self.config;
        for (field, value) in [
            ("envs", c.envs as u64),
            ("budget.env_steps", c.budget.env_steps),
            ("threads", c.threads as u64),
            ("torch_threads", c.torch_threads as u64),
            ("checkpoint.every_updates", c.checkpoint.every_updates),
            ("checkpoint.keep_last", c.checkpoint.keep_last as u64),
        ] {
            if value == 0 {
                return Err(self.invalid(field, "must be >= 1 (got 0)"));
            }
        }
        limits::check_envs(c.envs).map_err(|m| self.invalid("envs", m))?;
        limits::check_threads(c.threads).map_err(|m| self.invalid("threads", m))?;
        limits::check_threads(c.torch_threads).map_err(|m| self.invalid("torch_threads", m))?;
        Ok(())
    }

    /// The `mocc` or `adapt` section (never both), and a network that sees the objective.
    fn check_objective_plan(&self) -> Result<(), ConfigError> {
        let c = &self.config;
        if let Some(m) = &c.mocc {
            m.validate()
                .map_err(|msg| self.invalid_section("mocc", &msg))?;
            if !c.agent.architecture(1).takes_objective() {
                return Err(self.invalid(
                    "agent",
                    "MOCC training needs a network that sees the objective \
                     (`preset: mocc` or an `agent.preference` sub-network)",
                ));
            }
        }
        if let Some(a) = &c.adapt {
            if c.mocc.is_some() {
                return Err(self.invalid(
                    "adapt",
                    "a run either trains landmarks (`mocc`) or adapts (`adapt`), not both",
                ));
            }
            a.validate(c.envs)
                .map_err(|msg| self.invalid_section("adapt", &msg))?;
        }
        Ok(())
    }

    /// An error from a section's `field: message` text (the section when no field is named).
    fn invalid_section(&self, section: &str, text: &str) -> ConfigError {
        let (field, message) = text.split_once(": ").unwrap_or((section, text));
        self.invalid(field, message)
    }

    /// The same config with the scenario inlined (trace paths made absolute) and the config
    /// path canonical: what checkpoints store, so a run resumes or evaluates from any working
    /// directory and does not change when scenario files are edited later.
    pub fn resolved(&self) -> Result<Self, ConfigError> {
        let scenario = self.scenario()?;
        let mut inline = scenario.config().clone();
        // The scenario holds its trace path resolved against the scenario's own folder.
        if let Some(t) = &inline.link.trace {
            inline.link.trace = Some(std::fs::canonicalize(t).unwrap_or_else(|_| t.clone()));
        }
        let mut config = self.config.clone();
        config.scenario = ScenarioRef::Inline(Box::new(inline));
        Ok(Self {
            config,
            path: std::fs::canonicalize(&self.path).unwrap_or_else(|_| self.path.clone()),
        })
    }

    /// Loads the scenario (relative paths resolved against the config's folder) and checks it
    /// fits the rest of the config.
    pub fn scenario(&self) -> Result<Scenario, ConfigError> {
        let base = self.path.parent().unwrap_or(Path::new("."));
        let scenario = match &self.config.scenario {
            ScenarioRef::Path(p) => {
                let full = if p.is_relative() {
                    base.join(p)
                } else {
                    p.clone()
                };
                Scenario::load(&full)?
            }
            ScenarioRef::Inline(s) => {
                Scenario::new((**s).clone(), Some(base)).map_err(|e| e.in_file(&self.path))?
            }
        };
        if self.config.mocc.is_some() && scenario.config().reward != mocc_gym::RewardKind::Mocc {
            return Err(self.invalid(
                "mocc",
                "landmark training needs a scenario with `reward: mocc`",
            ));
        }
        if !scenario.config().has_agent() {
            return Err(self.invalid(
                "scenario.senders",
                "training needs a sender with `controller: agent`",
            ));
        }
        if self.config.adapt.is_some() && scenario.config().reward != mocc_gym::RewardKind::Mocc {
            return Err(self.invalid("adapt", "adaptation needs a scenario with `reward: mocc`"));
        }
        if scenario.config().action.mode_switch.is_some() {
            return Err(self.invalid(
                "scenario.action.mode_switch",
                "training runs one network; train each policy alone and join two exports with \
                 `mocc pair`",
            ));
        }
        Ok(scenario)
    }
}

/// A config from its tree after `--set` overrides. An error names the field by its dotted
/// path, and the override that set it when one did (else the file).
fn from_tree(
    tree: serde_json::Value,
    path: &Path,
    overrides: &[String],
) -> Result<TrainConfig, ConfigError> {
    serde_path_to_error::deserialize(tree).map_err(|e| {
        let field = e.path().to_string();
        let message = e.inner().to_string();
        let from_override = overrides.iter().find(|o| {
            let key = o.split_once('=').map_or(o.as_str(), |(k, _)| k).trim();
            field == key
                || field.starts_with(&format!("{key}."))
                || key.starts_with(&format!("{field}."))
        });
        match from_override {
            Some(o) => ConfigError::Override(format!("{o}: {field}: {message}")),
            None if field == "." => ConfigError::Parse {
                path: path.to_path_buf(),
                message,
            },
            None => ConfigError::Invalid {
                path: path.to_path_buf(),
                field,
                message,
            },
        }
    })
}

/// Replaces a `scenario:` file path in a config tree by the file's contents (its relative
/// trace path re-anchored at the config's folder), so `--set scenario.X=V` can reach into it.
fn inline_scenario_file(
    tree: &mut serde_json::Value,
    config_path: &Path,
) -> Result<(), ConfigError> {
    let Some(rel) = tree
        .get("scenario")
        .and_then(|v| v.as_str())
        .map(PathBuf::from)
    else {
        return Ok(());
    };
    let base = config_path.parent().unwrap_or(Path::new("."));
    let file = if rel.is_relative() {
        base.join(&rel)
    } else {
        rel
    };
    let text = std::fs::read_to_string(&file).map_err(|source| ConfigError::Io {
        path: file.clone(),
        source,
    })?;
    mocc_gym::scenario::require_content(&text, &file)?;
    let mut scenario: serde_json::Value =
        serde_saphyr::from_str(&text).map_err(|e| ConfigError::Parse {
            path: file.clone(),
            message: e.to_string(),
        })?;
    let scenario_dir = file.parent().unwrap_or(Path::new("."));
    if let Some(trace) = scenario.pointer_mut("/link/trace") {
        if let Some(t) = trace
            .as_str()
            .map(PathBuf::from)
            .filter(|t| t.is_relative())
        {
            let joined = scenario_dir.join(t);
            let absolute = std::fs::canonicalize(&joined).unwrap_or(joined);
            *trace = serde_json::Value::String(absolute.to_string_lossy().into_owned());
        }
    }
    tree["scenario"] = scenario;
    Ok(())
}

/// Applies `a.b.c=value` (value parsed as YAML) to a JSON tree.
pub fn apply_override(tree: &mut serde_json::Value, spec: &str) -> Result<(), ConfigError> {
    let (key, raw) = spec
        .split_once('=')
        .ok_or_else(|| ConfigError::Override(format!("{spec:?}: expected path.to.key=value")))?;
    let value: serde_json::Value = serde_saphyr::from_str(raw)
        .map_err(|e| ConfigError::Override(format!("{spec:?}: bad value: {e}")))?;
    let mut node = tree;
    let parts: Vec<&str> = key.trim().split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        if part.is_empty() {
            return Err(ConfigError::Override(format!(
                "{spec:?}: empty key segment"
            )));
        }
        let map = node.as_object_mut().ok_or_else(|| {
            ConfigError::Override(format!(
                "{spec:?}: {} is not a mapping",
                parts[..i].join(".")
            ))
        })?;
        if i + 1 == parts.len() {
            map.insert((*part).to_string(), value);
            return Ok(());
        }
        node = map
            .entry((*part).to_string())
            .or_insert_with(|| serde_json::Value::Object(Default::default()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: &str = "scenario: ../configs/aurora-env.yaml\nbudget: {env_steps: 100}\n";

    #[test]
    fn overrides_reach_into_a_scenario_file() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs");
        let c = LoadedConfig::load(
            &dir.join("mocc-shared.yaml"),
            &["scenario.reward_terms.fair_share=0.3".into()],
        )
        .unwrap();
        let s = c.scenario().unwrap();
        assert_eq!(s.config().reward_terms.fair_share, 0.3);
        // The rest of the file is kept.
        assert_eq!(s.config().senders.len(), 7);
        // A scenario with a relative trace still finds it.
        let t = LoadedConfig::from_yaml(
            "scenario: scenarios/trace.yaml\nbudget: {env_steps: 10}\n",
            &dir.join("inline.yaml"),
            &["scenario.episode_mis=20".into()],
        )
        .unwrap();
        assert_eq!(t.scenario().unwrap().config().episode_mis, 20);
    }

    #[test]
    fn overrides_apply_and_validate() {
        let c = LoadedConfig::from_yaml(
            MIN,
            Path::new("x/train.yaml"),
            &[
                "ppo.learning_rate=0.001".into(),
                "envs=4".into(),
                "agent.preset=mocc".into(),
            ],
        )
        .unwrap();
        assert_eq!(c.config.ppo.learning_rate, 0.001);
        assert_eq!(c.config.envs, 4);
        assert_eq!(c.config.agent.preset, Preset::Mocc);
        let e =
            LoadedConfig::from_yaml(MIN, Path::new("t.yaml"), &["ppo.gamma=2".into()]).unwrap_err();
        assert!(e.to_string().contains("t.yaml: ppo.gamma"), "{e}");
        let e = LoadedConfig::from_yaml(MIN, Path::new("t.yaml"), &["ppo.gama=0.9".into()])
            .unwrap_err();
        assert!(e.to_string().contains("gama"), "{e}");
        let e = LoadedConfig::from_yaml(MIN, Path::new("t.yaml"), &["nokey".into()]).unwrap_err();
        assert!(e.to_string().starts_with("--set"), "{e}");
    }

    /// The named field's error for `yaml` (no overrides), as text.
    fn error_of(yaml: &str) -> String {
        match LoadedConfig::from_yaml(yaml, Path::new("t.yaml"), &[]) {
            Ok(_) => panic!("accepted: {yaml}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn unknown_fields_and_bad_values_are_named() {
        for (yaml, field) in [
            (
                "scenario: a.yaml\nbudget: {env_steps: 1}\nenvz: 3\n",
                "envz",
            ),
            (
                "scenario: a.yaml\nbudget: {env_steps: 0}\n",
                "budget.env_steps",
            ),
            (
                "scenario: a.yaml\nbudget: {env_steps: 10}\nagent: {preference: []}\n",
                "agent.preference",
            ),
            (
                "scenario: a.yaml\nbudget: {env_steps: 10}\nagent: {min_log_std: 9}\n",
                "agent.min_log_std",
            ),
        ] {
            let e = error_of(yaml);
            assert!(e.contains(field), "{field}: {e}");
        }
        let c = LoadedConfig::from_yaml(
            "scenario: a.yaml\nbudget: {env_steps: 10}\nagent: {min_log_std: -1.5}\n",
            Path::new("t.yaml"),
            &[],
        )
        .expect("valid");
        assert_eq!(c.config.agent.architecture(30).min_log_std, Some(-1.5));
    }

    #[test]
    fn inline_scenarios_parse() {
        let c = LoadedConfig::from_yaml(
            "scenario: {link: {bandwidth_pps: 200}, reward: mocc}\nbudget: {env_steps: 10}\n",
            Path::new("t.yaml"),
            &[],
        )
        .unwrap();
        let s = c.scenario().unwrap();
        assert_eq!(s.config().reward, mocc_gym::RewardKind::Mocc);
    }

    #[test]
    fn training_refuses_a_mode_switch() {
        let c = LoadedConfig::from_yaml(
            "scenario: {action: {probe_rtt: {interval_s: 3}, mode_switch: {}}}
\
             budget: {env_steps: 10}\n",
            Path::new("t.yaml"),
            &[],
        )
        .expect("the config itself is valid");
        let e = c.scenario().err().expect("refused").to_string();
        assert!(e.contains("scenario.action.mode_switch"), "{e}");
    }
}
