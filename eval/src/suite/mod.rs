//! Evaluation suites (`configs/eval/*.yaml`): the networks, objectives and seeds `mocc eval`
//! runs every policy on, and the sections that ask for figures (one-parameter sweeps, fairness,
//! friendliness, time series on scenario files), with their validation.

use crate::flows::FlowNetwork;
use crate::simulate::Horizon;

use mocc_gym::cc::ClassicKind;
use mocc_gym::ScenarioConfig;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

mod fairness;
pub mod targets;
pub use fairness::{FairnessSpec, MAX_FAIRNESS_FLOWS, MAX_FAIRNESS_RUNS};
use targets::{Cases, Target, MAX_TARGETS};

/// A suite file that is unreadable or invalid; the message names the field.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct SuiteError {
    /// The suite file.
    pub path: PathBuf,
    /// What is wrong.
    pub message: String,
}

/// One network of a suite: a fixed Aurora bottleneck.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteNetwork {
    /// Bandwidth (packets/s).
    pub bw_pps: f64,
    /// One-way delay (s).
    pub delay_s: f64,
    /// Queue (packets).
    pub queue_pkts: f64,
    /// Random loss probability.
    #[serde(default)]
    pub loss: f64,
}

impl SuiteNetwork {
    /// A short label, e.g. `bw300_d0.1_q50_l0.01`.
    pub fn label(&self) -> String {
        format!(
            "bw{}_d{}_q{}_l{}",
            self.bw_pps, self.delay_s, self.queue_pkts, self.loss
        )
    }
}

/// An evaluation suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    /// The networks.
    #[serde(default)]
    pub networks: Vec<SuiteNetwork>,
    /// Objectives (w_thr, w_lat, w_loss); a policy without objective input ignores them for
    /// acting, but the `mocc` reward is still computed with each. Default: equal weights.
    #[serde(default)]
    pub objectives: Option<Vec<[f64; 3]>>,
    /// Seeds (each run draws Aurora's start rate U(0.3, 1.5) x bw from its seed).
    #[serde(default = "default_seeds")]
    pub seeds: Vec<u64>,
    /// MIs per run.
    #[serde(default = "default_steps")]
    pub steps: u32,
    /// One-parameter sweeps around a base network (the paper's Figure 5); their networks are
    /// evaluated after `networks`.
    #[serde(default)]
    pub sweeps: Option<SweepSpec>,
    /// Fairness runs: n flows of each policy with staggered starts.
    #[serde(default)]
    pub fairness: Option<FairnessSpec>,
    /// Friendliness runs: each policy against one Cubic flow.
    #[serde(default)]
    pub friendliness: Option<FriendlinessSpec>,
    /// Scenario files whose time series each policy draws.
    #[serde(default)]
    pub timeseries: Vec<TimeSeriesSpec>,
    /// Scenario files each policy runs for a fixed time, giving results.csv rows (network:
    /// the file's name).
    #[serde(default)]
    pub scenarios: Vec<ScenarioRunSpec>,
    /// What the suite asks of a policy (`mocc eval` writes targets.csv and says how many each
    /// policy meets; see [`crate::targets`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<Target>,
}

fn default_seeds() -> Vec<u64> {
    vec![0]
}
fn default_steps() -> u32 {
    400
}

impl Suite {
    /// Reads and validates a suite file.
    pub fn load(path: &Path) -> Result<Self, SuiteError> {
        let err = |message: String| SuiteError {
            path: path.to_path_buf(),
            message,
        };
        let text = mocc_policy::error::read_text(path).map_err(|e| err(e.source.to_string()))?;
        let mut suite: Suite = serde_saphyr::from_str(&text).map_err(|e| err(e.to_string()))?;
        suite.validate().map_err(err)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        for (i, s) in suite.scenarios.iter_mut().enumerate() {
            if s.scenario.is_relative() {
                s.scenario = dir.join(&s.scenario);
            }
            mocc_gym::Scenario::load(&s.scenario)
                .map_err(|e| err(format!("scenarios[{i}].scenario: {e}")))?;
        }
        Ok(suite)
    }

    /// Checks every value; the message names the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.all_networks().is_empty()
            && self.fairness.is_none()
            && self.friendliness.is_none()
            && self.timeseries.is_empty()
            && self.scenarios.is_empty()
        {
            return Err(
                "networks: at least one network (or sweeps, fairness, friendliness, \
                        timeseries, scenarios) is required"
                    .into(),
            );
        }
        for (i, s) in self.scenarios.iter().enumerate() {
            s.validate(&format!("scenarios[{i}]"))?;
        }
        for (i, n) in self.networks.iter().enumerate() {
            ScenarioConfig::fixed_link(n.bw_pps, n.delay_s, n.queue_pkts, n.loss)
                .validate()
                .map_err(|e| format!("networks[{i}]: {e}"))?;
        }
        if let Some(ws) = &self.objectives {
            for (i, w) in ws.iter().enumerate() {
                mocc_gym::config::validate_objective(&format!("objectives[{i}]"), w)
                    .map_err(|e| e.to_string())?;
            }
        }
        for (p, n) in self.sweeps.iter().flat_map(SweepSpec::networks) {
            ScenarioConfig::fixed_link(n.bw_pps, n.delay_s, n.queue_pkts, n.loss)
                .validate()
                .map_err(|e| format!("sweeps ({}): {e}", p.label()))?;
        }
        if let Some(f) = &self.fairness {
            f.validate()?;
        }
        if let Some(f) = &self.friendliness {
            f.validate()?;
        }
        for (i, t) in self.timeseries.iter().enumerate() {
            t.validate(&format!("timeseries[{i}]"))?;
        }
        if self.seeds.is_empty() {
            return Err("seeds: at least one seed is required".into());
        }
        self.validate_targets()?;
        if self.steps == 0 || self.steps > MAX_SUITE_STEPS {
            return Err(format!(
                "steps: must lie in [1, {MAX_SUITE_STEPS}] (got {})",
                self.steps
            ));
        }
        Ok(())
    }

    /// Each target against the suite's sections, and their names unique.
    fn validate_targets(&self) -> Result<(), String> {
        if self.targets.len() > MAX_TARGETS {
            return Err(format!(
                "targets: at most {MAX_TARGETS} (got {})",
                self.targets.len()
            ));
        }
        let cases = self.cases();
        for (i, t) in self.targets.iter().enumerate() {
            t.validate(&format!("targets[{i}]"), &cases)?;
            if self.targets[..i].iter().any(|o| o.name == t.name) {
                return Err(format!(
                    "targets[{i}].name: {:?} names an earlier target too",
                    t.name
                ));
            }
        }
        Ok(())
    }

    /// The cases the suite runs, as targets select them.
    pub fn cases(&self) -> Cases {
        let mut results: Vec<String> = self.all_networks().iter().map(|n| n.label()).collect();
        results.extend(self.scenarios.iter().map(|s| s.label()));
        Cases {
            results: (!results.is_empty()).then_some(results),
            fairness: self
                .fairness
                .as_ref()
                .map(|f| f.all_networks().iter().map(|n| n.label()).collect()),
            fairness_flows: self
                .fairness
                .as_ref()
                .map_or_else(Vec::new, |f| f.flows.clone()),
            friendliness: self
                .friendliness
                .as_ref()
                .map(|f| f.networks().iter().map(|(_, n)| n.label()).collect()),
        }
    }

    /// The explicit networks, then those of the sweeps.
    pub fn all_networks(&self) -> Vec<SuiteNetwork> {
        let mut out = self.networks.clone();
        out.extend(
            self.sweeps
                .iter()
                .flat_map(|s| s.networks().into_iter().map(|(_, n)| n)),
        );
        out
    }

    /// The objectives to run: the suite's, or the balanced one.
    pub fn objectives_or_default(&self) -> Vec<[f64; 3]> {
        self.objectives
            .clone()
            .unwrap_or_else(|| vec![[1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0]])
    }
}

/// The most MIs a network of a suite runs for.
pub const MAX_SUITE_STEPS: u32 = 1_000_000;

/// The longest simulated run of a suite entry (about 28 hours), as for `scenarios:` entries.
pub const MAX_RUN_S: f64 = 1e5;

/// The longest time series a suite draws (an hour): every MI of it is kept for the figure.
pub const MAX_TIMESERIES_S: f64 = 3600.0;

/// The most MIs a time series of `steps` keeps.
pub const MAX_TIMESERIES_MIS: usize = 1_000_000;

fn positive_secs(field: &str, v: f64) -> Result<(), String> {
    if v.is_finite() && v > 0.0 && v <= MAX_RUN_S {
        Ok(())
    } else {
        Err(format!(
            "{field}: must lie in (0, {MAX_RUN_S}] seconds (got {v})"
        ))
    }
}

/// One-parameter sweeps around a base network (the `sweeps:` section of a suite).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    /// The network every sweep varies one parameter of.
    pub base: SuiteNetwork,
    /// Bandwidths (packets/s).
    #[serde(default)]
    pub bw_pps: Vec<f64>,
    /// One-way delays (s).
    #[serde(default)]
    pub delay_s: Vec<f64>,
    /// Random loss rates.
    #[serde(default)]
    pub loss: Vec<f64>,
    /// Buffer sizes (packets).
    #[serde(default)]
    pub queue_pkts: Vec<f64>,
}

/// A swept parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepParam {
    /// Bandwidth.
    Bandwidth,
    /// One-way delay.
    Delay,
    /// Random loss.
    Loss,
    /// Buffer size.
    Queue,
}

impl SweepParam {
    /// Every parameter, in figure order.
    pub const ALL: [SweepParam; 4] = [
        SweepParam::Bandwidth,
        SweepParam::Delay,
        SweepParam::Loss,
        SweepParam::Queue,
    ];

    /// Axis label with units.
    pub fn label(self) -> &'static str {
        match self {
            SweepParam::Bandwidth => "bandwidth (packets/s)",
            SweepParam::Delay => "base RTT (ms)",
            SweepParam::Loss => "random loss rate (fraction of packets)",
            SweepParam::Queue => "buffer (packets)",
        }
    }

    /// Short name in panel titles.
    pub fn name(self) -> &'static str {
        match self {
            SweepParam::Bandwidth => "bandwidth",
            SweepParam::Delay => "base RTT",
            SweepParam::Loss => "random loss",
            SweepParam::Queue => "buffer",
        }
    }

    /// The value shown on the x axis for a network.
    pub fn axis_value(self, n: &SuiteNetwork) -> f64 {
        match self {
            SweepParam::Bandwidth => n.bw_pps,
            SweepParam::Delay => 2000.0 * n.delay_s,
            SweepParam::Loss => n.loss,
            SweepParam::Queue => n.queue_pkts,
        }
    }
}

impl SweepSpec {
    /// The networks of every sweep, with the parameter they belong to.
    pub fn networks(&self) -> Vec<(SweepParam, SuiteNetwork)> {
        let b = self.base;
        let mut out = Vec::new();
        for &v in &self.bw_pps {
            out.push((SweepParam::Bandwidth, SuiteNetwork { bw_pps: v, ..b }));
        }
        for &v in &self.delay_s {
            out.push((SweepParam::Delay, SuiteNetwork { delay_s: v, ..b }));
        }
        for &v in &self.loss {
            out.push((SweepParam::Loss, SuiteNetwork { loss: v, ..b }));
        }
        for &v in &self.queue_pkts {
            out.push((SweepParam::Queue, SuiteNetwork { queue_pkts: v, ..b }));
        }
        out
    }
}

/// The `friendliness:` section: one flow of the scheme against one Cubic flow, on the
/// network's buffer or on buffers of several bandwidth-delay products.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FriendlinessSpec {
    /// The bottleneck.
    pub network: FlowNetwork,
    /// Length of the run (s); the first 5 s are not counted.
    pub duration_s: f64,
    /// Buffers to run, in bandwidth-delay products of the network (its `queue_pkts` is then
    /// replaced); e.g. `[1, 4]` for a shallow and a deep buffer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub buffers_bdp: Vec<f64>,
    /// The learned flow's objective (default: the policy's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<[f64; 3]>,
    /// Which Cubic the simulator runs beside it: `cubic` (default; paced, as Linux paces it
    /// under the fq qdisc) or `cubic_unpaced` (clocked out by the ACKs, as Linux's Cubic
    /// leaves a host whose qdisc does not pace it, `mocc net`'s real path among them).
    #[serde(default = "paced_cubic", skip_serializing_if = "is_paced_cubic")]
    pub cubic: ClassicKind,
}

fn paced_cubic() -> ClassicKind {
    ClassicKind::Cubic
}

fn is_paced_cubic(k: &ClassicKind) -> bool {
    *k == ClassicKind::Cubic
}

impl FriendlinessSpec {
    /// The networks to run, with the buffer label (`""` for the network's own buffer, else
    /// e.g. `"4bdp"`).
    pub fn networks(&self) -> Vec<(String, FlowNetwork)> {
        if self.buffers_bdp.is_empty() {
            return vec![(String::new(), self.network)];
        }
        let bdp = self.network.bw_pps * 2.0 * self.network.delay_s;
        self.buffers_bdp
            .iter()
            .map(|&k| {
                let queue_pkts = (k * bdp).round().max(1.0);
                (
                    format!("{k}bdp"),
                    FlowNetwork {
                        queue_pkts,
                        ..self.network
                    },
                )
            })
            .collect()
    }

    fn validate(&self) -> Result<(), String> {
        positive_secs("friendliness.duration_s", self.duration_s)?;
        if self.duration_s <= 5.0 {
            return Err("friendliness.duration_s: must exceed the 5 s warm-up".into());
        }
        for (i, k) in self.buffers_bdp.iter().enumerate() {
            if !(k.is_finite() && *k > 0.0 && *k <= 100.0) {
                return Err(format!(
                    "friendliness.buffers_bdp[{i}]: must lie in (0, 100] (got {k})"
                ));
            }
        }
        if !matches!(self.cubic, ClassicKind::Cubic | ClassicKind::CubicUnpaced) {
            return Err(format!(
                "friendliness.cubic: must be cubic or cubic_unpaced (got {})",
                self.cubic.name()
            ));
        }
        if let Some(w) = &self.objective {
            mocc_gym::config::validate_objective("friendliness.objective", w)
                .map_err(|e| e.to_string())?;
        }
        for (i, (_, n)) in self.networks().iter().enumerate() {
            n.validate()
                .map_err(|e| format!("friendliness.network[{i}]: {e}"))?;
        }
        Ok(())
    }
}

/// A scenario file every policy runs for `duration_s` simulated seconds (`scenarios:` entries),
/// once per objective and seed; its learned senders are all driven by the policy (or, for a
/// baseline, become senders of that scheme).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioRunSpec {
    /// Scenario file (relative to the suite file).
    pub scenario: PathBuf,
    /// Simulated seconds of each run.
    pub duration_s: f64,
    /// Seeds (default: the suite's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seeds: Option<Vec<u64>>,
    /// A fixed bottleneck in place of the file's (its schedules, outages, traces and random
    /// changes go too; its packet trains stay): one scenario file of senders run on several
    /// links.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<SuiteNetwork>,
}

impl ScenarioRunSpec {
    /// Checks the entry; `field` names it in messages (`scenarios[0]`).
    pub fn validate(&self, field: &str) -> Result<(), String> {
        if !(self.duration_s.is_finite() && self.duration_s > 0.0 && self.duration_s <= MAX_RUN_S) {
            return Err(format!(
                "{field}.duration_s: must lie in (0, {MAX_RUN_S}] (got {})",
                self.duration_s
            ));
        }
        if self.seeds.as_ref().is_some_and(Vec::is_empty) {
            return Err(format!("{field}.seeds: at least one seed is required"));
        }
        if let Some(n) = &self.network {
            ScenarioConfig::fixed_link(n.bw_pps, n.delay_s, n.queue_pkts, n.loss)
                .validate()
                .map_err(|e| format!("{field}.network: {e}"))?;
        }
        Ok(())
    }

    /// A short label for results.csv: the file's name without extension, and the network's
    /// label when the entry gives one (`fast-link-bw83333_d0.025_q4167_l0`).
    pub fn label(&self) -> String {
        let stem = self
            .scenario
            .file_stem()
            .map_or_else(|| "scenario".into(), |s| s.to_string_lossy().into_owned());
        match &self.network {
            Some(n) => format!("{stem}-{}", n.label()),
            None => stem,
        }
    }
}

/// A scenario file whose time series each policy draws (`timeseries:` entries). Give
/// `duration_s` (every scheme covers the same simulated time) or, as older suites do, `steps`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeSeriesSpec {
    /// Scenario file (relative to the suite file).
    pub scenario: PathBuf,
    /// Simulated seconds each policy runs (until the first MI that ends at or after it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// MIs each policy runs instead (schemes with longer MIs then run longer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<usize>,
}

impl TimeSeriesSpec {
    /// Checks the entry; `field` names it in messages (`timeseries[0]`).
    pub fn validate(&self, field: &str) -> Result<(), String> {
        match (self.duration_s, self.steps) {
            (Some(_), Some(_)) => Err(format!("{field}: give duration_s or steps, not both")),
            (None, None) => Err(format!("{field}.duration_s: required (or steps)")),
            (Some(d), None) if !(d.is_finite() && d > 0.0 && d <= MAX_TIMESERIES_S) => Err(
                format!("{field}.duration_s: must lie in (0, {MAX_TIMESERIES_S}] (got {d})"),
            ),
            (None, Some(n)) if n == 0 || n > MAX_TIMESERIES_MIS => Err(format!(
                "{field}.steps: must lie in [1, {MAX_TIMESERIES_MIS}] (got {n})"
            )),
            _ => Ok(()),
        }
    }

    /// How long each policy runs.
    pub fn horizon(&self) -> Horizon {
        match (self.duration_s, self.steps) {
            (Some(d), _) => Horizon::Seconds(d),
            (None, Some(n)) => Horizon::Mis(n),
            (None, None) => Horizon::Mis(0),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The base network the sweep tests vary: 500 pkt/s, 30 ms one way, 100 packets.
    pub(crate) fn base_network() -> SuiteNetwork {
        SuiteNetwork {
            bw_pps: 500.0,
            delay_s: 0.03,
            queue_pkts: 100.0,
            loss: 0.0,
        }
    }

    #[test]
    fn sweeps_vary_one_parameter_each() {
        let base = base_network();
        let spec = SweepSpec {
            base,
            bw_pps: vec![100.0, 200.0],
            delay_s: vec![0.1],
            loss: vec![],
            queue_pkts: vec![10.0],
        };
        let n = spec.networks();
        assert_eq!(n.len(), 4);
        assert_eq!(
            n[1],
            (
                SweepParam::Bandwidth,
                SuiteNetwork {
                    bw_pps: 200.0,
                    ..base
                }
            )
        );
        assert_eq!(n[2].1.delay_s, 0.1);
        assert_eq!(n[2].1.bw_pps, 500.0);
        assert_eq!(SweepParam::Delay.axis_value(&n[2].1), 200.0);
    }

    #[test]
    fn friendliness_runs_beside_a_paced_cubic_unless_told_otherwise() {
        let net = "network: {bw_pps: 1000, delay_s: 0.02, queue_pkts: 40}, duration_s: 45";
        let plain: FriendlinessSpec = serde_saphyr::from_str(&format!("{{{net}}}")).unwrap();
        assert_eq!(plain.cubic, ClassicKind::Cubic);
        assert_eq!(plain.validate(), Ok(()));
        let unpaced: FriendlinessSpec =
            serde_saphyr::from_str(&format!("{{{net}, cubic: cubic_unpaced}}")).unwrap();
        assert_eq!(unpaced.cubic, ClassicKind::CubicUnpaced);
        assert_eq!(unpaced.validate(), Ok(()));
        let other: FriendlinessSpec =
            serde_saphyr::from_str(&format!("{{{net}, cubic: bbr}}")).unwrap();
        assert!(other
            .validate()
            .unwrap_err()
            .contains("friendliness.cubic: must be cubic or cubic_unpaced (got bbr)"));
        assert!(
            serde_saphyr::from_str::<FriendlinessSpec>(&format!("{{{net}, cubic: reno}}")).is_err()
        );
    }

    #[test]
    fn timeseries_entries_take_a_duration_or_old_steps() {
        let new: TimeSeriesSpec =
            serde_saphyr::from_str("{scenario: leo.yaml, duration_s: 30}").unwrap();
        assert_eq!(new.horizon(), Horizon::Seconds(30.0));
        assert_eq!(new.validate("timeseries[0]"), Ok(()));
        let old: TimeSeriesSpec =
            serde_saphyr::from_str("{scenario: leo.yaml, steps: 1500}").unwrap();
        assert_eq!(old.horizon(), Horizon::Mis(1500));
        assert_eq!(old.validate("timeseries[0]"), Ok(()));
        let both: TimeSeriesSpec =
            serde_saphyr::from_str("{scenario: a.yaml, steps: 5, duration_s: 3}").unwrap();
        assert!(both.validate("t").unwrap_err().contains("not both"));
        let none: TimeSeriesSpec = serde_saphyr::from_str("{scenario: a.yaml}").unwrap();
        assert!(none.validate("t").unwrap_err().contains("t.duration_s"));
        let bad: TimeSeriesSpec =
            serde_saphyr::from_str("{scenario: a.yaml, duration_s: -1}").unwrap();
        assert!(bad
            .validate("t")
            .unwrap_err()
            .contains("must lie in (0, 3600]"));
        let endless: TimeSeriesSpec =
            serde_saphyr::from_str("{scenario: a.yaml, duration_s: 1e9}").unwrap();
        assert!(endless.validate("t").unwrap_err().contains("t.duration_s"));
        let many: TimeSeriesSpec =
            serde_saphyr::from_str("{scenario: a.yaml, steps: 1000001}").unwrap();
        assert!(many
            .validate("t")
            .unwrap_err()
            .contains("t.steps: must lie in [1, 1000000]"));
    }
}
