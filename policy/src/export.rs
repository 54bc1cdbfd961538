//! The export format: a folder with `policy.json` (what the network is and how to feed it; its
//! schema is `crate::spec`) and `policy.safetensors` (the actor's f32 weights), and [`Policy`],
//! its validated in-memory form. Loading checks the description, the checksum and every tensor,
//! and refuses any mismatch with an error naming the field or tensor (`crate::error`).

use crate::clock::MiClock;
use crate::features::FeatureSet;
use crate::history::ObservationBuilder;
use crate::net::{ActorNet, Dense, Mlp, Workspace, OBJECTIVE_DIM};
use crate::normalize::Normalizer;
use crate::rate::RateRule;
use crate::spec::{expected_tensors, parse_spec, validate_spec, LayerSpec, PolicySpec};
use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

pub use crate::error::PolicyError;
pub use crate::spec::POLICY_FORMAT_VERSION;

/// Named f32 tensors in PyTorch layout: name -> (shape, row-major values).
pub type NamedTensors = BTreeMap<String, (Vec<usize>, Vec<f32>)>;

/// Name of the description file in an export folder.
pub const SPEC_FILE: &str = "policy.json";
/// Name of the weights file in an export folder.
pub const WEIGHTS_FILE: &str = "policy.safetensors";

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
            .with_probe(self.rate_rule().probe_rtt)
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
