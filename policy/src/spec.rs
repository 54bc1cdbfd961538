//! What `policy.json` says: the actor's layers, the observation (the training scenario's
//! [`ObservationConfig`], metric version, normalization), the rate rule, the MI clock's settings
//! (the scenario's [`MonitorIntervalConfig`] and warm-up), the default objective, provenance and
//! the weights' checksum; parsing it strictly and checking every value, with errors that name
//! the field.

use crate::actor::{Activation, OBJECTIVE_DIM};
use crate::error::PolicyError;
use crate::history::ObservationConfig;
use crate::mi::MetricsVersion;
use crate::mi::MonitorIntervalConfig;
use crate::normalize::Normalization;
pub use crate::provenance::Provenance;
use crate::provenance::SenderRule;
use crate::rate::ActionRule;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Version of `policy.json` this crate reads and writes.
pub const POLICY_FORMAT_VERSION: u32 = 1;

/// One dense layer of the architecture; its tensors are `{name}.weight` (`[outputs, inputs]`)
/// and `{name}.bias` (`[outputs]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LayerSpec {
    /// Tensor name prefix.
    pub name: String,
    /// Input width.
    pub inputs: usize,
    /// Output width.
    pub outputs: usize,
    /// Nonlinearity applied to the output.
    pub activation: Activation,
}

/// The actor network: `head(body(concat(normalized obs, preference(objective))))`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchitectureSpec {
    /// Observation width (`history_len x features`).
    pub obs_dim: usize,
    /// Objective width fed to the preference sub-network (3), or 0 without one.
    pub objective_dim: usize,
    /// Preference sub-network layers (empty for single-objective policies).
    pub preference: Vec<LayerSpec>,
    /// Hidden layers of the policy body.
    pub body: Vec<LayerSpec>,
    /// The action-mean head (one output).
    pub head: LayerSpec,
    /// Log standard deviation of the training-time Gaussian (informational; deployment acts
    /// with the mean).
    pub log_std: f64,
}

/// How observations are built: the training scenario's [`ObservationConfig`] (flattened into
/// this section of `policy.json`), the metric version and the frozen normalization.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObservationSpec {
    /// Features, history length and latency baseline, as the scenario had them.
    #[serde(flatten)]
    pub config: ObservationConfig,
    /// Metric definitions (`aurora` or `delivered`).
    pub metrics: MetricsVersion,
    /// Frozen normalization statistics.
    pub normalization: Normalization,
}

/// The monitor-interval clock the policy was trained with: the scenario's
/// [`MonitorIntervalConfig`] (flattened into this section of `policy.json`) and its warm-up.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MonitorIntervalSpec {
    /// MI sizing.
    #[serde(flatten)]
    pub sizing: MonitorIntervalConfig,
    /// MIs at the start rate before the first decision; they are not part of the history.
    pub warmup_mis: u32,
}

impl<'de> Deserialize<'de> for ObservationSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut section = Section::read(d, &["features", "history_len", "latency_baseline"])?;
        Ok(Self {
            metrics: section.take("metrics")?,
            normalization: section.take("normalization")?,
            config: section.rest()?,
        })
    }
}

impl<'de> Deserialize<'de> for MonitorIntervalSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut section = Section::read(d, &["initial_delay_factor", "rtt_factor"])?;
        Ok(Self {
            warmup_mis: section.take("warmup_mis")?,
            sizing: section.rest()?,
        })
    }
}

/// A `policy.json` section that holds a shared type's fields beside its own: the section's own
/// fields are taken out by name, the rest must form the shared type (which refuses unknown
/// fields). Fields the shared type would default are required here, since an export states
/// everything it was trained with.
struct Section<E> {
    fields: serde_json::Map<String, serde_json::Value>,
    error: std::marker::PhantomData<E>,
}

impl<E: serde::de::Error> Section<E> {
    fn read<'de, D: serde::Deserializer<'de, Error = E>>(
        d: D,
        required: &[&'static str],
    ) -> Result<Self, E> {
        let fields = serde_json::Map::deserialize(d)?;
        if let Some(missing) = required.iter().find(|k| !fields.contains_key(**k)) {
            return Err(E::missing_field(missing));
        }
        Ok(Self {
            fields,
            error: std::marker::PhantomData,
        })
    }

    fn take<T: serde::de::DeserializeOwned>(&mut self, key: &'static str) -> Result<T, E> {
        let value = self
            .fields
            .remove(key)
            .ok_or_else(|| E::missing_field(key))?;
        T::deserialize(value).map_err(|e| E::custom(format!("{key}: {e}")))
    }

    fn rest<T: serde::de::DeserializeOwned>(self) -> Result<T, E> {
        T::deserialize(serde_json::Value::Object(self.fields)).map_err(E::custom)
    }
}

/// The weights file and its checksum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WeightsSpec {
    /// File name inside the export folder.
    pub file: String,
    /// Lowercase hex SHA-256 of the file.
    pub sha256: String,
}

/// Everything in `policy.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    /// [`POLICY_FORMAT_VERSION`].
    pub format_version: u32,
    /// The actor network.
    pub architecture: ArchitectureSpec,
    /// How observations are built.
    pub observation: ObservationSpec,
    /// The rate-update rule and limits.
    pub action: ActionRule,
    /// MI sizing.
    pub monitor_interval: MonitorIntervalSpec,
    /// Objective used when the application gives none (throughput, latency, loss).
    pub default_objective: [f64; OBJECTIVE_DIM],
    /// Provenance.
    pub provenance: Provenance,
    /// The weights file.
    pub weights: WeightsSpec,
}

impl PolicySpec {
    /// The rule the export runs under: its `action` and capacity trains.
    pub fn sender_rule(&self) -> SenderRule {
        SenderRule::new(self.action, self.observation.config.capacity_trains)
    }
}

impl ArchitectureSpec {
    /// Every layer with its tensor shapes, in file order.
    pub fn layers(&self) -> impl Iterator<Item = &LayerSpec> {
        self.preference
            .iter()
            .chain(&self.body)
            .chain(std::iter::once(&self.head))
    }

    /// Whether the objective is an input.
    pub fn takes_objective(&self) -> bool {
        !self.preference.is_empty()
    }

    /// Checks that widths chain; the message names the field.
    fn validate(&self) -> Result<(), (String, String)> {
        let bad = |field: String, message: String| Err((field, message));
        if !(1..=MAX_LAYER_WIDTH).contains(&self.obs_dim) {
            return bad(
                "architecture.obs_dim".into(),
                format!("must lie in [1, {MAX_LAYER_WIDTH}] (got {})", self.obs_dim),
            );
        }
        let mut pref_out = 0;
        if self.preference.is_empty() {
            if self.objective_dim != 0 {
                return bad(
                    "architecture.objective_dim".into(),
                    format!(
                        "is {} but there is no preference sub-network (expected 0)",
                        self.objective_dim
                    ),
                );
            }
        } else {
            if self.objective_dim != OBJECTIVE_DIM {
                return bad(
                    "architecture.objective_dim".into(),
                    format!(
                        "must be {OBJECTIVE_DIM} with a preference sub-network (got {})",
                        self.objective_dim
                    ),
                );
            }
            pref_out = chain("architecture.preference", &self.preference, OBJECTIVE_DIM)?;
        }
        let body_out = chain("architecture.body", &self.body, self.obs_dim + pref_out)?;
        if self.head.inputs != body_out {
            return bad(
                "architecture.head.inputs".into(),
                format!(
                    "is {}, the body ends with {body_out} units",
                    self.head.inputs
                ),
            );
        }
        if self.head.outputs != 1 {
            return bad(
                "architecture.head.outputs".into(),
                format!("must be 1 (one action), got {}", self.head.outputs),
            );
        }
        if !self.log_std.is_finite() {
            return bad(
                "architecture.log_std".into(),
                format!("must be finite (got {})", self.log_std),
            );
        }
        let mut names = std::collections::HashSet::new();
        for l in self.layers() {
            if !names.insert(l.name.as_str()) {
                return bad(
                    "architecture".into(),
                    format!("layer name {:?} is used twice", l.name),
                );
            }
        }
        Ok(())
    }
}

/// Checks that `layers` chain from `input` units; returns the last width.
/// Widest input or layer a policy may declare (a bound on what loading allocates).
pub const MAX_LAYER_WIDTH: usize = 1 << 16;

fn chain(field: &str, layers: &[LayerSpec], input: usize) -> Result<usize, (String, String)> {
    let mut width = input;
    for (i, l) in layers.iter().enumerate() {
        if l.inputs != width {
            return Err((
                format!("{field}[{i}].inputs"),
                format!("is {}, the previous stage gives {width} units", l.inputs),
            ));
        }
        if !(1..=MAX_LAYER_WIDTH).contains(&l.outputs) {
            return Err((
                format!("{field}[{i}].outputs"),
                format!("must lie in [1, {MAX_LAYER_WIDTH}] (got {})", l.outputs),
            ));
        }
        width = l.outputs;
    }
    Ok(width)
}

/// Parses `policy.json`, checking the version before the fields so that another version's
/// file gets a version error rather than a field error.
pub(crate) fn parse_spec(path: &Path, text: &str) -> Result<PolicySpec, PolicyError> {
    let json = |message: String| PolicyError::Json {
        path: path.to_path_buf(),
        message,
    };
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| json(e.to_string()))?;
    let version = value
        .get("format_version")
        .ok_or_else(|| json("missing field `format_version`".into()))?;
    if version.as_u64() != Some(u64::from(POLICY_FORMAT_VERSION)) {
        return Err(PolicyError::Version {
            path: path.to_path_buf(),
            found: version.to_string(),
            supported: POLICY_FORMAT_VERSION,
        });
    }
    check_feature_names(path, &value)?;
    serde_json::from_str(text).map_err(|e| json(e.to_string()))
}

/// Names the first unknown feature by its position, before the typed parse (whose message would
/// not say which entry it was).
fn check_feature_names(path: &Path, spec: &serde_json::Value) -> Result<(), PolicyError> {
    let names = spec["observation"]["features"]
        .as_array()
        .into_iter()
        .flatten();
    for (index, name) in names.enumerate() {
        let Some(name) = name.as_str() else { continue };
        if name.parse::<crate::Feature>().is_err() {
            return Err(PolicyError::UnknownFeature {
                path: path.to_path_buf(),
                index,
                name: name.to_string(),
                known: crate::Feature::ALL.map(|f| f.name()).join(", "),
            });
        }
    }
    Ok(())
}

/// Checks everything in the description that does not involve the tensors.
pub(crate) fn validate_spec(spec: &PolicySpec, path: &Path) -> Result<(), PolicyError> {
    let invalid = |field: String, message: String| PolicyError::Invalid {
        path: path.to_path_buf(),
        field,
        message,
    };
    let o = &spec.observation;
    o.config
        .validate()
        .map_err(|(f, m)| invalid(format!("observation.{f}"), m))?;
    spec.architecture
        .validate()
        .map_err(|(f, m)| invalid(f, m))?;
    let obs_len = o.config.obs_len();
    if spec.architecture.obs_dim != obs_len {
        return Err(invalid(
            "architecture.obs_dim".into(),
            format!(
                "is {}, but history_len {} x {} features = {obs_len}",
                spec.architecture.obs_dim,
                o.config.history_len,
                o.config.features.len()
            ),
        ));
    }
    o.normalization
        .validate(obs_len)
        .map_err(|(f, m)| invalid(format!("observation.normalization.{f}"), m))?;
    spec.action
        .validate()
        .map_err(|e| invalid("action".into(), e.to_string()))?;
    spec.monitor_interval
        .sizing
        .validate()
        .map_err(|(f, m)| invalid(format!("monitor_interval.{f}"), m))?;
    crate::objective::validate(&spec.default_objective)
        .map_err(|m| invalid("default_objective".into(), m))?;
    crate::provenance::check_rule(&spec.provenance, spec.sender_rule())
        .map_err(|(f, m)| invalid(f, m))?;
    Ok(())
}

/// Every tensor the architecture needs, with its shape.
pub(crate) fn expected_tensors(arch: &ArchitectureSpec) -> BTreeMap<String, Vec<usize>> {
    arch.layers()
        .flat_map(|l| {
            [
                (format!("{}.weight", l.name), vec![l.outputs, l.inputs]),
                (format!("{}.bias", l.name), vec![l.outputs]),
            ]
        })
        .collect()
}
