//! A validated scenario, ready to build networks: the config plus its loaded trace.

use crate::config::{
    ControllerConfig, OutageConfig, PathChangesConfig, QueueRange, Range, ScenarioConfig,
    ScheduleEntry, SenderConfig, StartRate,
};
use crate::error::ScenarioError;
use crate::link::{Link, LinkParams};
use crate::sim::Pacing;
use crate::trace::Trace;
use mocc_policy::ActionRule;
use rand::Rng;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A scenario whose every value was checked and whose trace (if any) was loaded.
#[derive(Debug, Clone)]
pub struct Scenario {
    config: ScenarioConfig,
    trace: Option<Arc<Trace>>,
    outages: Arc<[crate::config::OutageConfig]>,
    source: Option<PathBuf>,
}

/// One episode's draw of the random parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EpisodeParams {
    /// Link parameters at time 0.
    pub link: LinkParams,
}

/// Refuses a scenario text with no content (empty, blank or only comments), which would
/// otherwise parse as the default scenario.
pub fn require_content(text: &str, origin: &Path) -> Result<(), ScenarioError> {
    let blank = text.lines().all(|line| {
        let t = line.trim();
        t.is_empty() || t.starts_with('#') || t == "---" || t == "..."
    });
    if blank {
        return Err(ScenarioError::Parse {
            path: origin.to_path_buf(),
            message: "empty scenario (no keys); write the fields, or `{}` for the defaults".into(),
        });
    }
    Ok(())
}

impl Scenario {
    /// Validates `config`; a relative trace path is resolved against `base_dir`, and the
    /// config keeps the resolved path, so a scenario rebuilt from [`Self::config`] (by a
    /// command that swaps its senders or observation) reads the same trace from any working
    /// directory.
    pub fn new(config: ScenarioConfig, base_dir: Option<&Path>) -> Result<Self, ScenarioError> {
        let mut config = config.expanded()?;
        config.validate()?;
        let trace = match &config.link.trace {
            Some(p) => {
                let path = match base_dir {
                    Some(dir) if p.is_relative() => dir.join(p),
                    _ => p.clone(),
                };
                let trace = Arc::new(Trace::load(&path)?);
                config.link.trace = Some(path);
                Some(trace)
            }
            None => None,
        };
        let outages = Arc::from(config.link.outages.clone());
        Ok(Self {
            config,
            trace,
            outages,
            source: None,
        })
    }

    /// Parses and validates YAML text; `origin` names it in errors and anchors relative paths.
    pub fn from_yaml_str(text: &str, origin: &Path) -> Result<Self, ScenarioError> {
        require_content(text, origin)?;
        let config: ScenarioConfig =
            serde_saphyr::from_str(text).map_err(|e| ScenarioError::Parse {
                path: origin.to_path_buf(),
                message: e.to_string(),
            })?;
        let mut s = Self::new(config, origin.parent()).map_err(|e| e.in_file(origin))?;
        s.source = Some(origin.to_path_buf());
        Ok(s)
    }

    /// Reads, parses and validates a scenario file.
    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        let text = mocc_policy::error::read_text(path)?;
        Self::from_yaml_str(&text, path)
    }

    /// The same scenario with the agent sender starting at exactly `rate_pps` (validated > 0).
    pub fn with_agent_start_rate(&self, rate_pps: f64) -> Result<Self, ScenarioError> {
        if !(rate_pps.is_finite() && rate_pps > 0.0) {
            return Err(ScenarioError::invalid(
                "rate_pps",
                format!("must be > 0 (got {rate_pps})"),
            ));
        }
        let mut s = self.clone();
        let agent = s.config.agent_index();
        s.config.senders[agent].start_rate = StartRate::Pps(Range::Fixed(rate_pps));
        Ok(s)
    }

    /// The same scenario with episodes of `mis` MIs (`u32::MAX`: one long connection).
    pub fn with_episode_mis(&self, mis: u32) -> Self {
        let mut s = self.clone();
        s.config.episode_mis = mis.max(1);
        s
    }

    /// The parts of a link shared with the scenario (outages, trace), for re-attaching.
    pub(crate) fn shared_link_parts(
        &self,
    ) -> (
        Option<Arc<[crate::config::OutageConfig]>>,
        Option<Arc<Trace>>,
    ) {
        (Some(self.outages.clone()), self.trace.clone())
    }

    /// The validated config.
    pub fn config(&self) -> &ScenarioConfig {
        &self.config
    }

    /// The file it came from, if any.
    pub fn source(&self) -> Option<&Path> {
        self.source.as_deref()
    }

    /// The action rule.
    pub fn action_rule(&self) -> ActionRule {
        self.config.action
    }

    /// Observation length (`history_len * features`).
    pub fn obs_len(&self) -> usize {
        self.config.observation.obs_len()
    }

    /// Draws one episode's link parameters.
    pub fn sample_link<R: Rng>(&self, rng: &mut R) -> LinkParams {
        let l = &self.config.link;
        LinkParams {
            bandwidth_pps: sample(&l.bandwidth_pps, rng),
            delay_s: sample(&l.delay_s, rng),
            queue_pkts: sample_queue(&l.queue_pkts, rng),
            loss: sample(&l.loss, rng),
        }
    }

    /// Builds the link of an episode.
    pub fn build_link(&self, params: LinkParams) -> Link {
        let l = &self.config.link;
        let mut link = Link::fixed(params)
            .with_latency_noise(l.latency_noise)
            .with_schedule(&l.schedule, l.schedule_period_s);
        if !self.outages.is_empty() {
            link = link.with_outages(self.outages.clone());
        }
        if let Some(t) = &self.trace {
            link = link.with_trace(t.clone());
        }
        if let Some(above) = l.trains_above_pps {
            link = link.with_packet_trains(above);
        }
        link
    }

    /// Builds the link of an episode with what the scenario draws per episode on top of
    /// [`Scenario::build_link`]: random path changes and outages, host jitter and ack
    /// compression. Draws nothing from `rng` when none of them is configured.
    pub fn draw_link<R: Rng>(&self, params: LinkParams, rng: &mut R) -> Link {
        let l = &self.config.link;
        let mut link = self.build_link(params);
        let changing = l
            .changes
            .as_ref()
            .filter(|c| c.probability >= 1.0 || rng.random::<f64>() < c.probability);
        if let Some(changes) = changing {
            let (entries, outages) = draw_path_changes(changes, &params, rng);
            link = link
                .with_schedule(&entries, None)
                .with_drawn_outages(Some(self.outages.clone()), outages);
        }
        let jitter = sample(&l.jitter_s, rng);
        let aggregation = sample(&l.ack_aggregation_s, rng);
        link.with_host_noise(jitter, aggregation)
    }

    /// Draws the random loss of an episode where a classic sender takes part, when the link
    /// sets one for such episodes (`link.cross_traffic_loss`); draws nothing otherwise.
    pub fn draw_cross_traffic_loss<R: Rng>(&self, rng: &mut R) -> Option<f64> {
        self.config
            .link
            .cross_traffic_loss
            .as_ref()
            .map(|r| sample(r, rng))
    }

    /// Draws an episode's MI timing jitter (a fraction; 0: off).
    pub fn draw_mi_jitter<R: Rng>(&self, rng: &mut R) -> f64 {
        sample(&self.config.mi_jitter, rng)
    }

    /// Draws when a sender starts and leaves in an episode, and whether it takes part at all:
    /// `None` when it sits this episode out.
    pub fn draw_presence<R: Rng>(sender: &SenderConfig, rng: &mut R) -> Option<(f64, f64)> {
        if sender.probability < 1.0 && rng.random::<f64>() >= sender.probability {
            return None;
        }
        let start = sample(&sender.start_time_s, rng);
        let stop = match (&sender.stop_time_s, &sender.duration_s) {
            (Some(r), _) => sample(r, rng),
            (None, Some(d)) => start + sample(d, rng),
            (None, None) => f64::INFINITY,
        };
        Some((start, stop))
    }

    /// Draws how many learned flows take part in an episode (`flow_count`; None without).
    pub fn draw_flow_count<R: Rng>(&self, rng: &mut R) -> Option<usize> {
        self.config.flow_count.map(|c| {
            let (lo, hi) = (c.count.min as usize, c.count.max as usize);
            if lo == hi {
                lo
            } else {
                rng.random_range(lo..=hi)
            }
        })
    }

    /// The capacity start-rate factors refer to: the trace's mean rate, else the bandwidth.
    pub fn nominal_capacity_pps(&self, link: &LinkParams) -> f64 {
        self.trace
            .as_ref()
            .map_or(link.bandwidth_pps, |t| t.mean_rate_pps())
    }

    /// Draws a sender's start rate for an episode on `link`.
    pub fn sample_start_rate<R: Rng>(
        &self,
        sender: &SenderConfig,
        link: &LinkParams,
        rng: &mut R,
    ) -> f64 {
        match &sender.start_rate {
            StartRate::BandwidthFactor(r) => sample(r, rng) * self.nominal_capacity_pps(link),
            StartRate::Pps(r) => sample(r, rng),
        }
    }

    /// The pacing of a sender's controller.
    pub fn pacing(sender: &SenderConfig) -> Pacing {
        match sender.controller {
            ControllerConfig::OnOff { on_s, off_s, .. } => Pacing::OnOff { on_s, off_s },
            _ => Pacing::Continuous,
        }
    }
}

/// A schedule of random path changes up to the horizon and the outages that come with them.
fn draw_path_changes<R: Rng>(
    c: &PathChangesConfig,
    base: &LinkParams,
    rng: &mut R,
) -> (Vec<ScheduleEntry>, Vec<OutageConfig>) {
    let mut entries = Vec::new();
    let mut outages = Vec::new();
    let mut t = sample(&c.every_s, rng);
    while t < c.horizon_s {
        entries.push(ScheduleEntry {
            time_s: t,
            bandwidth_pps: Some(base.bandwidth_pps * sample(&c.bandwidth_factor, rng)),
            delay_s: Some(base.delay_s * sample(&c.delay_factor, rng)),
            loss: None,
        });
        if c.outage_probability > 0.0 && rng.random::<f64>() < c.outage_probability {
            let duration_s = sample(&c.outage_s, rng);
            if duration_s > 0.0 {
                outages.push(OutageConfig {
                    start_s: t,
                    duration_s,
                    period_s: None,
                });
            }
        }
        t += sample(&c.every_s, rng);
    }
    (entries, outages)
}

fn sample<R: Rng>(r: &Range, rng: &mut R) -> f64 {
    match *r {
        Range::Fixed(v) => v,
        Range::Uniform(u) if u.min == u.max => u.min,
        Range::Uniform(u) => rng.random_range(u.min..u.max),
    }
}

fn sample_queue<R: Rng>(q: &QueueRange, rng: &mut R) -> f64 {
    match *q {
        QueueRange::Fixed(v) => v,
        QueueRange::Uniform(u) => sample(&Range::Uniform(u), rng).floor().max(1.0),
        QueueRange::AuroraExp(e) => {
            1.0 + sample(&Range::uniform(e.exp_min, e.exp_max), rng)
                .exp()
                .floor()
        }
    }
}
