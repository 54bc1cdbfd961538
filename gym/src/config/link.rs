//! The `link:` section: the bottleneck's ranges, schedules, outages, traces, random path
//! changes and host noise, and their validation.

use super::checks::{non_negative, positive, probability};
use super::range::{is_zero_range, one, one_range, zero_range, AuroraExpRange, QueueRange, Range};
use crate::error::ScenarioError;
use crate::limits::{MAX_DELAY_S, MAX_LINK_BANDWIDTH_PPS, MAX_QUEUE_PKTS, MIN_LINK_BANDWIDTH_PPS};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

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
    /// Packet trains, a cheaper model of fast links: a learned or constant-rate sender paced
    /// above this rate (packets/s) sends trains of `floor(rate / this)` back-to-back packets
    /// (at most a quarter of the queue), each simulated as one packet. Classic senders and
    /// trace-driven links simulate every packet. Absent: every packet is simulated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trains_above_pps: Option<f64>,
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

/// The lowest `trains_above_pps`: a train model of slower links saves little and coarsens
/// what the MIs see.
pub const MIN_TRAIN_PPS: f64 = 1000.0;

fn default_changes_horizon() -> f64 {
    600.0
}

impl PathChangesConfig {
    pub(super) fn validate(&self) -> Result<(), ScenarioError> {
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
            trains_above_pps: None,
        }
    }
}

impl LinkConfig {
    pub(super) fn validate(&self) -> Result<(), ScenarioError> {
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
        self.validate_queue()?;
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
        if let Some(above) = self.trains_above_pps {
            if !(above.is_finite() && above >= MIN_TRAIN_PPS) {
                return Err(ScenarioError::invalid(
                    "link.trains_above_pps",
                    format!("must be at least {MIN_TRAIN_PPS} packets/s (got {above})"),
                ));
            }
        }
        self.validate_schedule()?;
        self.validate_outages()
    }

    /// `queue_pkts`: a whole number of packets, a range of them, or Aurora's exponent range.
    fn validate_queue(&self) -> Result<(), ScenarioError> {
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
        Ok(())
    }

    /// `schedule` (steps at increasing times, each value within the link's bounds) and
    /// `schedule_period_s`.
    fn validate_schedule(&self) -> Result<(), ScenarioError> {
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
        Ok(())
    }

    /// `outages`: each starts at or after 0, lasts a positive time and repeats after it ends.
    fn validate_outages(&self) -> Result<(), ScenarioError> {
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
