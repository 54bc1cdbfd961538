//! Shared helpers: a deterministic generator and random policies of both shapes.
#![allow(dead_code)]

use mocc_policy::{
    ActionRule, Activation, ArchitectureSpec, BaselineKind, FeatureSet, LayerSpec, MetricsVersion,
    MonitorIntervalConfig, MonitorIntervalSpec, Normalization, ObservationConfig, ObservationSpec,
    PolicySpec, Provenance, WeightsSpec, POLICY_FORMAT_VERSION,
};

pub type Tensors = mocc_policy::NamedTensors;

/// A tiny deterministic generator (xorshift) so the tests need no RNG crate.
pub struct Gen(pub u64);

impl Gen {
    pub fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn symmetric(&mut self, scale: f64) -> f32 {
        ((self.uniform() * 2.0 - 1.0) * scale) as f32
    }
}

pub fn layer(name: &str, inputs: usize, outputs: usize, activation: Activation) -> LayerSpec {
    LayerSpec {
        name: name.into(),
        inputs,
        outputs,
        activation,
    }
}

/// A MOCC-shaped (preference) or Aurora-shaped spec with random weights.
pub fn random_policy(preference: bool, seed: u64) -> (PolicySpec, Tensors) {
    let mut g = Gen(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let features = vec![
        "sent latency inflation".to_string(),
        "latency ratio".to_string(),
        "send ratio".to_string(),
    ];
    let history_len = 4;
    let obs_dim = history_len * features.len();
    let (pref, pref_out) = if preference {
        (vec![layer("pi.pref.l0", 3, 5, Activation::Tanh)], 5)
    } else {
        (Vec::new(), 0)
    };
    let body = vec![
        layer("pi.l0", obs_dim + pref_out, 8, Activation::Tanh),
        layer("pi.l1", 8, 6, Activation::Relu),
    ];
    let head = layer("pi.mean", 6, 1, Activation::Identity);
    let architecture = ArchitectureSpec {
        obs_dim,
        objective_dim: if preference { 3 } else { 0 },
        preference: pref,
        body,
        head,
        log_std: -0.5,
    };
    let mut tensors = Tensors::new();
    for l in architecture.layers() {
        let w = (0..l.inputs * l.outputs)
            .map(|_| g.symmetric(0.8))
            .collect();
        let b = (0..l.outputs).map(|_| g.symmetric(0.3)).collect();
        tensors.insert(format!("{}.weight", l.name), (vec![l.outputs, l.inputs], w));
        tensors.insert(format!("{}.bias", l.name), (vec![l.outputs], b));
    }
    let normalization = Normalization {
        mean: (0..obs_dim).map(|_| g.uniform() - 0.5).collect(),
        var: (0..obs_dim).map(|_| 0.1 + g.uniform()).collect(),
        epsilon: 1e-8,
        clip: 10.0,
    };
    let spec = PolicySpec {
        format_version: POLICY_FORMAT_VERSION,
        architecture,
        observation: ObservationSpec {
            config: ObservationConfig {
                features: FeatureSet::from_names(&features).expect("known features"),
                history_len,
                latency_baseline: BaselineKind::ConnectionMin,
                capacity_trains: None,
            },
            metrics: MetricsVersion::Aurora,
            normalization,
        },
        action: ActionRule::default(),
        monitor_interval: MonitorIntervalSpec {
            sizing: MonitorIntervalConfig {
                initial_delay_factor: 3.0,
                rtt_factor: 0.5,
                min_packets: 0.0,
            },
            warmup_mis: 2,
        },
        default_objective: [1.0 / 3.0; 3],
        provenance: Provenance::default(),
        weights: WeightsSpec {
            file: String::new(),
            sha256: String::new(),
        },
    };
    (spec, tensors)
}
