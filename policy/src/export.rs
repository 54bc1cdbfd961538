//! The export format: a folder with `policy.json` (what the network is and how to feed it; its
//! schema is `crate::spec`) and `policy.safetensors` (the actor's f32 weights), and [`Policy`],
//! its validated in-memory form. Loading checks the description, the checksum and every tensor,
//! and refuses any mismatch with an error naming the field or tensor (`crate::error`).
//!
//! A paired export (`action.mode_switch` in `policy.json`, made by [`Policy::paired`])
//! holds a second export in its `competitive/` folder: the policy that decides while the MI
//! clock's [`ModeSwitch`] is in [`Mode::Competitive`]. Both read the same observation, MI clock
//! and rate rule; each has its own network and normalization.

use crate::actor::{ActorNet, Dense, Mlp, Workspace, OBJECTIVE_DIM};
use crate::baseline::CapacityTrains;
use crate::clock::MiClock;
use crate::features::FeatureSet;
use crate::history::ObservationBuilder;
use crate::mode_switch::{Mode, ModeSwitch};
use crate::normalize::Normalizer;
use crate::provenance::{Provenance, SenderRule};
use crate::rate::ActionRule;
use crate::sender_loop::LoopSpec;
use crate::spec::{expected_tensors, parse_spec, validate_spec, LayerSpec, PolicySpec};
use safetensors::tensor::{Dtype, SafeTensors};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use crate::error::PolicyError;
pub use crate::spec::POLICY_FORMAT_VERSION;

/// Named f32 tensors in PyTorch layout: name -> (shape, row-major values).
pub type NamedTensors = BTreeMap<String, (Vec<usize>, Vec<f32>)>;

/// Name of the description file in an export folder.
pub const SPEC_FILE: &str = "policy.json";
/// Name of the weights file in an export folder.
pub const WEIGHTS_FILE: &str = "policy.safetensors";
/// Folder of a paired export's competitive policy, inside the export folder.
pub const COMPETITIVE_DIR: &str = "competitive";
/// Name of the optional TorchScript module in an export folder (`mocc export --torchscript`).
pub const TORCHSCRIPT_FILE: &str = "policy.pt";

/// A loaded, validated policy: the actor, its input pipeline and its rate rule.
#[derive(Debug, Clone)]
pub struct Policy {
    spec: PolicySpec,
    net: ActorNet,
    normalizer: Normalizer,
    source: PathBuf,
    /// A paired export's competitive policy (present exactly when `action.mode_switch` is).
    competitive: Option<Box<Policy>>,
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Policy {
    /// Loads and validates an export folder (or its `policy.json`); a paired one with its
    /// competitive policy.
    pub fn load(dir: impl AsRef<Path>) -> Result<Self, PolicyError> {
        let dir = dir.as_ref();
        let dir = if dir.is_file() {
            dir.parent().unwrap_or(Path::new("."))
        } else {
            dir
        };
        let mut policy = Self::load_single(dir, true)?;
        if policy.spec.action.mode_switch.is_some() {
            let spec_path = dir.join(SPEC_FILE);
            let competitive =
                Self::load_single(&dir.join(COMPETITIVE_DIR), false).map_err(|e| {
                    PolicyError::Invalid {
                        path: spec_path.clone(),
                        field: "action.mode_switch".into(),
                        message: format!("needs a single export in {COMPETITIVE_DIR}/: {e}"),
                    }
                })?;
            check_pairable(&policy, &competitive, &spec_path)?;
            policy.competitive = Some(Box::new(competitive));
        }
        Ok(policy)
    }

    /// Loads the export in `dir` without its competitive policy; a paired description is
    /// refused unless `may_pair`.
    fn load_single(dir: &Path, may_pair: bool) -> Result<Self, PolicyError> {
        let spec_path = dir.join(SPEC_FILE);
        let text = crate::error::read_text(&spec_path)?;
        let spec = parse_spec(&spec_path, &text)?;
        if !may_pair && spec.action.mode_switch.is_some() {
            return Err(PolicyError::Invalid {
                path: spec_path,
                field: "action.mode_switch".into(),
                message: "a paired export cannot be half of another pair".into(),
            });
        }
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
        let bytes = crate::error::read_bytes(&weights_path, crate::error::MAX_MODEL_BYTES)?;
        let actual = sha256_hex(&bytes);
        if actual != spec.weights.sha256.to_ascii_lowercase() {
            return Err(PolicyError::Checksum {
                path: weights_path,
                expected: spec.weights.sha256.clone(),
                actual,
            });
        }
        let tensors = read_safetensors(&weights_path, &bytes)?;
        let mut policy = Self::build(spec, &tensors, &spec_path, &weights_path)?;
        policy.source = dir.to_path_buf();
        Ok(policy)
    }

    /// Builds a policy from a description and named f32 tensors (PyTorch layout), checking
    /// everything; `spec_path` and `weights_path` only label errors. The checksum is not
    /// checked here (there is no file). A paired description (`action.mode_switch`) is refused:
    /// its competitive policy lives in a folder ([`Policy::load`]).
    pub fn from_parts(
        spec: PolicySpec,
        tensors: &NamedTensors,
        spec_path: &Path,
        weights_path: &Path,
    ) -> Result<Self, PolicyError> {
        if spec.action.mode_switch.is_some() {
            return Err(PolicyError::Invalid {
                path: spec_path.to_path_buf(),
                field: "action.mode_switch".into(),
                message: format!(
                    "a paired policy is an export folder with its competitive policy in \
                     {COMPETITIVE_DIR}/ (mocc pair writes one)"
                ),
            });
        }
        Self::build(spec, tensors, spec_path, weights_path)
    }

    /// [`Policy::from_parts`] for any description; a paired one still lacks its competitive
    /// policy.
    fn build(
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
            competitive: None,
        })
    }

    /// The same policy (and its competitive half) sending capacity trains and reading the
    /// bottleneck rate they measure as its peak delivery rate's least value
    /// ([`CapacityTrains`]; None: its own peak). The weights are unchanged: where they learned
    /// the feature from the flow's own peak, `declared_by` declares the trains untrained
    /// (provenance says so).
    pub fn with_capacity_trains(
        self,
        trains: Option<CapacityTrains>,
        declared_by: &str,
    ) -> Result<Policy, PolicyError> {
        let rule = SenderRule::new(self.spec.action, trains);
        self.with_rule(
            rule,
            declared_by,
            "capacity trains give every flow on a path the bottleneck's rate as the reference \
             of `peak delivery ratio`, which the weights learned from the flow's own peak",
        )
    }

    /// The same policy running under `rule` (a paired one's competitive half under it without
    /// the mode switch). Each part that changes is declared untrained by `declared_by` for
    /// `why`; a part set back to the trained rule loses its declaration. The rule is checked;
    /// the weights are unchanged.
    pub fn with_rule(
        mut self,
        rule: SenderRule,
        declared_by: &str,
        why: &str,
    ) -> Result<Policy, PolicyError> {
        let path = self.source.join(SPEC_FILE);
        let invalid = |field: String, message: String| PolicyError::Invalid {
            path: path.clone(),
            field,
            message,
        };
        if rule.action.mode_switch.is_some() != self.competitive.is_some() {
            return Err(invalid(
                "action.mode_switch".into(),
                "a rule adds or removes the mode switch only through `mocc pair`, which joins \
                 two policies"
                    .into(),
            ));
        }
        rule.action
            .validate()
            .map_err(|e| invalid("action".into(), e.to_string()))?;
        if let Some(t) = &rule.capacity_trains() {
            t.validate()
                .map_err(|(f, m)| invalid(format!("observation.{f}"), m))?;
        }
        let before = self.spec.sender_rule();
        self.spec.action = rule.action;
        self.spec.observation.config.capacity_trains = rule.capacity_trains();
        redeclare(&mut self.spec.provenance, before, rule, declared_by, why);
        if let Some(inner) = self.competitive.take() {
            let inner_rule = SenderRule {
                action: ActionRule {
                    mode_switch: None,
                    ..rule.action
                },
                observation: rule.observation,
            };
            self.competitive = Some(Box::new(inner.with_rule(inner_rule, declared_by, why)?));
        }
        validate_spec(&self.spec, &path)?;
        Ok(self)
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
    pub fn action_rule(&self) -> ActionRule {
        self.spec.action
    }

    /// A fresh observation history for one connection.
    pub fn observation_builder(&self) -> ObservationBuilder {
        let o = &self.spec.observation;
        o.config.builder(o.metrics)
    }

    /// The loop one connection runs: the observation, MI sizing, warm-up and rate rule trained
    /// with.
    pub fn loop_spec(&self) -> LoopSpec<'_> {
        self.spec.loop_spec()
    }

    /// A fresh MI clock for one connection: the history, warm-up and MI sizing trained with.
    pub fn mi_clock(&self) -> MiClock {
        self.loop_spec().clock()
    }

    /// A paired export's competitive policy (none for a single policy).
    pub fn competitive(&self) -> Option<&Policy> {
        self.competitive.as_deref()
    }

    /// Scratch memory for [`Self::mean_action`] and [`Self::mean_action_in`].
    pub fn workspace(&self) -> PolicyWorkspace {
        PolicyWorkspace {
            normalized: vec![0.0; self.obs_len()],
            net: self.net.workspace(),
            competitive: self.competitive.as_ref().map(|c| Box::new(c.workspace())),
        }
    }

    /// The deterministic action (the Gaussian's mean) for a raw observation of `obs_len`
    /// values and an objective: the cooperative policy's, as [`Self::mean_action_in`] in
    /// [`Mode::Cooperative`]. Allocates nothing.
    pub fn mean_action(
        &self,
        raw_obs: &[f32],
        objective: &[f32; OBJECTIVE_DIM],
        ws: &mut PolicyWorkspace,
    ) -> f32 {
        self.normalizer.apply(raw_obs, &mut ws.normalized);
        self.net.forward(&ws.normalized, objective, &mut ws.net)
    }

    /// The deterministic action of the policy for `mode`: a paired export's competitive
    /// policy in [`Mode::Competitive`], else this one. `ws` must come from this policy's
    /// [`Self::workspace`]. Allocates nothing.
    pub fn mean_action_in(
        &self,
        mode: Mode,
        raw_obs: &[f32],
        objective: &[f32; OBJECTIVE_DIM],
        ws: &mut PolicyWorkspace,
    ) -> f32 {
        match (mode, &self.competitive, &mut ws.competitive) {
            (Mode::Competitive, Some(policy), Some(cws)) => {
                policy.mean_action(raw_obs, objective, cws)
            }
            _ => self.mean_action(raw_obs, objective, ws),
        }
    }

    /// The paired policy of `cooperative` and `competitive` (each a single policy of one
    /// observation, MI clock and rule): `cooperative` with `switch` as its
    /// `action.mode_switch`, deciding with `competitive` in [`Mode::Competitive`]. The switch
    /// is declared untrained by `declared_by` (`mocc pair`, or the recipe that pairs them):
    /// training runs one network. mocc-outputs writes it as a folder.
    pub fn paired(
        cooperative: Policy,
        competitive: Policy,
        switch: ModeSwitch,
        declared_by: &str,
    ) -> Result<Policy, PolicyError> {
        let source_spec = cooperative.source.join(SPEC_FILE);
        for (policy, role) in [(&cooperative, "cooperative"), (&competitive, "competitive")] {
            if policy.competitive.is_some() {
                return Err(PolicyError::Invalid {
                    path: policy.source.join(SPEC_FILE),
                    field: "action.mode_switch".into(),
                    message: format!("the {role} policy of a pair must be a single policy"),
                });
            }
        }
        let mut paired = cooperative;
        let before = paired.spec.sender_rule();
        paired.spec.action.mode_switch = Some(switch);
        let after = paired.spec.sender_rule();
        redeclare(
            &mut paired.spec.provenance,
            before,
            after,
            declared_by,
            "the mode switch joins two policies trained apart; training runs one network",
        );
        validate_spec(&paired.spec, &source_spec)?;
        check_pairable(&paired, &competitive, &source_spec)?;
        paired.competitive = Some(Box::new(competitive));
        Ok(paired)
    }

    /// The same policy with `f` applied to its provenance (and its competitive half's), for
    /// the tools that record where a policy came from.
    pub fn with_provenance(mut self, f: impl Fn(&mut crate::provenance::Provenance)) -> Self {
        f(&mut self.spec.provenance);
        if let Some(c) = self.competitive.as_mut() {
            f(&mut c.spec.provenance);
        }
        self
    }
}

/// Declares every part where `after` differs from `before` untrained (by `declared_by`, for
/// `why`), and, where the trained rule is known, drops declarations of parts back at it.
fn redeclare(
    provenance: &mut Provenance,
    before: SenderRule,
    after: SenderRule,
    declared_by: &str,
    why: &str,
) {
    for part in before.differing_parts(&after) {
        provenance.declare_untrained(part, declared_by, why);
    }
    if let Some(trained) = provenance.trained_rule {
        let differing = trained.differing_parts(&after);
        provenance
            .untrained
            .retain(|u| differing.contains(&u.part.as_str()));
    }
}

/// Checks that `competitive` can decide in `paired`'s place: the same observation features,
/// history and metrics, MI clock and rate rule (bar the switch, so a pair never matches), and
/// objective input. `spec_path` names the paired description in errors.
fn check_pairable(
    paired: &Policy,
    competitive: &Policy,
    spec_path: &Path,
) -> Result<(), PolicyError> {
    let (a, b) = (&paired.spec, &competitive.spec);
    let rule = ActionRule {
        mode_switch: None,
        ..a.action
    };
    let mismatch = if a.observation.config != b.observation.config {
        Some("observation")
    } else if a.observation.metrics != b.observation.metrics {
        Some("observation.metrics")
    } else if a.monitor_interval != b.monitor_interval {
        Some("monitor_interval")
    } else if rule != b.action {
        Some("action")
    } else if paired.takes_objective() != competitive.takes_objective() {
        Some("architecture.preference")
    } else {
        None
    };
    match mismatch {
        None => Ok(()),
        Some(field) => Err(PolicyError::Invalid {
            path: spec_path.to_path_buf(),
            field: field.to_string(),
            message: format!(
                "differs from the competitive policy's ({}): a pair shares what it reads and how \
                 it paces",
                competitive.source.join(SPEC_FILE).display()
            ),
        }),
    }
}

/// Scratch memory of [`Policy::mean_action`] and [`Policy::mean_action_in`].
#[derive(Debug, Clone)]
pub struct PolicyWorkspace {
    normalized: Vec<f32>,
    net: Workspace,
    /// The competitive policy's, for a paired export.
    competitive: Option<Box<PolicyWorkspace>>,
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
