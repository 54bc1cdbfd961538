//! The LEO study ("An Experimental Study of Congestion Control in LEO Satellite Networks") in
//! the simulator: every scheme on the same LEO-like paths and micro-benchmarks, measured as the
//! study measures them.
//!
//! - **LEO paths** (its Figure 1 a-c): one flow for `duration_s` on a path that reconfigures
//!   every T seconds (Starlink's 15 s, and more and less often): at each reconfiguration the
//!   bandwidth and the base RTT jump to drawn values and the link is down for a handover
//!   (`handover_outage_s`, every packet in it lost); a 1-BDP buffer. Goodput (utilization of
//!   the capacity the path had), delay inflation (RTT over the base RTT in force) and the
//!   retransmission rate (lost over sent packets).
//! - **A second flow** started at `second_flow_at_s` on the same path (Figure 1d): the goodput
//!   ratio of the two flows while both run (the lower over the higher, 1 is an equal split).
//! - **Micro-benchmarks** (Figures 2-3): bandwidth steps, base-RTT steps and non-congestive
//!   random loss on an otherwise fixed link.
//! - **RTT fairness**: two flows, the second started 10 s later with a base RTT of 1x (intra-)
//!   or a multiple (inter-RTT) of the first's.
//! - **Many flows** (Figure 7): the `many_flows` fairness spec, run by
//!   [`crate::fairness_outputs::fairness_outputs`].
//!
//! Every scheme meets the same path for a seed (the path is drawn before any packet).

use crate::actor::LoadedPolicy;
use crate::flows::{jain_index, run_flows_on, Flow, FlowNetwork, FlowRates};
use crate::results::median;
use crate::suite::FairnessSpec;
use mocc_gym::config::{LinkConfig, PathChangesConfig, ScheduleEntry};
use mocc_gym::{Range, ScenarioError};
use serde::Serialize;

/// Bits of one packet, for goodput in Mbit/s.
pub const PACKET_BITS: f64 = 1500.0 * 8.0;

/// Seconds of each rate sample.
pub const WINDOW_S: f64 = 1.0;

/// When the second flow of an RTT-fairness run starts (s).
pub const RTT_FAIRNESS_SECOND_START_S: f64 = 10.0;

/// The study's reconfiguration interval (Starlink's 15 s), whose runs the verdicts judge.
pub const REFERENCE_RECONFIGURATION_S: f64 = 15.0;

/// The study's settings as this experiment runs them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeoStudy {
    /// The path's bandwidth before its first reconfiguration (packets/s; 8,333 is 100 Mbit/s).
    pub bandwidth_pps: f64,
    /// Its base RTT before the first reconfiguration (s).
    pub rtt_s: f64,
    /// Buffer, in bandwidth-delay products of the initial bandwidth and base RTT.
    pub buffer_bdp: f64,
    /// Length of the LEO-path runs (s).
    pub duration_s: f64,
    /// Seconds between reconfigurations, one set of runs each.
    pub reconfiguration_every_s: Vec<f64>,
    /// A reconfiguration sets the bandwidth to the initial one times a factor drawn from this.
    pub bandwidth_factor: (f64, f64),
    /// ... and the one-way delay to the initial one times a factor drawn from this.
    pub delay_factor: (f64, f64),
    /// How long the link is down at each reconfiguration (s).
    pub handover_outage_s: f64,
    /// When the second flow of the two-flow runs starts (s).
    pub second_flow_at_s: f64,
    /// Length of each micro-benchmark and RTT-fairness run (s).
    pub micro_duration_s: f64,
    /// Random loss rates of the non-congestive-loss benchmark.
    pub losses: Vec<f64>,
    /// Base RTT of the second flow over the first's in the RTT-fairness runs (1: intra-RTT).
    pub rtt_ratios: Vec<f64>,
    /// The many-flows runs (the study's Figure 7 setting).
    pub many_flows: FairnessSpec,
    /// Seeds of every run but the many-flows ones (each draws its own path).
    pub seeds: Vec<u64>,
}

impl LeoStudy {
    /// The study's settings: 100 Mbit/s, 40 ms, a 1-BDP buffer, 300 s runs reconfigured every
    /// 5, 15 or 30 s with 50 ms handovers, a second flow at 100 s, 100 s micro-benchmarks, and
    /// Figure 7's 5, 10 and 20 flows (100 Mbit/s, 50 ms, 5 BDP, started within 100 s, 150 s
    /// each); three seeds.
    pub fn standard() -> Self {
        Self {
            bandwidth_pps: 8333.0,
            rtt_s: 0.04,
            buffer_bdp: 1.0,
            duration_s: 300.0,
            reconfiguration_every_s: vec![5.0, 15.0, 30.0],
            bandwidth_factor: (0.5, 1.0),
            delay_factor: (0.75, 1.75),
            handover_outage_s: 0.05,
            second_flow_at_s: 100.0,
            micro_duration_s: 100.0,
            losses: vec![0.001, 0.005, 0.01, 0.02, 0.05],
            rtt_ratios: vec![1.0, 2.0, 4.0],
            many_flows: FairnessSpec {
                network: FlowNetwork {
                    bw_pps: 8333.0,
                    delay_s: 0.025,
                    queue_pkts: 2083.0,
                    loss: 0.0,
                },
                networks: Vec::new(),
                flows: vec![5, 10, 20],
                stagger_s: 0.0,
                starts_within_s: Some(100.0),
                flow_duration_s: Some(150.0),
                duration_s: 250.0,
                objectives: None,
                extra_rtt_s: Vec::new(),
                runs: 1,
                start_jitter_s: 0.0,
                record_mis: false,
            },
            seeds: vec![0, 1, 2],
        }
    }

    /// The same settings at a fifth of the time and one seed, for a first look.
    pub fn quick() -> Self {
        let full = Self::standard();
        Self {
            duration_s: 60.0,
            second_flow_at_s: 20.0,
            micro_duration_s: 40.0,
            many_flows: FairnessSpec {
                starts_within_s: Some(20.0),
                flow_duration_s: Some(30.0),
                duration_s: 50.0,
                ..full.many_flows.clone()
            },
            seeds: vec![0],
            ..full
        }
    }

    /// Checks the settings; the message names the field.
    pub fn validate(&self) -> Result<(), String> {
        let positive = |field: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(format!("{field}: must be a positive number (got {v})"))
            }
        };
        positive("bandwidth_pps", self.bandwidth_pps)?;
        positive("rtt_s", self.rtt_s)?;
        positive("buffer_bdp", self.buffer_bdp)?;
        positive("duration_s", self.duration_s)?;
        positive("micro_duration_s", self.micro_duration_s)?;
        if !(self.second_flow_at_s >= 0.0 && self.second_flow_at_s + WINDOW_S < self.duration_s) {
            return Err(format!(
                "second_flow_at_s: must lie in [0, duration_s - {WINDOW_S}) (got {})",
                self.second_flow_at_s
            ));
        }
        if self.micro_duration_s <= RTT_FAIRNESS_SECOND_START_S + WINDOW_S {
            return Err(format!(
                "micro_duration_s: must exceed {} s, the RTT-fairness runs' second start",
                RTT_FAIRNESS_SECOND_START_S + WINDOW_S
            ));
        }
        if self.seeds.is_empty() {
            return Err("seeds: at least one seed is required".into());
        }
        for (i, r) in self.rtt_ratios.iter().enumerate() {
            if !(r.is_finite() && *r >= 1.0) {
                return Err(format!("rtt_ratios[{i}]: must be >= 1 (got {r})"));
            }
        }
        for case in self.cases() {
            let scenario = mocc_gym::ScenarioConfig {
                link: case.link.clone(),
                ..mocc_gym::ScenarioConfig::default()
            };
            scenario
                .validate()
                .map_err(|e| format!("{} ({}): {e}", case.part.name(), case.x))?;
        }
        Ok(())
    }

    fn queue_pkts(&self) -> f64 {
        (self.buffer_bdp * self.bandwidth_pps * self.rtt_s)
            .round()
            .max(1.0)
    }

    /// The fixed link of the micro-benchmarks: the initial bandwidth and base RTT, a 1-BDP
    /// buffer, random loss `loss`.
    fn fixed_link(&self, loss: f64) -> LinkConfig {
        FlowNetwork {
            bw_pps: self.bandwidth_pps,
            delay_s: 0.5 * self.rtt_s,
            queue_pkts: self.queue_pkts(),
            loss,
        }
        .link_config()
    }

    /// The LEO-like path reconfigured every `every_s` seconds.
    pub fn leo_path(&self, every_s: f64) -> LinkConfig {
        LinkConfig {
            changes: Some(PathChangesConfig {
                probability: 1.0,
                every_s: Range::Fixed(every_s),
                bandwidth_factor: Range::uniform(self.bandwidth_factor.0, self.bandwidth_factor.1),
                delay_factor: Range::uniform(self.delay_factor.0, self.delay_factor.1),
                outage_probability: 1.0,
                outage_s: Range::Fixed(self.handover_outage_s),
                horizon_s: self.duration_s,
            }),
            ..self.fixed_link(0.0)
        }
    }

    /// The fixed link with its parameter `set` stepped every fifth of the run: the initial
    /// value, `factors[0]` times it, back, `factors[1]` times it, back.
    fn stepped_link(&self, factors: [f64; 2], set: impl Fn(f64) -> ScheduleEntry) -> LinkConfig {
        let step = self.micro_duration_s / 5.0;
        let schedule = [1.0, factors[0], 1.0, factors[1], 1.0]
            .iter()
            .enumerate()
            .skip(1)
            .map(|(k, &f)| ScheduleEntry {
                time_s: k as f64 * step,
                ..set(f)
            })
            .collect();
        LinkConfig {
            schedule,
            ..self.fixed_link(0.0)
        }
    }

    /// Every run a scheme makes (but the many-flows ones), in figure order.
    pub fn cases(&self) -> Vec<LeoCase> {
        let mut cases = Vec::new();
        let one = vec![FlowSlot::at(0.0)];
        for &every in &self.reconfiguration_every_s {
            cases.push(LeoCase {
                part: LeoPart::Single,
                x: every,
                link: self.leo_path(every),
                flows: one.clone(),
                duration_s: self.duration_s,
            });
        }
        for &every in &self.reconfiguration_every_s {
            cases.push(LeoCase {
                part: LeoPart::TwoFlows,
                x: every,
                link: self.leo_path(every),
                flows: vec![FlowSlot::at(0.0), FlowSlot::at(self.second_flow_at_s)],
                duration_s: self.duration_s,
            });
        }
        let bw = self.bandwidth_pps;
        let delay = 0.5 * self.rtt_s;
        cases.push(LeoCase {
            part: LeoPart::BandwidthSteps,
            x: 0.0,
            link: self.stepped_link([0.5, 0.25], |f| ScheduleEntry {
                time_s: 0.0,
                bandwidth_pps: Some(f * bw),
                delay_s: None,
                loss: None,
            }),
            flows: one.clone(),
            duration_s: self.micro_duration_s,
        });
        cases.push(LeoCase {
            part: LeoPart::RttSteps,
            x: 0.0,
            link: self.stepped_link([2.0, 3.0], |f| ScheduleEntry {
                time_s: 0.0,
                bandwidth_pps: None,
                delay_s: Some(f * delay),
                loss: None,
            }),
            flows: one.clone(),
            duration_s: self.micro_duration_s,
        });
        for &loss in &self.losses {
            cases.push(LeoCase {
                part: LeoPart::RandomLoss,
                x: loss,
                link: self.fixed_link(loss),
                flows: one.clone(),
                duration_s: self.micro_duration_s,
            });
        }
        for &ratio in &self.rtt_ratios {
            cases.push(LeoCase {
                part: LeoPart::RttFairness,
                x: ratio,
                link: self.fixed_link(0.0),
                flows: vec![
                    FlowSlot::at(0.0),
                    FlowSlot {
                        start_s: RTT_FAIRNESS_SECOND_START_S,
                        extra_rtt_s: (ratio - 1.0) * self.rtt_s,
                    },
                ],
                duration_s: self.micro_duration_s,
            });
        }
        cases
    }

    /// The reconfiguration interval the verdicts judge: the one nearest the study's 15 s.
    pub fn reference_interval_s(&self) -> Option<f64> {
        self.reconfiguration_every_s.iter().copied().min_by(|a, b| {
            (a - REFERENCE_RECONFIGURATION_S)
                .abs()
                .total_cmp(&(b - REFERENCE_RECONFIGURATION_S).abs())
        })
    }
}

/// Which of the study's experiments a run belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LeoPart {
    /// One flow on a LEO-like path (x: seconds between reconfigurations).
    Single,
    /// A second flow joins (x: seconds between reconfigurations).
    TwoFlows,
    /// Bandwidth steps (x: unused).
    BandwidthSteps,
    /// Base-RTT steps (x: unused).
    RttSteps,
    /// Non-congestive random loss (x: the loss rate).
    RandomLoss,
    /// Two flows with base RTTs in a ratio (x: the ratio; 1 is intra-RTT).
    RttFairness,
}

impl LeoPart {
    /// The name in leo.csv.
    pub fn name(self) -> &'static str {
        match self {
            LeoPart::Single => "single",
            LeoPart::TwoFlows => "two_flows",
            LeoPart::BandwidthSteps => "bandwidth_steps",
            LeoPart::RttSteps => "rtt_steps",
            LeoPart::RandomLoss => "random_loss",
            LeoPart::RttFairness => "rtt_fairness",
        }
    }

    /// What x means in leo.csv.
    pub fn x_name(self) -> &'static str {
        match self {
            LeoPart::Single | LeoPart::TwoFlows => "reconfiguration_every_s",
            LeoPart::BandwidthSteps | LeoPart::RttSteps => "",
            LeoPart::RandomLoss => "loss",
            LeoPart::RttFairness => "rtt_ratio",
        }
    }
}

/// When a flow of a case starts, and the RTT its access path adds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FlowSlot {
    /// Start (s).
    pub start_s: f64,
    /// Extra round-trip time (s).
    pub extra_rtt_s: f64,
}

impl FlowSlot {
    fn at(start_s: f64) -> Self {
        Self {
            start_s,
            extra_rtt_s: 0.0,
        }
    }
}

/// One run every scheme makes, once per seed.
#[derive(Debug, Clone, PartialEq)]
pub struct LeoCase {
    /// The experiment.
    pub part: LeoPart,
    /// Its parameter (see [`LeoPart`]).
    pub x: f64,
    /// The path.
    pub link: LinkConfig,
    /// The flows, every one driven by the scheme.
    pub flows: Vec<FlowSlot>,
    /// Length (s).
    pub duration_s: f64,
}

impl LeoCase {
    /// The case's flows driven by `p` under its own objective, for `seed`; with `record_mis`,
    /// every MI of each learned flow in [`FlowRates::mis`].
    pub fn run(
        &self,
        p: &LoadedPolicy,
        seed: u64,
        record_mis: bool,
    ) -> Result<FlowRates, ScenarioError> {
        let flows: Vec<Flow<'_>> = self
            .flows
            .iter()
            .map(|s| Flow {
                driver: p,
                objective: p.scenario().objective,
                start_s: s.start_s,
                stop_s: None,
                extra_rtt_s: s.extra_rtt_s,
                record_mis,
            })
            .collect();
        run_flows_on(&self.link, &flows, self.duration_s, WINDOW_S, seed)
    }
}

/// What one run measured, over the seconds all its flows run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LeoMetrics {
    /// Delivered packets over those the path could carry (outages count as zero).
    pub utilization: f64,
    /// The flows' goodput (Mbit/s of 1,500-byte packets).
    pub goodput_mbps: f64,
    /// Mean RTT over the base RTT in force (None without samples).
    pub delay_inflation: Option<f64>,
    /// Lost over sent packets, the whole run: what a reliable sender retransmits.
    pub retransmission_rate: f64,
    /// Jain's index of the flows' mean goodputs (1 for one flow).
    pub jain_index: f64,
    /// Two flows: the lower mean goodput over the higher.
    pub goodput_ratio: Option<f64>,
    /// Two flows: the second flow's share of their goodput (the newcomer's, the longer-RTT
    /// flow's).
    pub second_flow_share: Option<f64>,
}

impl LeoMetrics {
    /// The metrics of a run.
    pub fn of(r: &FlowRates) -> Self {
        let n = r.rates.len();
        let means: Vec<f64> = (0..n).map(|f| r.mean_rate_coexisting(f)).collect();
        let total: f64 = means.iter().sum();
        let (sent, lost) = r
            .totals
            .iter()
            .fold((0u64, 0u64), |(s, l), t| (s + t.sent, l + t.lost));
        let pair = (n == 2 && total > 0.0).then(|| (means[0], means[1]));
        Self {
            utilization: r.utilization_coexisting(),
            goodput_mbps: total * PACKET_BITS / 1e6,
            delay_inflation: r.rtt_ratio_coexisting(),
            retransmission_rate: if sent == 0 {
                0.0
            } else {
                lost as f64 / sent as f64
            },
            jain_index: jain_index(&means),
            goodput_ratio: pair.map(|(a, b)| a.min(b) / a.max(b)),
            second_flow_share: pair.map(|(a, b)| b / (a + b)),
        }
    }

    /// The medians of runs, metric by metric (a metric none of them has stays None).
    pub fn median_of(runs: &[LeoMetrics]) -> Self {
        let med = |f: &dyn Fn(&LeoMetrics) -> Option<f64>| {
            let xs: Vec<f64> = runs.iter().filter_map(f).collect();
            (!xs.is_empty()).then(|| median(xs))
        };
        Self {
            utilization: med(&|m| Some(m.utilization)).unwrap_or(f64::NAN),
            goodput_mbps: med(&|m| Some(m.goodput_mbps)).unwrap_or(f64::NAN),
            delay_inflation: med(&|m| m.delay_inflation),
            retransmission_rate: med(&|m| Some(m.retransmission_rate)).unwrap_or(f64::NAN),
            jain_index: med(&|m| Some(m.jain_index)).unwrap_or(f64::NAN),
            goodput_ratio: med(&|m| m.goodput_ratio),
            second_flow_share: med(&|m| m.second_flow_share),
        }
    }
}

/// One run of leo.csv.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeoRun {
    /// The experiment.
    pub part: LeoPart,
    /// Its parameter.
    pub x: f64,
    /// The scheme.
    pub policy: String,
    /// The seed.
    pub seed: u64,
    /// What it measured.
    pub metrics: LeoMetrics,
}

/// The median over seeds of one (part, x, scheme) of leo-summary.csv.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeoSummary {
    /// The experiment.
    pub part: LeoPart,
    /// Its parameter.
    pub x: f64,
    /// The scheme.
    pub policy: String,
    /// Seeds run.
    pub seeds: usize,
    /// Medians over the seeds.
    pub median: LeoMetrics,
}

/// The medians over seeds of every (part, x, scheme), in the runs' order.
pub fn summarize(runs: &[LeoRun]) -> Vec<LeoSummary> {
    let mut out: Vec<LeoSummary> = Vec::new();
    for r in runs {
        if out
            .iter()
            .any(|s| s.part == r.part && s.x == r.x && s.policy == r.policy)
        {
            continue;
        }
        let same: Vec<LeoMetrics> = runs
            .iter()
            .filter(|o| o.part == r.part && o.x == r.x && o.policy == r.policy)
            .map(|o| o.metrics)
            .collect();
        out.push(LeoSummary {
            part: r.part,
            x: r.x,
            policy: r.policy.clone(),
            seeds: same.len(),
            median: LeoMetrics::median_of(&same),
        });
    }
    out
}

/// leo.csv's text: one row per run.
pub fn runs_csv(runs: &[LeoRun]) -> String {
    let mut text = String::from(
        "part,x_name,x,policy,seed,utilization,goodput_mbps,delay_inflation,\
         retransmission_rate,jain_index,goodput_ratio,second_flow_share\n",
    );
    for r in runs {
        text.push_str(&format!(
            "{},{},{},{},{},{}\n",
            r.part.name(),
            r.part.x_name(),
            r.x,
            r.policy,
            r.seed,
            metrics_cells(&r.metrics)
        ));
    }
    text
}

/// leo-summary.csv's text: one row per (part, x, scheme), medians over the seeds.
pub fn summary_csv(rows: &[LeoSummary]) -> String {
    let mut text = String::from(
        "part,x_name,x,policy,seeds,utilization,goodput_mbps,delay_inflation,\
         retransmission_rate,jain_index,goodput_ratio,second_flow_share\n",
    );
    for r in rows {
        text.push_str(&format!(
            "{},{},{},{},{},{}\n",
            r.part.name(),
            r.part.x_name(),
            r.x,
            r.policy,
            r.seeds,
            metrics_cells(&r.median)
        ));
    }
    text
}

fn metrics_cells(m: &LeoMetrics) -> String {
    let cell = |x: Option<f64>| x.map(|v| v.to_string()).unwrap_or_default();
    format!(
        "{},{},{},{},{},{},{}",
        m.utilization,
        m.goodput_mbps,
        cell(m.delay_inflation),
        m.retransmission_rate,
        m.jain_index,
        cell(m.goodput_ratio),
        cell(m.second_flow_share)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn constant(rate: &str) -> LoadedPolicy {
        LoadedPolicy::load(Path::new(rate)).unwrap()
    }

    #[test]
    fn the_standard_and_quick_studies_are_valid() {
        assert_eq!(LeoStudy::standard().validate(), Ok(()));
        assert_eq!(LeoStudy::quick().validate(), Ok(()));
        let bad = LeoStudy {
            second_flow_at_s: 400.0,
            ..LeoStudy::standard()
        };
        assert!(bad.validate().unwrap_err().starts_with("second_flow_at_s"));
        let bad = LeoStudy {
            rtt_ratios: vec![0.5],
            ..LeoStudy::standard()
        };
        assert!(bad.validate().unwrap_err().starts_with("rtt_ratios[0]"));
    }

    #[test]
    fn the_reference_interval_is_the_nearest_to_fifteen_seconds() {
        let s = LeoStudy {
            reconfiguration_every_s: vec![5.0, 12.0, 30.0],
            ..LeoStudy::standard()
        };
        assert_eq!(s.reference_interval_s(), Some(12.0));
        let none = LeoStudy {
            reconfiguration_every_s: vec![],
            ..LeoStudy::standard()
        };
        assert_eq!(none.reference_interval_s(), None);
    }

    /// A LEO path reconfigures every T seconds, each time with an outage, and every scheme of a
    /// seed meets the same one: a constant sender below the lowest capacity delivers all it
    /// sends but what the outages drop.
    #[test]
    fn the_leo_path_reconfigures_with_a_handover_and_is_the_same_for_a_seed() {
        let study = LeoStudy {
            duration_s: 60.0,
            ..LeoStudy::standard()
        };
        let case = LeoCase {
            part: LeoPart::Single,
            x: 15.0,
            link: study.leo_path(15.0),
            flows: vec![FlowSlot::at(0.0)],
            duration_s: 60.0,
        };
        // At most half of 8,333 packets/s is never above the path's capacity.
        let p = constant("const:4000");
        let a = case.run(&p, 3, false).unwrap();
        let b = case.run(&p, 3, false).unwrap();
        assert_eq!(a, b, "one seed, one path");
        assert_ne!(a.capacity_pps, case.run(&p, 4, false).unwrap().capacity_pps);
        let m = LeoMetrics::of(&a);
        // Three handovers of 50 ms in 60 s (at 15, 30, 45 s): 150 ms of 4,000 packets/s.
        let lost = a.totals[0].lost as f64;
        assert!((550.0..=650.0).contains(&lost), "lost {lost}");
        assert!((m.retransmission_rate - lost / a.totals[0].sent as f64).abs() < 1e-12);
        // The capacity after each change lies in [0.5, 1] x 8,333 (less the outage's share).
        for (w, c) in a.capacity_pps.iter().enumerate() {
            assert!(
                (0.5 * 8333.0 * 0.94..=8333.0 + 1e-6).contains(c),
                "window {w}: {c}"
            );
        }
        assert_eq!(m.jain_index, 1.0);
        assert_eq!(m.goodput_ratio, None);
        // Delay inflation of a flow that builds no queue: 1, even as the base RTT jumps.
        let d = m.delay_inflation.unwrap();
        assert!((d - 1.0).abs() < 0.01, "delay inflation {d}");
    }

    #[test]
    fn two_flow_metrics_are_hand_values() {
        let r = FlowRates {
            window_s: 1.0,
            rates: vec![vec![300.0, 300.0, 200.0], vec![0.0, 100.0, 200.0]],
            capacity_pps: vec![400.0; 3],
            starts: vec![0.0, 1.0],
            stops: vec![None, None],
            totals: vec![Default::default(); 2],
            rtts: vec![vec![Default::default(); 3]; 2],
            mis: Vec::new(),
        };
        let m = LeoMetrics::of(&r);
        // Windows 1 and 2: means 250 and 150; 400 of 400 delivered.
        assert!((m.utilization - 1.0).abs() < 1e-12);
        assert!((m.goodput_ratio.unwrap() - 0.6).abs() < 1e-12);
        assert!((m.second_flow_share.unwrap() - 150.0 / 400.0).abs() < 1e-12);
        // (400)^2 / (2 (250^2 + 150^2)) = 160000 / 170000.
        assert!((m.jain_index - 16.0 / 17.0).abs() < 1e-12);
        assert!((m.goodput_mbps - 400.0 * 12000.0 / 1e6).abs() < 1e-9);
        assert_eq!(m.delay_inflation, None);
    }
}
