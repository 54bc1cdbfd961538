//! The `agent:` section ([`AgentConfig`]): a network [`Preset`] and its overrides, checked
//! and made an [`Architecture`].

use mocc_agents::{Activation, Architecture};
use serde::{Deserialize, Serialize};

/// Network presets and their overrides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    /// Separate pi and vf MLPs [32, 16] tanh over the feature history.
    Aurora,
    /// [64, 32] tanh with a preference sub-network on the objective.
    Mocc,
}

/// What the critic reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CriticKind {
    /// What the actor reads: the flow's own observation (and objective).
    #[default]
    Local,
    /// The flow's observation and, during training only, the global state: the bottleneck's
    /// queue and load and every learned flow's state, padded to the scenario's slots with
    /// masks for absent flows (MAPPO's centralized value; `mocc_gym::env::global_state`). The
    /// actor and the export stay local.
    Central,
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
    /// What the critic reads: `local` (default) or `central`.
    #[serde(default, skip_serializing_if = "is_local")]
    pub critic: CriticKind,
}

fn is_local(c: &CriticKind) -> bool {
    *c == CriticKind::Local
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
            critic: CriticKind::Local,
        }
    }
}

/// The widest hidden layer a config may ask for (checked before libtorch allocates anything).
pub const MAX_LAYER_SIZE: usize = 8_192;
/// The most hidden layers of one network.
pub const MAX_LAYERS: usize = 32;

/// Hidden layer sizes: each in [1, MAX_LAYER_SIZE], at most MAX_LAYERS of them.
fn check_layers(sizes: &[usize]) -> Result<(), String> {
    if sizes.len() > MAX_LAYERS {
        return Err(format!("at most {MAX_LAYERS} layers (got {})", sizes.len()));
    }
    match sizes.iter().find(|&&s| s == 0 || s > MAX_LAYER_SIZE) {
        Some(s) => Err(format!(
            "layer sizes must lie in [1, {MAX_LAYER_SIZE}] (got {s})"
        )),
        None => Ok(()),
    }
}

impl AgentConfig {
    /// Checks layer sizes and log-std bounds; the error is (field, message).
    pub fn validate(&self) -> Result<(), (String, String)> {
        for (name, sizes) in [
            ("agent.pi", &self.pi),
            ("agent.vf", &self.vf),
            ("agent.preference", &self.preference),
        ] {
            if let Some(s) = sizes {
                check_layers(s).map_err(|m| (name.to_string(), m))?;
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

    /// The architecture for a scenario with observations of `obs_dim` and `slots` learned
    /// senders per env: with a centralized critic, its global state's width after them.
    pub fn architecture_for(&self, obs_dim: usize, slots: usize) -> Architecture {
        let mut a = self.architecture(obs_dim);
        if self.critic == CriticKind::Central {
            a.global_dim = mocc_gym::global_state_len(slots);
        }
        a
    }

    /// The architecture of a run on `scenario`.
    pub fn architecture_of(&self, scenario: &mocc_gym::Scenario) -> Architecture {
        let slots = scenario.config().observed_senders().len();
        self.architecture_for(scenario.obs_len(), slots)
    }
}
