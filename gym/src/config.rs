//! Scenario files: every link parameter, sender, schedule, trace, MI rule, episode length,
//! observation and reward of an environment, as YAML.
//!
//! Parsing is strict (`deny_unknown_fields`), and [`ScenarioConfig::validate`] checks every value,
//! returning an error that names the field. The defaults reproduce Aurora's environment
//! (PCC-RL `network_sim.py`); `configs/aurora-env.yaml` spells them out.

use crate::cc::ClassicKind;
use crate::error::ScenarioError;
use crate::limits::{
    fmt_number, MAX_DELAY_S, MAX_LINK_BANDWIDTH_PPS, MAX_QUEUE_PKTS, MAX_SIM_RATE_PPS,
    MIN_LINK_BANDWIDTH_PPS, MIN_SIM_RATE_PPS,
};
use crate::reward::RewardKind;
use mocc_policy::{LoopSpec, MetricsVersion, RateRule};
pub use mocc_policy::{MonitorIntervalConfig, ObservationConfig};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// A scalar parameter: a fixed value or a uniform range sampled per episode.
/// In YAML: a number, or `{min: A, max: B}`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Range {
    /// The same value every episode.
    Fixed(f64),
    /// `U(min, max)` per episode.
    Uniform(UniformRange),
}

/// Bounds of a uniform range.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UniformRange {
    /// Lower bound.
    pub min: f64,
    /// Upper bound (>= min).
    pub max: f64,
}

impl Range {
    /// `U(min, max)`.
    pub const fn uniform(min: f64, max: f64) -> Self {
        Range::Uniform(UniformRange { min, max })
    }

    /// Smallest value the range can produce.
    pub fn min(&self) -> f64 {
        match self {
            Range::Fixed(v) => *v,
            Range::Uniform(u) => u.min,
        }
    }

    /// Largest value the range can produce.
    pub fn max(&self) -> f64 {
        match self {
            Range::Fixed(v) => *v,
            Range::Uniform(u) => u.max,
        }
    }

    /// Checks the range lies in `[lo, hi]` (with `lo_open`: strictly above `lo`) and min <= max.
    fn check(&self, field: &str, lo: f64, lo_open: bool, hi: f64) -> Result<(), ScenarioError> {
        let bound = |which: &str, v: f64| -> Result<(), ScenarioError> {
            let name = match self {
                Range::Fixed(_) => field.to_string(),
                Range::Uniform(_) => format!("{field}.{which}"),
            };
            let below = if lo_open { v <= lo } else { v < lo };
            if !v.is_finite() || below || v > hi {
                let interval = if lo_open { "(" } else { "[" };
                return Err(ScenarioError::invalid(
                    name,
                    format!(
                        "must lie in {interval}{}, {}] (got {})",
                        fmt_number(lo),
                        fmt_number(hi),
                        fmt_number(v)
                    ),
                ));
            }
            Ok(())
        };
        bound("min", self.min())?;
        bound("max", self.max())?;
        if self.min() > self.max() {
            return Err(ScenarioError::invalid(
                format!("{field}.min"),
                format!("min {} is greater than max {}", self.min(), self.max()),
            ));
        }
        Ok(())
    }
}

/// Queue capacity in packets. In YAML: a number, `{min: A, max: B}` or
/// `{exp_min: A, exp_max: B}`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(untagged)]
pub enum QueueRange {
    /// The same capacity every episode.
    Fixed(f64),
    /// `floor(U(min, max))` packets.
    Uniform(UniformRange),
    /// Aurora: `1 + floor(exp(U(exp_min, exp_max)))` packets.
    AuroraExp(AuroraExpRange),
}

/// Exponent bounds of Aurora's queue sampling.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuroraExpRange {
    /// Lower bound of the exponent.
    pub exp_min: f64,
    /// Upper bound of the exponent (>= exp_min).
    pub exp_max: f64,
}

/// Reads a number or a map whose keys must come from `keys`; the error of an unknown key names
/// it and lists the expected ones (untagged enums would only say "no variant matched").
struct NumberOrMap {
    keys: &'static [&'static str],
    expecting: &'static str,
}

enum NumberOrMapValue {
    Number(f64),
    Map([Option<f64>; 2], usize),
}

impl<'de> serde::de::Visitor<'de> for NumberOrMap {
    type Value = NumberOrMapValue;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.expecting)
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(NumberOrMapValue::Number(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(NumberOrMapValue::Number(v as f64))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(NumberOrMapValue::Number(v as f64))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        // keys come in pairs: [lo, hi] of one form; `form` is the pair index (0 or 1).
        let mut values = [None, None];
        let mut form = None;
        while let Some(key) = map.next_key::<String>()? {
            let Some(pos) = self.keys.iter().position(|k| *k == key) else {
                return Err(serde::de::Error::unknown_field(&key, self.keys));
            };
            let (pair, slot) = (pos / 2, pos % 2);
            if form.is_some_and(|f| f != pair) {
                return Err(serde::de::Error::custom(format!(
                    "`{key}` cannot be combined with `{}`",
                    self.keys[form.unwrap_or(0) * 2]
                )));
            }
            form = Some(pair);
            if values[slot].is_some() {
                return Err(serde::de::Error::duplicate_field(self.keys[pos]));
            }
            values[slot] = Some(map.next_value::<f64>()?);
        }
        let pair = form.unwrap_or(0);
        for (slot, v) in values.iter().enumerate() {
            if v.is_none() {
                return Err(serde::de::Error::missing_field(self.keys[pair * 2 + slot]));
            }
        }
        Ok(NumberOrMapValue::Map(values, pair))
    }
}

impl<'de> Deserialize<'de> for Range {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = d.deserialize_any(NumberOrMap {
            keys: &["min", "max"],
            expecting: "a number or {min: A, max: B}",
        })?;
        Ok(match v {
            NumberOrMapValue::Number(x) => Range::Fixed(x),
            NumberOrMapValue::Map([min, max], _) => Range::Uniform(UniformRange {
                min: min.unwrap_or_default(),
                max: max.unwrap_or_default(),
            }),
        })
    }
}

impl<'de> Deserialize<'de> for QueueRange {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = d.deserialize_any(NumberOrMap {
            keys: &["min", "max", "exp_min", "exp_max"],
            expecting: "a number, {min: A, max: B} or {exp_min: A, exp_max: B}",
        })?;
        Ok(match v {
            NumberOrMapValue::Number(x) => QueueRange::Fixed(x),
            NumberOrMapValue::Map([lo, hi], 0) => QueueRange::Uniform(UniformRange {
                min: lo.unwrap_or_default(),
                max: hi.unwrap_or_default(),
            }),
            NumberOrMapValue::Map([lo, hi], _) => QueueRange::AuroraExp(AuroraExpRange {
                exp_min: lo.unwrap_or_default(),
                exp_max: hi.unwrap_or_default(),
            }),
        })
    }
}

/// One step of a piecewise-constant link schedule: from `time_s` on, the given values hold.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleEntry {
    /// Start of this step, seconds since the episode began.
    pub time_s: f64,
    /// Bandwidth (packets/s) from `time_s` on; unchanged when absent.
    #[serde(default)]
    pub bandwidth_pps: Option<f64>,
    /// One-way propagation delay (s) from `time_s` on; unchanged when absent.
    #[serde(default)]
    pub delay_s: Option<f64>,
    /// Random loss probability from `time_s` on; unchanged when absent.
    #[serde(default)]
    pub loss: Option<f64>,
}

/// A window during which the link is down: every packet entering it is lost.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutageConfig {
    /// First start of the outage (s).
    pub start_s: f64,
    /// Length of each outage (s, > 0).
    pub duration_s: f64,
    /// Repeat every `period_s` seconds (> duration_s); once when absent.
    #[serde(default)]
    pub period_s: Option<f64>,
}

/// The bottleneck link and its return path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// Bottleneck bandwidth, packets/s (Aurora: U(100, 500)). Ignored for service when `trace`
    /// is given (the trace's mean rate is the capacity then).
    #[serde(default = "default_bandwidth")]
    pub bandwidth_pps: Range,
    /// One-way propagation delay of each direction, seconds (Aurora: U(0.05, 0.5)).
    #[serde(default = "default_delay")]
    pub delay_s: Range,
    /// Queue capacity, packets (Aurora: 1 + floor(exp(U(0, 8)))).
    #[serde(default = "default_queue")]
    pub queue_pkts: QueueRange,
    /// Random loss probability on the forward link (Aurora: U(0, 0.05)).
    #[serde(default = "default_loss")]
    pub loss: Range,
    /// Random loss probability drawn instead of `loss` in the episodes where a classic sender
    /// (cross traffic) takes part: a loss-based competitor such as Cubic fills the buffer only
    /// on a path that does not drop its packets at random, as most wired paths do not.
    /// Absent (the default): `loss` in every episode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross_traffic_loss: Option<Range>,
    /// Multiplicative latency noise: each hop's latency is scaled by U(1, 1 + latency_noise).
    /// 0 (the default, as in Aurora's published runs) turns it off.
    #[serde(default)]
    pub latency_noise: f64,
    /// Piecewise-constant changes of bandwidth, delay and loss (absolute values).
    #[serde(default)]
    pub schedule: Vec<ScheduleEntry>,
    /// Repeat the schedule with this period (s); it holds its last values when absent.
    #[serde(default)]
    pub schedule_period_s: Option<f64>,
    /// Link-down windows.
    #[serde(default)]
    pub outages: Vec<OutageConfig>,
    /// Mahimahi packet-delivery trace used as the service process (relative paths are relative
    /// to the scenario file).
    #[serde(default)]
    pub trace: Option<PathBuf>,
    /// Random path changes drawn per episode (bandwidth and base-RTT steps, outages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<PathChangesConfig>,
    /// Host RTT jitter (s): each ack comes back U(0, jitter_s) later; drawn per episode.
    #[serde(default = "zero_range", skip_serializing_if = "is_zero_range")]
    pub jitter_s: Range,
    /// Ack compression (s): acks reach the sender only at multiples of this interval (0: off);
    /// drawn per episode.
    #[serde(default = "zero_range", skip_serializing_if = "is_zero_range")]
    pub ack_aggregation_s: Range,
}

/// Random changes of the path during an episode, as at LEO handovers: every `every_s` seconds
/// the bandwidth and the one-way delay are set to the episode's drawn values times factors
/// drawn from `bandwidth_factor` and `delay_factor`; with probability `outage_probability` the
/// change starts with an outage of `outage_s`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathChangesConfig {
    /// Probability that an episode's path changes at all.
    #[serde(default = "one")]
    pub probability: f64,
    /// Seconds between changes.
    pub every_s: Range,
    /// Bandwidth after a change, as a factor of the episode's bandwidth.
    #[serde(default = "one_range")]
    pub bandwidth_factor: Range,
    /// One-way delay after a change, as a factor of the episode's delay.
    #[serde(default = "one_range")]
    pub delay_factor: Range,
    /// Probability that a change comes with an outage.
    #[serde(default)]
    pub outage_probability: f64,
    /// Length of an outage (s).
    #[serde(default = "zero_range")]
    pub outage_s: Range,
    /// Changes are drawn up to this time (s).
    #[serde(default = "default_changes_horizon")]
    pub horizon_s: f64,
}

fn one_range() -> Range {
    Range::Fixed(1.0)
}
fn default_changes_horizon() -> f64 {
    600.0
}

impl PathChangesConfig {
    fn validate(&self) -> Result<(), ScenarioError> {
        let f = |n: &str| format!("link.changes.{n}");
        probability(&f("probability"), self.probability)?;
        self.every_s.check(&f("every_s"), 0.0, true, 1e6)?;
        self.bandwidth_factor
            .check(&f("bandwidth_factor"), 0.0, true, 1e6)?;
        self.delay_factor
            .check(&f("delay_factor"), 0.0, true, 1e6)?;
        probability(&f("outage_probability"), self.outage_probability)?;
        self.outage_s.check(&f("outage_s"), 0.0, false, 1e6)?;
        if self.outage_s.max() >= self.every_s.min() {
            return Err(ScenarioError::invalid(
                f("outage_s"),
                format!(
                    "must be shorter than every_s ({} >= {})",
                    self.outage_s.max(),
                    self.every_s.min()
                ),
            ));
        }
        positive(&f("horizon_s"), self.horizon_s)?;
        if self.horizon_s / self.every_s.min() > 100_000.0 {
            return Err(ScenarioError::invalid(
                f("horizon_s"),
                "would draw more than 100000 changes per episode; raise every_s",
            ));
        }
        Ok(())
    }
}

fn default_bandwidth() -> Range {
    Range::uniform(100.0, 500.0)
}
fn default_delay() -> Range {
    Range::uniform(0.05, 0.5)
}
fn default_queue() -> QueueRange {
    QueueRange::AuroraExp(AuroraExpRange {
        exp_min: 0.0,
        exp_max: 8.0,
    })
}
fn default_loss() -> Range {
    Range::uniform(0.0, 0.05)
}

impl Default for LinkConfig {
    fn default() -> Self {
        Self {
            bandwidth_pps: default_bandwidth(),
            delay_s: default_delay(),
            queue_pkts: default_queue(),
            loss: default_loss(),
            cross_traffic_loss: None,
            latency_noise: 0.0,
            schedule: Vec::new(),
            schedule_period_s: None,
            outages: Vec::new(),
            trace: None,
            changes: None,
            jitter_s: zero_range(),
            ack_aggregation_s: zero_range(),
        }
    }
}

/// Who sets a sender's rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ControllerConfig {
    /// The learning agent: its rate changes by the action rule once per MI. Exactly one sender
    /// of a scenario is the agent.
    Agent,
    /// Paces at its start rate forever (cross traffic).
    Constant,
    /// Sends for `on_s`, stays silent for `off_s`, and repeats: at its start rate, or driven
    /// by the classic controller `cc` when given.
    OnOff {
        /// Length of each sending period (s, > 0).
        on_s: f64,
        /// Length of each silent period (s, > 0).
        off_s: f64,
        /// A classic controller driving the sending periods (none: the start rate).
        #[serde(default)]
        cc: Option<ClassicKind>,
    },
    /// Cubic (RFC 9438).
    Cubic,
    /// BBR v1.
    Bbr,
    /// Copa (default mode, delta 0.5).
    Copa,
    /// TCP Vegas.
    Vegas,
    /// PCC Vivace.
    Vivace,
}

impl ControllerConfig {
    /// The classic controller driving this sender, if any.
    pub fn classic(&self) -> Option<ClassicKind> {
        match *self {
            ControllerConfig::Cubic => Some(ClassicKind::Cubic),
            ControllerConfig::Bbr => Some(ClassicKind::Bbr),
            ControllerConfig::Copa => Some(ClassicKind::Copa),
            ControllerConfig::Vegas => Some(ClassicKind::Vegas),
            ControllerConfig::Vivace => Some(ClassicKind::Vivace),
            ControllerConfig::OnOff { cc, .. } => cc,
            ControllerConfig::Agent | ControllerConfig::Constant => None,
        }
    }

    /// The always-on controller of a classic kind.
    pub fn from_classic(kind: ClassicKind) -> Self {
        match kind {
            ClassicKind::Cubic => ControllerConfig::Cubic,
            ClassicKind::Bbr => ControllerConfig::Bbr,
            ClassicKind::Copa => ControllerConfig::Copa,
            ClassicKind::Vegas => ControllerConfig::Vegas,
            ClassicKind::Vivace => ControllerConfig::Vivace,
        }
    }
}

/// A sender's rate at the start of an episode.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum StartRate {
    /// A multiple of the episode's bottleneck capacity (Aurora: U(0.3, 1.5)).
    BandwidthFactor(Range),
    /// Packets per second.
    Pps(Range),
}

/// One sender on the bottleneck.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SenderConfig {
    /// Who sets the rate.
    #[serde(default = "default_controller")]
    pub controller: ControllerConfig,
    /// Rate at the start of the episode.
    #[serde(default = "default_start_rate")]
    pub start_rate: StartRate,
    /// Time of the sender's start (s), drawn per episode; it first sends one packet interval
    /// later.
    #[serde(default = "zero_range")]
    pub start_time_s: Range,
    /// Time the sender leaves (s), drawn per episode; a learned sender's trajectory ends with
    /// its first MI that closes after it. `None`: it stays to the end of the episode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_time_s: Option<Range>,
    /// Probability that the sender takes part in an episode (drawn per episode). The first
    /// learned sender always does.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub probability: f64,
    /// Round-trip time this sender's own access path adds to the link's (s): flows with
    /// different base RTTs on one bottleneck.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub extra_rtt_s: f64,
    /// The env observes and rewards this sender although it is not learned (evaluating a
    /// classic scheme in a learned sender's place). Learned senders are always observed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub observe: bool,
}

fn zero_range() -> Range {
    Range::Fixed(0.0)
}
fn is_zero_range(r: &Range) -> bool {
    *r == Range::Fixed(0.0)
}
fn one() -> f64 {
    1.0
}
fn is_one(p: &f64) -> bool {
    *p == 1.0
}
fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

fn default_controller() -> ControllerConfig {
    ControllerConfig::Agent
}
fn default_start_rate() -> StartRate {
    StartRate::BandwidthFactor(Range::uniform(0.3, 1.5))
}
fn default_senders() -> Vec<SenderConfig> {
    vec![SenderConfig::default()]
}

impl Default for SenderConfig {
    /// The agent, starting at U(0.3, 1.5) x capacity at time 0 (Aurora).
    fn default() -> Self {
        Self {
            controller: default_controller(),
            start_rate: default_start_rate(),
            start_time_s: zero_range(),
            stop_time_s: None,
            probability: 1.0,
            extra_rtt_s: 0.0,
            observe: false,
        }
    }
}

/// A whole environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioConfig {
    /// The bottleneck link.
    #[serde(default)]
    pub link: LinkConfig,
    /// The senders sharing it. The env observes and rewards every `controller: agent` sender,
    /// each with its own MI clock (or, without one, the first sender, e.g. to evaluate a classic
    /// one).
    #[serde(default = "default_senders")]
    pub senders: Vec<SenderConfig>,
    /// MI sizing.
    #[serde(default)]
    pub monitor_interval: MonitorIntervalConfig,
    /// MIs run by `reset` before the first observation (Aurora: 2; not recorded in the history).
    #[serde(default = "default_warmup")]
    pub warmup_mis: u32,
    /// Steps per episode; reaching it is a truncation (Aurora: 400).
    #[serde(default = "default_episode_mis")]
    pub episode_mis: u32,
    /// Observation features, history and latency baseline.
    #[serde(default)]
    pub observation: ObservationConfig,
    /// Reward of each MI: `aurora` or `mocc`.
    #[serde(default)]
    pub reward: RewardKind,
    /// Metric definitions: `aurora` (PCC-RL as published: recv rate counts one packet fewer,
    /// latency ratio 1 before any RTT sample) or `delivered` (the later PCC-RL revision MOCC
    /// builds on: recv rate = acked / duration, latency ratio 0 before any sample).
    #[serde(default)]
    pub metrics: MetricsVersion,
    /// The action rule and rate limits.
    #[serde(default)]
    pub action: RateRule,
    /// Objective weights (throughput, latency, loss) of the `mocc` reward until the trainer sets
    /// its own; positive, summing to 1.
    #[serde(default = "default_objective")]
    pub objective: [f64; 3],
    /// MI timing jitter of real hosts: each learned sender's MI lasts its clock's length times
    /// U(1 - j, 1 + j), with j drawn per episode from this range (0: off).
    #[serde(default = "zero_range", skip_serializing_if = "is_zero_range")]
    pub mi_jitter: Range,
    /// Optional reward terms added to the reward (each off by default).
    #[serde(default, skip_serializing_if = "crate::reward::RewardTerms::is_off")]
    pub reward_terms: crate::reward::RewardTerms,
    /// What the `mocc` reward's throughput term divides delivery by: the link's capacity
    /// (`link`, MOCC's) or the flow's fair share of it (`fair_share`).
    #[serde(
        default,
        skip_serializing_if = "crate::reward::RewardCapacity::is_link"
    )]
    pub reward_capacity: crate::reward::RewardCapacity,
}

fn default_warmup() -> u32 {
    2
}
fn default_episode_mis() -> u32 {
    400
}
fn default_objective() -> [f64; 3] {
    [1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0]
}

impl Default for ScenarioConfig {
    fn default() -> Self {
        Self {
            link: LinkConfig::default(),
            senders: default_senders(),
            monitor_interval: MonitorIntervalConfig::default(),
            warmup_mis: default_warmup(),
            episode_mis: default_episode_mis(),
            observation: ObservationConfig::default(),
            reward: RewardKind::default(),
            metrics: MetricsVersion::default(),
            action: RateRule::default(),
            objective: default_objective(),
            mi_jitter: zero_range(),
            reward_terms: crate::reward::RewardTerms::default(),
            reward_capacity: crate::reward::RewardCapacity::default(),
        }
    }
}

/// Checks an objective vector: three positive finite weights summing to 1 within 1e-6.
pub fn validate_objective(field: &str, w: &[f64; 3]) -> Result<(), ScenarioError> {
    mocc_policy::objective::validate(w).map_err(|m| ScenarioError::invalid(field, m))
}

fn positive(field: &str, v: f64) -> Result<(), ScenarioError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(ScenarioError::invalid(
            field,
            format!("must be > 0 (got {v})"),
        ))
    }
}

fn non_negative(field: &str, v: f64) -> Result<(), ScenarioError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(ScenarioError::invalid(
            field,
            format!("must be >= 0 (got {v})"),
        ))
    }
}

fn probability(field: &str, v: f64) -> Result<(), ScenarioError> {
    if (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(ScenarioError::invalid(
            field,
            format!("must lie in [0, 1] (got {v})"),
        ))
    }
}

impl LinkConfig {
    fn validate(&self) -> Result<(), ScenarioError> {
        self.bandwidth_pps.check(
            "link.bandwidth_pps",
            MIN_LINK_BANDWIDTH_PPS,
            false,
            MAX_LINK_BANDWIDTH_PPS,
        )?;
        self.delay_s.check("link.delay_s", 0.0, true, MAX_DELAY_S)?;
        self.loss.check("link.loss", 0.0, false, 1.0)?;
        if let Some(loss) = &self.cross_traffic_loss {
            loss.check("link.cross_traffic_loss", 0.0, false, 1.0)?;
            if self.schedule.iter().any(|e| e.loss.is_some()) {
                return Err(ScenarioError::invalid(
                    "link.cross_traffic_loss",
                    "cannot be combined with a link.schedule that sets loss",
                ));
            }
        }
        match self.queue_pkts {
            QueueRange::Fixed(q) => {
                Range::Fixed(q).check("link.queue_pkts", 1.0, false, MAX_QUEUE_PKTS)?;
                if q.fract() != 0.0 {
                    return Err(ScenarioError::invalid(
                        "link.queue_pkts",
                        format!("must be a whole number of packets (got {q})"),
                    ));
                }
            }
            QueueRange::Uniform(u) => {
                Range::Uniform(u).check("link.queue_pkts", 1.0, false, MAX_QUEUE_PKTS)?
            }
            QueueRange::AuroraExp(e) => {
                Range::uniform(e.exp_min, e.exp_max).check(
                    "link.queue_pkts.exp",
                    0.0,
                    false,
                    40.0,
                )?;
            }
        }
        non_negative("link.latency_noise", self.latency_noise)?;
        self.jitter_s.check("link.jitter_s", 0.0, false, 10.0)?;
        self.ack_aggregation_s
            .check("link.ack_aggregation_s", 0.0, false, 10.0)?;
        if let Some(c) = &self.changes {
            c.validate()?;
            if !self.schedule.is_empty() || self.trace.is_some() {
                return Err(ScenarioError::invalid(
                    "link.changes",
                    "cannot be combined with link.schedule or link.trace",
                ));
            }
        }
        let mut last = f64::NEG_INFINITY;
        for (i, e) in self.schedule.iter().enumerate() {
            let f = |name: &str| format!("link.schedule[{i}].{name}");
            non_negative(&f("time_s"), e.time_s)?;
            if e.time_s <= last {
                return Err(ScenarioError::invalid(
                    f("time_s"),
                    format!("times must increase (got {} after {last})", e.time_s),
                ));
            }
            last = e.time_s;
            if let Some(bw) = e.bandwidth_pps {
                Range::Fixed(bw).check(
                    &f("bandwidth_pps"),
                    MIN_LINK_BANDWIDTH_PPS,
                    false,
                    MAX_LINK_BANDWIDTH_PPS,
                )?;
            }
            if let Some(d) = e.delay_s {
                Range::Fixed(d).check(&f("delay_s"), 0.0, true, MAX_DELAY_S)?;
            }
            if let Some(l) = e.loss {
                probability(&f("loss"), l)?;
            }
        }
        if let Some(p) = self.schedule_period_s {
            positive("link.schedule_period_s", p)?;
            if self.schedule.last().is_some_and(|e| e.time_s >= p) {
                return Err(ScenarioError::invalid(
                    "link.schedule_period_s",
                    format!("must exceed the last schedule time (got {p})"),
                ));
            }
        }
        for (i, o) in self.outages.iter().enumerate() {
            let f = |name: &str| format!("link.outages[{i}].{name}");
            non_negative(&f("start_s"), o.start_s)?;
            positive(&f("duration_s"), o.duration_s)?;
            if let Some(p) = o.period_s {
                if !(p.is_finite() && p > o.duration_s) {
                    return Err(ScenarioError::invalid(
                        f("period_s"),
                        format!("must exceed duration_s {} (got {p})", o.duration_s),
                    ));
                }
            }
        }
        Ok(())
    }
}

impl ScenarioConfig {
    /// Checks every value; the error names the offending field.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        self.link.validate()?;
        if self.senders.is_empty() {
            return Err(ScenarioError::invalid(
                "senders",
                "at least one sender is required",
            ));
        }
        let first_agent = self.agent_index();
        for (i, s) in self.senders.iter().enumerate() {
            let f = |name: &str| format!("senders[{i}].{name}");
            s.start_time_s.check(&f("start_time_s"), 0.0, false, 1e9)?;
            if let Some(stop) = s.stop_time_s {
                stop.check(&f("stop_time_s"), 0.0, true, 1e9)?;
                if stop.min() <= s.start_time_s.max() {
                    return Err(ScenarioError::invalid(
                        f("stop_time_s"),
                        format!(
                            "must be after the latest start_time_s {} (got {})",
                            s.start_time_s.max(),
                            stop.min()
                        ),
                    ));
                }
            }
            probability(&f("probability"), s.probability)?;
            Range::Fixed(s.extra_rtt_s).check(&f("extra_rtt_s"), 0.0, false, MAX_DELAY_S)?;
            if i == first_agent && s.probability < 1.0 {
                return Err(ScenarioError::invalid(
                    f("probability"),
                    "the first sender the env observes takes part in every episode; must be 1",
                ));
            }
            match s.start_rate {
                StartRate::BandwidthFactor(r) => {
                    r.check(&f("start_rate.bandwidth_factor"), 0.0, true, 1e6)?
                }
                StartRate::Pps(r) => r.check(
                    &f("start_rate.pps"),
                    MIN_SIM_RATE_PPS,
                    false,
                    MAX_SIM_RATE_PPS,
                )?,
            }
            if let ControllerConfig::OnOff { on_s, off_s, .. } = s.controller {
                positive(&f("controller.on_off.on_s"), on_s)?;
                positive(&f("controller.on_off.off_s"), off_s)?;
            }
        }
        self.monitor_interval
            .validate()
            .map_err(|(f, m)| ScenarioError::invalid(format!("monitor_interval.{f}"), m))?;
        if self.episode_mis == 0 {
            return Err(ScenarioError::invalid(
                "episode_mis",
                "must be >= 1 (got 0)",
            ));
        }
        self.observation
            .validate()
            .map_err(|(f, m)| ScenarioError::invalid(format!("observation.{f}"), m))?;
        self.mi_jitter.check("mi_jitter", 0.0, false, 0.5)?;
        self.reward_terms.validate()?;
        if !self.reward_capacity.is_link() && self.reward != RewardKind::Mocc {
            return Err(ScenarioError::invalid(
                "reward_capacity",
                "fair_share needs `reward: mocc` (Aurora's reward does not normalize throughput)",
            ));
        }
        self.action
            .validate()
            .map_err(|e| ScenarioError::invalid("action", e.to_string()))?;
        validate_objective("objective", &self.objective)
    }

    /// The agent sender's loop (observation, metrics, MI sizing, warm-up, rate rule): the one a
    /// deployed `Controller` of a policy trained here runs.
    pub fn loop_spec(&self) -> LoopSpec<'_> {
        LoopSpec {
            observation: &self.observation,
            metrics: self.metrics,
            sizing: self.monitor_interval,
            warmup_mis: self.warmup_mis,
            rule: self.action,
        }
    }

    /// Sender `sender`'s loop: the agent's, without base-RTT probes and mode switch for an
    /// observed sender that sets its own rate (constant, on-off, classic).
    pub fn loop_spec_of(&self, sender: usize) -> LoopSpec<'_> {
        if self.acts(sender) {
            self.loop_spec()
        } else {
            self.loop_spec().without_probes()
        }
    }

    /// Whether sender `sender` is an agent (its rate is the policy's).
    fn acts(&self, sender: usize) -> bool {
        self.senders
            .get(sender)
            .is_some_and(|s| s.controller == ControllerConfig::Agent)
    }

    /// Whether a sender is the learning agent (training needs one).
    pub fn has_agent(&self) -> bool {
        self.senders
            .iter()
            .any(|s| s.controller == ControllerConfig::Agent)
    }

    /// Indices of the senders the env observes and rewards, one slot each: every `agent`
    /// sender and every sender marked `observe`, in order, or (without any) the first sender.
    pub fn observed_senders(&self) -> Vec<usize> {
        let agents: Vec<usize> = (0..self.senders.len())
            .filter(|&i| {
                self.senders[i].controller == ControllerConfig::Agent || self.senders[i].observe
            })
            .collect();
        if agents.is_empty() {
            vec![0]
        } else {
            agents
        }
    }

    /// Index of the (first) observed sender: the first agent, or the first sender without one.
    pub fn agent_index(&self) -> usize {
        self.senders
            .iter()
            .position(|s| s.controller == ControllerConfig::Agent)
            .unwrap_or(0)
    }

    /// A fixed single-bottleneck Aurora scenario (`--network bw_pps=..,delay_s=..,..`).
    pub fn fixed_link(bandwidth_pps: f64, delay_s: f64, queue_pkts: f64, loss: f64) -> Self {
        Self {
            link: LinkConfig {
                bandwidth_pps: Range::Fixed(bandwidth_pps),
                delay_s: Range::Fixed(delay_s),
                queue_pkts: QueueRange::Fixed(queue_pkts),
                loss: Range::Fixed(loss),
                ..LinkConfig::default()
            },
            ..Self::default()
        }
    }
}
