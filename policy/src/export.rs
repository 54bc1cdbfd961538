//! The export format: a folder with `policy.json` (what the network is and how to feed it) and
//! `policy.safetensors` (the actor's f32 weights), and [`Policy`], its validated in-memory form.
//!
//! `policy.json` holds the format version, the actor's layers (names, widths, activations, the
//! preference sub-network), the observation (feature names, history length, latency baseline,
//! metric version, normalization statistics), the rate rule, the monitor-interval sizing, the
//! objective input, provenance (config, git revision, steps) and the SHA-256 of the weights.
//! Loading checks all of it and refuses any mismatch with an error naming the field or tensor.

use crate::features::{FeatureSet, MetricsVersion};
use crate::history::{ObservationBuilder, ObservationConfig};
use crate::mi::MonitorIntervalConfig;
use crate::net::{Activation, ActorNet, Dense, Mlp, Workspace, OBJECTIVE_DIM};
use crate::clock::MiClock;
use crate::normalize::{Normalization, Normalizer};
use crate::rate::RateRule;
use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Named f32 tensors in PyTorch layout: name -> (shape, row-major values).
pub type NamedTensors = BTreeMap<String, (Vec<usize>, Vec<f32>)>;

/// Version of `policy.json` this crate reads and writes.
pub const POLICY_FORMAT_VERSION: u32 = 1;
/// Name of the description file in an export folder.
pub const SPEC_FILE: &str = "policy.json";
/// Name of the weights file in an export folder.
pub const WEIGHTS_FILE: &str = "policy.safetensors";

/// Why an export could not be written or loaded; every variant names the file and the field or
/// tensor at fault.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// A file is missing or unreadable (or could not be written).
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `policy.json` is not valid JSON of the expected shape.
    #[error("{path}: {message}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The parser's message (names the field and line).
        message: String,
    },
    /// The export was written by an incompatible format version.
    #[error(
        "{path}: format_version {found} is not supported (this build reads version {supported})"
    )]
    Version {
        /// The file.
        path: PathBuf,
        /// The version in the file.
        found: String,
        /// The version this build reads.
        supported: u32,
    },
    /// The weights file's SHA-256 differs from the one recorded in `policy.json`.
    #[error("{path}: SHA-256 {actual} does not match weights.sha256 {expected} in policy.json (the weights were modified or belong to another export)")]
    Checksum {
        /// The weights file.
        path: PathBuf,
        /// Recorded checksum.
        expected: String,
        /// Checksum of the file.
        actual: String,
    },
    /// The weights file is not a valid safetensors file.
    #[error("{path}: not a valid safetensors file: {message}")]
    Weights {
        /// The weights file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// A tensor the architecture needs is absent.
    #[error("{path}: tensor {name:?} is missing (architecture in policy.json needs it)")]
    MissingTensor {
        /// The weights file.
        path: PathBuf,
        /// Tensor name.
        name: String,
    },
    /// A tensor the architecture does not describe.
    #[error("{path}: tensor {name:?} is not part of the architecture in policy.json")]
    UnexpectedTensor {
        /// The weights file.
        path: PathBuf,
        /// Tensor name.
        name: String,
    },
    /// A tensor's shape disagrees with the architecture.
    #[error("{path}: tensor {name:?} has shape {found:?}, the architecture needs {expected:?}")]
    Shape {
        /// The weights file.
        path: PathBuf,
        /// Tensor name.
        name: String,
        /// Shape from the architecture.
        expected: Vec<usize>,
        /// Shape in the file.
        found: Vec<usize>,
    },
    /// A tensor is not f32 or holds a non-finite value.
    #[error("{path}: tensor {name:?}: {message}")]
    TensorValue {
        /// The weights file.
        path: PathBuf,
        /// Tensor name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// A feature name that is not one of Aurora's metrics.
    #[error(
        "{path}: observation.features[{index}]: unknown feature {name:?}; known features: {known}"
    )]
    UnknownFeature {
        /// The file.
        path: PathBuf,
        /// Position in the list.
        index: usize,
        /// The name.
        name: String,
        /// Every known name.
        known: String,
    },
    /// A field with an invalid or inconsistent value.
    #[error("{path}: {field}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Dotted field path.
        field: String,
        /// What is wrong.
        message: String,
    },
}

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
        let value = self.fields.remove(key).ok_or_else(|| E::missing_field(key))?;
        T::deserialize(value).map_err(|e| E::custom(format!("{key}: {e}")))
    }

    fn rest<T: serde::de::DeserializeOwned>(self) -> Result<T, E> {
        T::deserialize(serde_json::Value::Object(self.fields)).map_err(E::custom)
    }
}

/// Where the policy came from.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// Name of the training config (file stem).
    pub config_name: String,
    /// Path of the training config, as recorded by the run.
    pub config_path: String,
    /// Git revision of the code that trained it, if known.
    pub git_revision: Option<String>,
    /// The checkpoint exported.
    pub checkpoint: String,
    /// Env steps of training.
    pub env_steps: u64,
    /// The tool that wrote the export, e.g. `mocc 0.1.0 (rev ...)`.
    pub exported_by: String,
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
    pub action: RateRule,
    /// MI sizing.
    pub monitor_interval: MonitorIntervalSpec,
    /// Objective used when the application gives none (throughput, latency, loss).
    pub default_objective: [f64; OBJECTIVE_DIM],
    /// Provenance.
    pub provenance: Provenance,
    /// The weights file.
    pub weights: WeightsSpec,
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
        if self.obs_dim == 0 {
            return bad("architecture.obs_dim".into(), "must be >= 1".into());
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
fn chain(field: &str, layers: &[LayerSpec], input: usize) -> Result<usize, (String, String)> {
    let mut width = input;
    for (i, l) in layers.iter().enumerate() {
        if l.inputs != width {
            return Err((
                format!("{field}[{i}].inputs"),
                format!("is {}, the previous stage gives {width} units", l.inputs),
            ));
        }
        if l.outputs == 0 {
            return Err((format!("{field}[{i}].outputs"), "must be >= 1".into()));
        }
        width = l.outputs;
    }
    Ok(width)
}

/// A loaded, validated policy: the actor, its input pipeline and its rate rule.
#[derive(Debug, Clone)]
pub struct Policy {
    spec: PolicySpec,
    net: ActorNet,
    normalizer: Normalizer,
    source: PathBuf,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> PolicyError + '_ {
    move |source| PolicyError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Policy {
    /// Loads and validates an export folder (or its `policy.json`).
    pub fn load(dir: impl AsRef<Path>) -> Result<Self, PolicyError> {
        let dir = dir.as_ref();
        let dir = if dir.is_file() {
            dir.parent().unwrap_or(Path::new("."))
        } else {
            dir
        };
        let spec_path = dir.join(SPEC_FILE);
        let text = std::fs::read_to_string(&spec_path).map_err(io(&spec_path))?;
        let spec = parse_spec(&spec_path, &text)?;
        let plain = Path::new(&spec.weights.file)
            .file_name()
            .is_some_and(|n| n == spec.weights.file.as_str());
        if !plain {
            return Err(PolicyError::Invalid {
                path: spec_path,
                field: "weights.file".into(),
                message: format!(
                    "must be a file name inside the export folder (got {:?})",
                    spec.weights.file
                ),
            });
        }
        let weights_path = dir.join(&spec.weights.file);
        let bytes = std::fs::read(&weights_path).map_err(io(&weights_path))?;
        let actual = sha256_hex(&bytes);
        if actual != spec.weights.sha256.to_ascii_lowercase() {
            return Err(PolicyError::Checksum {
                path: weights_path,
                expected: spec.weights.sha256.clone(),
                actual,
            });
        }
        let tensors = read_safetensors(&weights_path, &bytes)?;
        let mut policy = Self::from_parts(spec, &tensors, &spec_path, &weights_path)?;
        policy.source = dir.to_path_buf();
        Ok(policy)
    }

    /// Builds a policy from a description and named f32 tensors (PyTorch layout), checking
    /// everything; `spec_path` and `weights_path` only label errors. The checksum is not
    /// checked here (there is no file).
    pub fn from_parts(
        spec: PolicySpec,
        tensors: &NamedTensors,
        spec_path: &Path,
        weights_path: &Path,
    ) -> Result<Self, PolicyError> {
        validate_spec(&spec, spec_path)?;
        let arch = &spec.architecture;
        let expected = expected_tensors(arch);
        for name in tensors.keys() {
            if !expected.contains_key(name) {
                return Err(PolicyError::UnexpectedTensor {
                    path: weights_path.to_path_buf(),
                    name: name.clone(),
                });
            }
        }
        for (name, shape) in &expected {
            let (found, data) = tensors
                .get(name)
                .ok_or_else(|| PolicyError::MissingTensor {
                    path: weights_path.to_path_buf(),
                    name: name.clone(),
                })?;
            if found != shape {
                return Err(PolicyError::Shape {
                    path: weights_path.to_path_buf(),
                    name: name.clone(),
                    expected: shape.clone(),
                    found: found.clone(),
                });
            }
            if let Some(i) = data.iter().position(|v| !v.is_finite()) {
                return Err(PolicyError::TensorValue {
                    path: weights_path.to_path_buf(),
                    name: name.clone(),
                    message: format!("value {i} is {} (weights must be finite)", data[i]),
                });
            }
        }
        let dense = |l: &LayerSpec| -> Dense {
            let w = &tensors[&format!("{}.weight", l.name)].1;
            let b = &tensors[&format!("{}.bias", l.name)].1;
            // Shapes were checked above, so the layout always fits.
            Dense::from_torch_layout(l.inputs, l.outputs, w, b, l.activation)
                .unwrap_or_else(|| unreachable!("shapes checked"))
        };
        let preference = arch
            .takes_objective()
            .then(|| Mlp::new(arch.preference.iter().map(dense).collect()));
        let body = Mlp::new(arch.body.iter().map(dense).collect());
        let net = ActorNet::new(arch.obs_dim, preference, body, dense(&arch.head));
        let normalizer = spec.observation.normalization.normalizer();
        Ok(Self {
            net,
            normalizer,
            source: spec_path
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
            spec,
        })
    }

    /// The description.
    pub fn spec(&self) -> &PolicySpec {
        &self.spec
    }

    /// The observation features, in order.
    pub fn features(&self) -> &FeatureSet {
        &self.spec.observation.config.features
    }

    /// The folder it was loaded from.
    pub fn source(&self) -> &Path {
        &self.source
    }

    /// Observation length (`history_len x features`).
    pub fn obs_len(&self) -> usize {
        self.net.obs_dim()
    }

    /// Whether the objective is a network input (a MOCC policy).
    pub fn takes_objective(&self) -> bool {
        self.net.takes_objective()
    }

    /// The rate rule the policy was trained with.
    pub fn rate_rule(&self) -> RateRule {
        self.spec.action
    }

    /// A fresh observation history for one connection.
    pub fn observation_builder(&self) -> ObservationBuilder {
        let o = &self.spec.observation;
        o.config.builder(o.metrics)
    }

    /// A fresh MI clock for one connection: the history, warm-up and MI sizing trained with.
    pub fn mi_clock(&self) -> MiClock {
        let o = &self.spec.observation;
        let mi = &self.spec.monitor_interval;
        MiClock::new(&o.config, o.metrics, mi.sizing, mi.warmup_mis)
    }

    /// Scratch memory for [`Self::mean_action`].
    pub fn workspace(&self) -> PolicyWorkspace {
        PolicyWorkspace {
            normalized: vec![0.0; self.obs_len()],
            net: self.net.workspace(),
        }
    }

    /// The deterministic action (the Gaussian's mean) for a raw observation of `obs_len`
    /// values and an objective. Allocates nothing.
    pub fn mean_action(
        &self,
        raw_obs: &[f32],
        objective: &[f32; OBJECTIVE_DIM],
        ws: &mut PolicyWorkspace,
    ) -> f32 {
        self.normalizer.apply(raw_obs, &mut ws.normalized);
        self.net.forward(&ws.normalized, objective, &mut ws.net)
    }

    /// Writes an export folder: the tensors (PyTorch layout) to `policy.safetensors`, then
    /// `spec` with the weights' file name and checksum filled in to `policy.json`. The result
    /// is validated by loading it back. Returns the written description.
    pub fn write(
        dir: &Path,
        mut spec: PolicySpec,
        tensors: &NamedTensors,
    ) -> Result<PolicySpec, PolicyError> {
        let weights_path = dir.join(WEIGHTS_FILE);
        let spec_path = dir.join(SPEC_FILE);
        spec.format_version = POLICY_FORMAT_VERSION;
        spec.weights.file = WEIGHTS_FILE.to_string();
        // Validate before touching the folder, so a bad export never replaces a good one.
        Self::from_parts(spec.clone(), tensors, &spec_path, &weights_path)?;
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let bytes = serialize_safetensors(tensors, &weights_path)?;
        spec.weights.sha256 = sha256_hex(&bytes);
        let json = serde_json::to_string_pretty(&spec).map_err(|e| PolicyError::Json {
            path: spec_path.clone(),
            message: e.to_string(),
        })?;
        write_atomic(&weights_path, &bytes)?;
        write_atomic(&spec_path, format!("{json}\n").as_bytes())?;
        Self::load(dir)?;
        Ok(spec)
    }
}

/// Scratch memory of [`Policy::mean_action`].
#[derive(Debug, Clone)]
pub struct PolicyWorkspace {
    normalized: Vec<f32>,
    net: Workspace,
}

/// Parses `policy.json`, checking the version before the fields so that another version's
/// file gets a version error rather than a field error.
fn parse_spec(path: &Path, text: &str) -> Result<PolicySpec, PolicyError> {
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
    let names = spec["observation"]["features"].as_array().into_iter().flatten();
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
fn validate_spec(spec: &PolicySpec, path: &Path) -> Result<(), PolicyError> {
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
    Ok(())
}

/// Every tensor the architecture needs, with its shape.
fn expected_tensors(arch: &ArchitectureSpec) -> BTreeMap<String, Vec<usize>> {
    arch.layers()
        .flat_map(|l| {
            [
                (format!("{}.weight", l.name), vec![l.outputs, l.inputs]),
                (format!("{}.bias", l.name), vec![l.outputs]),
            ]
        })
        .collect()
}

/// Reads every tensor of a safetensors file as f32.
fn read_safetensors(path: &Path, bytes: &[u8]) -> Result<NamedTensors, PolicyError> {
    let st = SafeTensors::deserialize(bytes).map_err(|e| PolicyError::Weights {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let mut out = NamedTensors::new();
    for (name, view) in st.tensors() {
        if view.dtype() != Dtype::F32 {
            return Err(PolicyError::TensorValue {
                path: path.to_path_buf(),
                name,
                message: format!("dtype is {:?}, expected F32", view.dtype()),
            });
        }
        let data = view
            .data()
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        out.insert(name, (view.shape().to_vec(), data));
    }
    Ok(out)
}

fn serialize_safetensors(tensors: &NamedTensors, path: &Path) -> Result<Vec<u8>, PolicyError> {
    let weights_err = |message: String| PolicyError::Weights {
        path: path.to_path_buf(),
        message,
    };
    let raw: Vec<(String, Vec<usize>, Vec<u8>)> = tensors
        .iter()
        .map(|(name, (shape, data))| {
            let bytes = data.iter().flat_map(|v| v.to_le_bytes()).collect();
            (name.clone(), shape.clone(), bytes)
        })
        .collect();
    let mut views = Vec::with_capacity(raw.len());
    for (name, shape, bytes) in &raw {
        let view = TensorView::new(Dtype::F32, shape.clone(), bytes)
            .map_err(|e| weights_err(format!("tensor {name:?}: {e}")))?;
        views.push((name.clone(), view));
    }
    safetensors::serialize(views, None).map_err(|e| weights_err(e.to_string()))
}

/// Writes `bytes` to a temporary file next to `path`, syncs it and renames it into place.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), PolicyError> {
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp).map_err(io(&tmp))?;
    f.write_all(bytes).map_err(io(&tmp))?;
    f.sync_all().map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))
}
