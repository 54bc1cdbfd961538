//! [`LoadedConfig`]: a config read from its file with `--set` overrides, validated, and its
//! scenario loaded and resolved against the file's folder.

use super::error::ConfigError;
use super::overrides::{apply_override, from_tree, inline_scenario_file};
use super::scenario_ref::ScenarioRef;
use super::train::TrainConfig;
use mocc_gym::{limits, Scenario};
use std::path::{Path, PathBuf};

/// Most samples in one rollout (`ppo.num_steps x envs`): the rollout buffers hold this many
/// observations.
pub const MAX_BATCH: usize = 1 << 22;

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
        let text = mocc_policy::error::read_text(path)?;
        Self::from_yaml(&text, path, overrides)
    }

    /// Parses YAML text (`path` names it and anchors relative paths).
    pub fn from_yaml(text: &str, path: &Path, overrides: &[String]) -> Result<Self, ConfigError> {
        let parse_err = |e: &dyn std::fmt::Display| ConfigError::Parse {
            path: path.to_path_buf(),
            message: super::error::plain_message(&e.to_string()),
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
