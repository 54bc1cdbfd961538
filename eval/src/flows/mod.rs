//! Several flows on one bottleneck, each driven by a learned policy (its own observation
//! history, MI clock and rate rule, deciding at the end of each of its MIs, as a deployed
//! `Controller` does) or by a sender of its own (classic controller, constant rate): the
//! fairness and friendliness experiments.

use crate::actor::LoadedPolicy;
use mocc_gym::config::LinkConfig;
use mocc_gym::sim::SenderTotals;
use mocc_gym::{
    env_rng, ClassicCc, ControllerConfig, Link, Network, Range, Scenario, ScenarioConfig,
    ScenarioError, Sender, SenderConfig, StartRate,
};
use mocc_policy::{Mode, MonitorInterval, RttTally, SenderLoop};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

mod mi_log;
pub use mi_log::FlowMi;

/// One flow of a multi-flow run.
pub struct Flow<'a> {
    /// Who drives it.
    pub driver: &'a LoadedPolicy,
    /// The objective a learned policy is given.
    pub objective: [f64; 3],
    /// When it starts (s).
    pub start_s: f64,
    /// When it stops sending (s); None: it runs to the end.
    pub stop_s: Option<f64>,
    /// Round-trip time its own access path adds to the bottleneck's (s).
    pub extra_rtt_s: f64,
    /// Keep every MI of a learned flow ([`FlowRates::mis`]).
    pub record_mis: bool,
}

/// A fixed bottleneck for multi-flow runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowNetwork {
    /// Bandwidth (packets/s).
    pub bw_pps: f64,
    /// One-way delay (s).
    pub delay_s: f64,
    /// Buffer (packets).
    pub queue_pkts: f64,
    /// Random loss.
    #[serde(default)]
    pub loss: f64,
}

impl FlowNetwork {
    /// Checks the values (the message names the field).
    pub fn validate(&self) -> Result<(), String> {
        ScenarioConfig::fixed_link(self.bw_pps, self.delay_s, self.queue_pkts, self.loss)
            .validate()
            .map_err(|e| e.to_string())
    }

    /// The fixed link these values describe, as a scenario's link section.
    pub fn link_config(&self) -> LinkConfig {
        ScenarioConfig::fixed_link(self.bw_pps, self.delay_s, self.queue_pkts, self.loss).link
    }

    /// A short label, e.g. `bw800_d0.02_q100`.
    pub fn label(&self) -> String {
        let loss = if self.loss > 0.0 {
            format!("_l{}", self.loss)
        } else {
            String::new()
        };
        format!(
            "bw{}_d{}_q{}{loss}",
            self.bw_pps, self.delay_s, self.queue_pkts
        )
    }
}

/// Per-flow delivery rate (packets/s) and RTT in consecutive windows of `window_s`, from time 0.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FlowRates {
    /// Window length (s).
    pub window_s: f64,
    /// `rates[flow][window]`.
    pub rates: Vec<Vec<f64>>,
    /// `rtts[flow][window]`: the RTT samples of the flow's MIs that closed in the window, over
    /// the flow's base RTT when the MI closed (the bottleneck's two-way delay then, plus the
    /// flow's own access path).
    pub rtts: Vec<Vec<RttTally>>,
    /// `capacity_pps[window]`: the link's mean capacity in the window (its scheduled
    /// bandwidth, the time it is down counted as zero).
    pub capacity_pps: Vec<f64>,
    /// Each flow's packets sent, acknowledged and reported lost over the whole run.
    pub totals: Vec<SenderTotals>,
    /// Start time of each flow.
    pub starts: Vec<f64>,
    /// Stop time of each flow (None: it ran to the end).
    pub stops: Vec<Option<f64>>,
    /// `mis[flow]`: every MI of a learned flow that asked to record them
    /// ([`Flow::record_mis`]); empty for the others.
    pub mis: Vec<Vec<FlowMi>>,
}

/// Runs the flows on the fixed bottleneck `net` for `duration_s` and samples each flow's
/// delivery rate every `window_s`.
pub fn run_flows(
    net: &FlowNetwork,
    flows: &[Flow<'_>],
    duration_s: f64,
    window_s: f64,
    seed: u64,
) -> Result<FlowRates, ScenarioError> {
    run_flows_on(&net.link_config(), flows, duration_s, window_s, seed)
}

/// Runs the flows on the bottleneck a scenario's link section describes (fixed values, or
/// drawn from run `seed`'s random source with its schedule, outages and random path changes)
/// for `duration_s` and samples each flow's delivery rate every `window_s`. Every scheme run
/// with the same seed meets the same path: the link is drawn before any packet.
pub fn run_flows_on(
    link: &LinkConfig,
    flows: &[Flow<'_>],
    duration_s: f64,
    window_s: f64,
    seed: u64,
) -> Result<FlowRates, ScenarioError> {
    let (link, mut rng) = bottleneck(link, flows, seed)?;
    let first = link.params_at(0.0);
    let (senders, mut learned): (Vec<Sender>, Vec<Option<LearnedFlow>>) = flows
        .iter()
        .map(|f| start_flow(f, first.bandwidth_pps, first.delay_s))
        .unzip();
    let mut network = Network::new(link, senders);
    for (i, (f, state)) in flows.iter().zip(&learned).enumerate() {
        if let Some(state) = state {
            let first = state.clock.next_duration_s(network.senders()[i].rate_pps());
            network.set_mi_end(i, f.start_s + first);
        }
    }
    let windows = (duration_s / window_s).ceil() as usize;
    let mut rates = vec![Vec::with_capacity(windows); flows.len()];
    let mut rtts = vec![Vec::with_capacity(windows); flows.len()];
    let mut capacity_pps = Vec::with_capacity(windows);
    let extra_rtts: Vec<f64> = flows.iter().map(|f| f.extra_rtt_s).collect();
    let base_rtt = |link: &Link, i: usize, t: f64| 2.0 * link.params_at(t).delay_s + extra_rtts[i];
    let mut acked_before: Vec<u64> = vec![0; flows.len()];
    let mut mis = vec![Vec::new(); flows.len()];
    for w in 0..windows {
        let end = (w + 1) as f64 * window_s;
        let mut tallies = vec![RttTally::default(); flows.len()];
        network.run_until(end, &mut rng, |net, i| {
            let now = net.now_s();
            let mi = net.senders_mut()[i].close_mi(now);
            tallies[i].add(&mi.rtt, base_rtt(net.link(), i, now));
            if let (Some(state), Some(flow)) = (learned[i].as_mut(), flows.get(i)) {
                let next = state.pace_next_mi(flow, &mi, net, i);
                if flow.record_mis {
                    mis[i].push(state.record(net.now_s(), mi, next));
                }
            }
        });
        close_unread_mis(&mut network, &learned, end, &mut tallies, base_rtt);
        capacity_pps.push(network.link().capacity_pps(end - window_s, end));
        for (i, s) in network.senders().iter().enumerate() {
            let acked = s.totals().acked;
            rates[i].push((acked - acked_before[i]) as f64 / window_s);
            acked_before[i] = acked;
            rtts[i].push(tallies[i]);
        }
    }
    Ok(FlowRates {
        window_s,
        rates,
        rtts,
        capacity_pps,
        totals: network.senders().iter().map(Sender::totals).collect(),
        starts: flows.iter().map(|f| f.start_s).collect(),
        stops: flows.iter().map(|f| f.stop_s).collect(),
        mis,
    })
}

/// The bottleneck `link` describes for `flows`, and the random source of run `seed` after
/// drawing it.
fn bottleneck(
    link: &LinkConfig,
    flows: &[Flow<'_>],
    seed: u64,
) -> Result<(Link, ChaCha8Rng), ScenarioError> {
    let mut cfg = ScenarioConfig {
        link: link.clone(),
        ..ScenarioConfig::default()
    };
    cfg.senders = flows
        .iter()
        .map(|f| SenderConfig {
            controller: ControllerConfig::Constant,
            start_rate: StartRate::Pps(Range::Fixed(1.0)),
            start_time_s: Range::Fixed(f.start_s),
            ..SenderConfig::default()
        })
        .collect();
    let scenario = Scenario::new(cfg, None)?;
    let mut rng = env_rng(seed, 0);
    let params = scenario.sample_link(&mut rng);
    let link = scenario.draw_link(params, &mut rng);
    Ok((link, rng))
}

/// A learned flow's sender loop (MI clock, rate rule, the rate its agent chose), as a
/// deployed `Controller` runs it.
struct LearnedFlow {
    clock: SenderLoop,
}

impl LearnedFlow {
    /// Folds in a closed MI and returns the next MI's pacing rate: after a decision when the
    /// loop calls for one (the warm-up and probes keep the agent's rate), a probe's share of
    /// the agent's rate in probe MIs.
    fn on_mi(&mut self, flow: &Flow<'_>, mi: &MonitorInterval) -> f64 {
        self.clock.on_mi_with(mi, |mode, obs| act(flow, mode, obs))
    }

    /// Folds in `mi`, which sender `i` of `net` has just closed, and sets the sender's next MI:
    /// its pacing rate (returned) and its end.
    fn pace_next_mi(
        &mut self,
        flow: &Flow<'_>,
        mi: &MonitorInterval,
        net: &mut Network,
        i: usize,
    ) -> f64 {
        let now = net.now_s();
        let next = if self.clock.rule().scales_window() {
            if self.clock.on_mi(mi) {
                self.scale_window(flow, &mut net.senders_mut()[i], now);
            }
            net.senders()[i].rate_pps()
        } else {
            let next = self.on_mi(flow, mi);
            net.senders_mut()[i].set_rate_pps(next);
            next
        };
        let end = net.now_s() + self.clock.next_duration_s(next);
        net.set_mi_end(i, end);
        next
    }

    /// Orca's decision: the policy's action scales the window of the Cubic under `sender`
    /// at `now`; the loop's rate is the one Cubic then paces at.
    fn scale_window(&mut self, flow: &Flow<'_>, sender: &mut Sender, now: f64) {
        let action = act(flow, self.clock.mode(), self.clock.observation());
        sender.scale_window(self.clock.rule(), action, now);
        self.clock.set_rate(sender.rate_pps());
    }

    /// The record of `mi`, closed at `closed_s` and folded in, after which the loop paces at
    /// `next_rate_pps`.
    fn record(&self, closed_s: f64, mi: MonitorInterval, next_rate_pps: f64) -> FlowMi {
        FlowMi {
            closed_s,
            mi,
            baseline_s: self.clock.clock().history().baseline_s(),
            mode: self.clock.mode(),
            loop_paced: self.clock.paces_next_mi(),
            next_rate_pps,
        }
    }
}

/// A flow's sender at its start on a link of `bw_pps` and one-way `delay_s` then, with the
/// state of a learned flow: a baseline paces at its own start rate (half the link when it has
/// none) under its controller; a learned flow starts at half the link and, without warm-up,
/// takes its first decision before its first MI.
fn start_flow(f: &Flow<'_>, bw_pps: f64, delay_s: f64) -> (Sender, Option<LearnedFlow>) {
    if let Some(b) = f.driver.baseline() {
        let rate = match b.start_rate {
            StartRate::Pps(Range::Fixed(r)) => r,
            _ => 0.5 * bw_pps,
        };
        let mut s = flow_sender(f, rate, Scenario::pacing(b));
        if let Some(kind) = b.controller.classic() {
            s.set_classic(ClassicCc::new(kind));
        }
        return (s, None);
    }
    let start = 0.5 * bw_pps;
    let mut clock = SenderLoop::new(&f.driver.scenario().loop_spec(), start);
    if clock.rule().scales_window() {
        return start_window_scaled_flow(f, clock, start, delay_s);
    }
    // As in the gym: the first decision, on the empty history, precedes MI 1.
    let rate = clock.start_with(start, delay_s + 0.5 * f.extra_rtt_s, |mode, obs| {
        act(f, mode, obs)
    });
    let mut sender = flow_sender(f, rate, mocc_gym::Pacing::Continuous);
    sender.set_capacity_train(clock.train_packets());
    (sender, Some(LearnedFlow { clock }))
}

/// Flow `f`'s sender, starting at `rate_pps` with `pacing`, its access path's RTT and its stop
/// time set.
fn flow_sender(f: &Flow<'_>, rate_pps: f64, pacing: mocc_gym::Pacing) -> Sender {
    let mut s = Sender::new(rate_pps, pacing, f.start_s);
    s.set_extra_rtt(f.extra_rtt_s);
    if let Some(stop) = f.stop_s {
        s.set_stop(stop);
    }
    s
}

/// [`start_flow`] for a policy whose actions scale Cubic's window (Orca): its sender runs
/// Cubic from Cubic's initial window, and a first decision without warm-up scales it.
fn start_window_scaled_flow(
    f: &Flow<'_>,
    mut clock: SenderLoop,
    start_pps: f64,
    delay_s: f64,
) -> (Sender, Option<LearnedFlow>) {
    let mut sender = flow_sender(f, start_pps, mocc_gym::Pacing::Continuous);
    sender.set_window_scaled();
    let decides = clock.start(sender.rate_pps(), delay_s + 0.5 * f.extra_rtt_s);
    let mut learned = LearnedFlow { clock };
    if decides {
        learned.scale_window(f, &mut sender, f.start_s);
    }
    learned.clock.set_rate(sender.rate_pps());
    (sender, Some(learned))
}

/// Closes the MIs of the flows that no policy reads (classic and constant-rate senders have no
/// MI clock), so their per-MI RTT samples stay bounded by one window instead of the whole run;
/// their samples go to the window's tallies, over flow k's base RTT `base_rtt(link, k, now)`.
fn close_unread_mis(
    network: &mut Network,
    learned: &[Option<LearnedFlow>],
    now: f64,
    tallies: &mut [RttTally],
    base_rtt: impl Fn(&Link, usize, f64) -> f64,
) {
    let bases: Vec<f64> = (0..learned.len())
        .map(|k| base_rtt(network.link(), k, now))
        .collect();
    let senders = network.senders_mut().iter_mut();
    for (k, (sender, state)) in senders.zip(learned).enumerate() {
        if state.is_none() {
            tallies[k].add(&sender.close_mi(now).rtt, bases[k]);
        }
    }
}

/// The flow's policy's action on an observation, in a mode (the loop's rule turns it into the
/// next rate).
fn act(flow: &Flow<'_>, mode: Mode, observation: &[f32]) -> f64 {
    let w = flow.objective.map(|v| v as f32);
    f64::from(flow.driver.act(&[mode], observation, &w)[0])
}

/// How far (in windows) a start or stop may lie past a window's edge and still count as on
/// it: flows started at `k * 100 / 3` s start on a whole second up to rounding.
const WINDOW_EDGE: f64 = 1e-9;

/// Jain's fairness index `(sum x)^2 / (n sum x^2)` (1 for no or all-zero rates).
pub fn jain_index(rates: &[f64]) -> f64 {
    let n = rates.len() as f64;
    let sum: f64 = rates.iter().sum();
    let sq: f64 = rates.iter().map(|x| x * x).sum();
    if n == 0.0 || sq == 0.0 {
        1.0
    } else {
        sum * sum / (n * sq)
    }
}

impl FlowRates {
    /// The windows in which every flow runs: from the first that begins at or after the last
    /// start to the last that ends by the first stop (empty when the flows never coexist for
    /// a whole window).
    pub fn coexisting_windows(&self) -> std::ops::Range<usize> {
        let last_start = self.starts.iter().copied().fold(0.0, f64::max);
        let first = (last_start / self.window_s - WINDOW_EDGE).ceil().max(0.0) as usize;
        let windows = self.rates.first().map_or(0, Vec::len);
        let end = match self.stops.iter().flatten().copied().reduce(f64::min) {
            Some(stop) => {
                ((stop / self.window_s + WINDOW_EDGE).floor().max(0.0) as usize).min(windows)
            }
            None => windows,
        };
        first..end.max(first)
    }

    /// Jain's index of each window in which every flow runs
    /// ([`FlowRates::coexisting_windows`]).
    pub fn jain_per_window(&self) -> Vec<f64> {
        self.coexisting_windows()
            .map(|w| {
                let xs: Vec<f64> = self.rates.iter().map(|r| r[w]).collect();
                jain_index(&xs)
            })
            .collect()
    }

    /// The flows' total delivery rate in window `w` over the link's capacity then (0 while
    /// the link carries nothing).
    pub fn utilization_in(&self, w: usize) -> f64 {
        let capacity = self.capacity_pps.get(w).copied().unwrap_or(0.0);
        if capacity > 0.0 {
            self.rates.iter().map(|r| r[w]).sum::<f64>() / capacity
        } else {
            0.0
        }
    }

    /// The flows' delivered packets over the packets the link could carry in the windows all
    /// flows run (0 without any).
    pub fn utilization_coexisting(&self) -> f64 {
        let windows = self.coexisting_windows();
        let delivered: f64 = windows
            .clone()
            .map(|w| self.rates.iter().map(|r| r[w]).sum::<f64>())
            .sum();
        let capacity: f64 = windows.map(|w| self.capacity_pps[w]).sum();
        if capacity > 0.0 {
            delivered / capacity
        } else {
            0.0
        }
    }

    /// A flow's lost packets over those it sent in the whole run (0 when it sent none): the
    /// retransmission rate of a reliable sender.
    pub fn loss_rate(&self, flow: usize) -> f64 {
        let t = self.totals[flow];
        if t.sent == 0 {
            0.0
        } else {
            t.lost as f64 / t.sent as f64
        }
    }

    /// The mean RTT ratio of every flow's samples in the windows all flows run (None without
    /// samples).
    pub fn rtt_ratio_coexisting(&self) -> Option<f64> {
        let windows = self.coexisting_windows();
        RttTally::mean_of(
            self.rtts
                .iter()
                .flat_map(|r| r.get(windows.clone()).unwrap_or_default()),
        )
    }

    /// Mean delivery rate of a flow over the windows all flows run (0 without any).
    pub fn mean_rate_coexisting(&self, flow: usize) -> f64 {
        let windows = self.coexisting_windows();
        let n = windows.len();
        self.rates[flow][windows].iter().sum::<f64>() / n.max(1) as f64
    }

    /// The mean RTT ratio of every flow's samples in window `w` (None without samples).
    pub fn rtt_ratio_in(&self, w: usize) -> Option<f64> {
        RttTally::mean_of(self.rtts.iter().filter_map(|r| r.get(w)))
    }

    /// The mean RTT ratio of every flow's samples in the windows from `from_s` on (None
    /// without samples).
    pub fn rtt_ratio_from(&self, from_s: f64) -> Option<f64> {
        let first = (from_s / self.window_s).floor() as usize;
        RttTally::mean_of(self.rtts.iter().flat_map(|r| r.iter().skip(first)))
    }

    /// Mean delivery rate of a flow over the windows from `from_s` on.
    pub fn mean_rate(&self, flow: usize, from_s: f64) -> f64 {
        let first = (from_s / self.window_s).floor() as usize;
        let r = &self.rates[flow];
        let tail = &r[first.min(r.len())..];
        tail.iter().sum::<f64>() / tail.len().max(1) as f64
    }
}

#[cfg(test)]
mod tests;
