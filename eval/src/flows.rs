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
    for w in 0..windows {
        let end = (w + 1) as f64 * window_s;
        let mut tallies = vec![RttTally::default(); flows.len()];
        network.run_until(end, &mut rng, |net, i| {
            let now = net.now_s();
            let mi = net.senders_mut()[i].close_mi(now);
            tallies[i].add(&mi.rtt, base_rtt(net.link(), i, now));
            if let (Some(state), Some(flow)) = (learned[i].as_mut(), flows.get(i)) {
                state.pace_next_mi(flow, &mi, net, i);
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
    /// its pacing rate and its end.
    fn pace_next_mi(&mut self, flow: &Flow<'_>, mi: &MonitorInterval, net: &mut Network, i: usize) {
        let next = self.on_mi(flow, mi);
        net.senders_mut()[i].set_rate_pps(next);
        let end = net.now_s() + self.clock.next_duration_s(next);
        net.set_mi_end(i, end);
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
        let mut s = Sender::new(rate, Scenario::pacing(b), f.start_s);
        s.set_extra_rtt(f.extra_rtt_s);
        if let Some(stop) = f.stop_s {
            s.set_stop(stop);
        }
        if let Some(kind) = b.controller.classic() {
            s.set_classic(ClassicCc::new(kind));
        }
        return (s, None);
    }
    let start = 0.5 * bw_pps;
    let mut clock = SenderLoop::new(&f.driver.scenario().loop_spec(), start);
    // As in the gym: the first decision, on the empty history, precedes MI 1.
    let rate = clock.start_with(start, delay_s + 0.5 * f.extra_rtt_s, |mode, obs| {
        act(f, mode, obs)
    });
    let mut sender = Sender::new(rate, mocc_gym::Pacing::Continuous, f.start_s);
    sender.set_extra_rtt(f.extra_rtt_s);
    if let Some(stop) = f.stop_s {
        sender.set_stop(stop);
    }
    (sender, Some(LearnedFlow { clock }))
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
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn jain_index_hand_values() {
        assert_eq!(jain_index(&[1.0, 1.0, 1.0]), 1.0);
        // (1 + 3)^2 / (2 * (1 + 9)) = 16 / 20.
        assert!((jain_index(&[1.0, 3.0]) - 0.8).abs() < 1e-12);
        // One flow gets everything: 1 / n.
        assert!((jain_index(&[5.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
        assert_eq!(jain_index(&[]), 1.0);
    }

    #[test]
    fn windows_after_the_last_start_count() {
        let r = FlowRates {
            window_s: 1.0,
            rates: vec![vec![10.0, 10.0, 5.0, 5.0], vec![0.0, 0.0, 5.0, 15.0]],
            rtts: Vec::new(),
            starts: vec![0.0, 2.0],
            stops: vec![None, None],
            ..FlowRates::default()
        };
        let j = r.jain_per_window();
        assert_eq!(j.len(), 2);
        assert_eq!(j[0], 1.0);
        assert!((j[1] - 0.8).abs() < 1e-12);
        assert_eq!(r.mean_rate(1, 2.0), 10.0);
    }

    #[test]
    fn the_coexisting_windows_end_at_the_first_stop() {
        let r = FlowRates {
            window_s: 1.0,
            rates: vec![
                vec![4.0; 6],
                vec![0.0, 0.0, 2.0, 6.0, 6.0, 0.0],
                vec![3.0; 6],
            ],
            rtts: Vec::new(),
            capacity_pps: vec![9.0; 6],
            starts: vec![0.0, 2.0, 1.0],
            stops: vec![None, Some(5.0), Some(5.5)],
            ..FlowRates::default()
        };
        // Windows [2, 3), [3, 4), [4, 5): all three run; at 5 the second has stopped.
        assert_eq!(r.coexisting_windows(), 2..5);
        assert_eq!(r.jain_per_window().len(), 3);
        assert!((r.mean_rate_coexisting(1) - 14.0 / 3.0).abs() < 1e-12);
        assert!((r.utilization_in(2) - 1.0).abs() < 1e-12);
        // A start a rounding error past a window's edge still starts on it (100 / 3 * 3).
        let r = FlowRates {
            starts: vec![0.0, 100.0 / 3.0 * 3.0],
            stops: vec![None, None],
            rates: vec![vec![1.0; 101], vec![1.0; 101]],
            ..r
        };
        assert_eq!(r.coexisting_windows(), 100..101);
        // Flows that never all run: no window.
        let r = FlowRates {
            starts: vec![0.0, 3.0],
            stops: vec![Some(2.5), None],
            rates: vec![vec![1.0; 6], vec![1.0; 6]],
            ..r
        };
        assert!(r.coexisting_windows().is_empty());
        assert_eq!(r.mean_rate_coexisting(0), 0.0);
    }

    #[test]
    fn a_flow_sends_nothing_after_its_stop() {
        let net = FlowNetwork {
            bw_pps: 1000.0,
            delay_s: 0.02,
            queue_pkts: 100.0,
            loss: 0.0,
        };
        let p = constant("const:200");
        let flow = |start_s, stop_s| Flow {
            driver: &p,
            objective: [0.34, 0.33, 0.33],
            start_s,
            stop_s,
            extra_rtt_s: 0.0,
        };
        let r = run_flows(&net, &[flow(0.0, Some(3.0)), flow(1.0, None)], 6.0, 1.0, 0).unwrap();
        // 200 pkt/s each while they run (the first second's first packets are still in flight).
        assert!(
            r.rates[0][1..3].iter().all(|&x| (x - 200.0).abs() <= 1.0),
            "{:?}",
            r.rates[0]
        );
        assert!(
            r.rates[0][4..].iter().all(|&x| x == 0.0),
            "{:?}",
            r.rates[0]
        );
        assert!(
            r.rates[1][2..].iter().all(|&x| (x - 200.0).abs() <= 1.0),
            "{:?}",
            r.rates[1]
        );
        assert_eq!(r.coexisting_windows(), 1..3);
    }

    /// A fairness run's learned flow, on a real simulated link, paces every MI (probe MIs at a
    /// quarter of the agent's rate) at the rate, and for the time, a deployed `Controller` fed
    /// the same MIs chooses.
    #[test]
    fn a_learned_flow_paces_and_probes_as_its_controller() {
        let dir = std::env::temp_dir().join(format!("mocc-flow-probes-{}", std::process::id()));
        let policy = crate::test_exports::probing_export(&dir);
        let p = LoadedPolicy::load(&dir).unwrap();
        let net = FlowNetwork {
            bw_pps: 600.0,
            delay_s: 0.03,
            queue_pkts: 40.0,
            loss: 0.0,
        };
        let objective = [0.6, 0.3, 0.1];
        let flow = Flow {
            driver: &p,
            objective,
            start_s: 0.0,
            stop_s: None,
            extra_rtt_s: 0.01,
        };
        let (sender, state) = start_flow(&flow, net.bw_pps, net.delay_s);
        let mut state = state.expect("a learned flow");
        let mut controller = mocc_policy::Controller::new(policy, objective).unwrap();
        let first = controller.start(0.5 * net.bw_pps, net.delay_s + 0.5 * flow.extra_rtt_s);
        assert_eq!(sender.rate_pps(), first);
        let (link, mut rng) =
            bottleneck(&net.link_config(), std::slice::from_ref(&flow), 0).unwrap();
        let mut network = Network::new(link, vec![sender]);
        network.set_mi_end(0, state.clock.next_duration_s(first));
        let (mut mis, mut probe_mis) = (0, 0);
        network.run_until(20.0, &mut rng, |net, i| {
            let now = net.now_s();
            let mi = net.senders_mut()[i].close_mi(now);
            state.pace_next_mi(&flow, &mi, net, i);
            let next = net.senders()[i].rate_pps();
            assert_eq!(next, controller.on_monitor_interval(&mi), "MI {mis}");
            assert_eq!(state.clock.probing(), controller.probing(), "MI {mis}");
            if controller.probing() {
                assert_eq!(next, 0.25 * controller.agent_rate_pps(), "MI {mis}");
                probe_mis += 1;
            }
            let duration = state.clock.next_duration_s(next);
            assert_eq!(duration, controller.mi_duration_s(), "MI {mis}");
            mis += 1;
        });
        // 20 s of MIs of about half an RTT (~40 ms), a probe of 4 MIs every 0.5 s or so.
        assert!(mis > 200, "{mis} MIs");
        assert!(probe_mis > 40, "{probe_mis} probe MIs");
        let _ = std::fs::remove_dir_all(dir);
    }

    fn constant(rate: &str) -> LoadedPolicy {
        LoadedPolicy::load(Path::new(rate)).unwrap()
    }

    #[test]
    fn rtt_ratio_reads_the_queue_the_flows_hold() {
        // 100 pkt/s, 50 ms one way (base RTT 0.1 s), 10 packets. One flow at 40 pkt/s leaves
        // no queue: RTT = base. Two at 100 pkt/s hold it full: the link accepts a packet while
        // the queue ahead plus its own 1/bw fits in 10/bw, so at most 9 packets (0.09 s) are
        // ahead of it, and with twice the link's rate offered the queue never drains far.
        let net = FlowNetwork {
            bw_pps: 100.0,
            delay_s: 0.05,
            queue_pkts: 10.0,
            loss: 0.0,
        };
        for (rate, n, lo, hi) in [("const:40", 1, 1.0, 1.0), ("const:100", 2, 1.75, 1.9)] {
            let p = constant(rate);
            let flows: Vec<Flow<'_>> = (0..n)
                .map(|k| Flow {
                    driver: &p,
                    objective: [0.34, 0.33, 0.33],
                    start_s: k as f64,
                    stop_s: None,
                    extra_rtt_s: 0.0,
                })
                .collect();
            let r = run_flows(&net, &flows, 10.0, 1.0, 0).unwrap();
            assert_eq!(r.rtts.len(), n);
            assert!(r.rtts.iter().all(|w| w.len() == 10));
            if n == 2 {
                assert_eq!(r.rtts[1][0].samples, 0, "the second flow starts at 1 s");
            }
            let within = |x: f64| x >= lo - 1e-9 && x <= hi + 1e-9;
            let settled = r.rtt_ratio_from(5.0).unwrap();
            assert!(within(settled), "{rate}: {settled}");
            let last = r.rtt_ratio_in(9).unwrap();
            assert!(within(last), "{rate}: {last}");
        }
    }

    /// The shipped paired export, `checkpoints/mocc-pair`.
    fn shipped_pair() -> LoadedPolicy {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../checkpoints/mocc-pair");
        LoadedPolicy::load(&dir).unwrap()
    }

    /// The shipped paired export (checkpoints/mocc-pair): beside Cubic on a 4 BDP buffer its
    /// flow holds a share within the friendliness band, where its cooperative half alone
    /// starves (0.07, docs/research/fine-tuned-beside-a-peer.md); two of its own flows keep the
    /// queue short (they stay cooperative; the competitive half fills the buffer, RTT ratio near
    /// 4).
    #[test]
    fn the_shipped_pair_holds_cubic_and_keeps_its_own_queue_short() {
        let pair = shipped_pair();
        let cubic = constant("cubic");
        let flow = |driver, start_s| Flow {
            driver,
            objective: [0.34, 0.33, 0.33],
            start_s,
            stop_s: None,
            extra_rtt_s: 0.0,
        };
        let deep = FlowNetwork {
            bw_pps: 800.0,
            delay_s: 0.02,
            queue_pkts: 128.0,
            loss: 0.0,
        };
        let r = run_flows(&deep, &[flow(&pair, 0.0), flow(&cubic, 0.0)], 60.0, 1.0, 0).unwrap();
        let ratio = r.mean_rate(0, 0.0) / r.mean_rate(1, 0.0);
        assert!((0.5..=2.0).contains(&ratio), "beside Cubic: {ratio}");
        let shared = FlowNetwork {
            queue_pkts: 100.0,
            ..deep
        };
        let r = run_flows(&shared, &[flow(&pair, 0.0), flow(&pair, 5.0)], 30.0, 1.0, 0).unwrap();
        let rtt = r.rtt_ratio_from(10.0).unwrap();
        assert!(rtt < 1.5, "two flows: RTT ratio {rtt}");
        let jain = jain_index(&[r.mean_rate(0, 10.0), r.mean_rate(1, 10.0)]);
        assert!(jain > 0.9, "two flows: Jain's index {jain}");
    }

    /// Four staggered flows of the shipped pair keep the 800 pkt/s link full and share it
    /// evenly at a short queue: what fine-tuning its cooperative half beside a learned peer
    /// bought (the first shipped pair, its start, kept 0.87 of that link, and so did the same
    /// fine-tune without the peer; docs/research/fine-tuned-beside-a-peer.md). The shipped pair
    /// keeps 0.902 here, at the target of 0.9: a retrained pair that falls below it does
    /// not fill the link as this one does.
    #[test]
    fn four_flows_of_the_shipped_pair_fill_the_link_evenly() {
        let pair = shipped_pair();
        let net = FlowNetwork {
            bw_pps: 800.0,
            delay_s: 0.02,
            queue_pkts: 100.0,
            loss: 0.0,
        };
        let flows: Vec<Flow> = (0..4)
            .map(|i| Flow {
                driver: &pair,
                objective: [0.34, 0.33, 0.33],
                start_s: 5.0 * i as f64,
                stop_s: None,
                extra_rtt_s: 0.0,
            })
            .collect();
        let r = run_flows(&net, &flows, 60.0, 1.0, 0).unwrap();
        let rates: Vec<f64> = (0..4).map(|i| r.mean_rate(i, 20.0)).collect();
        let utilization = rates.iter().sum::<f64>() / net.bw_pps;
        assert!(utilization >= 0.9, "utilization {utilization}: {rates:?}");
        let jain = jain_index(&rates);
        assert!(jain >= 0.95, "Jain's index {jain}: {rates:?}");
        let rtt = r.rtt_ratio_from(20.0).unwrap();
        assert!(rtt < 1.5, "RTT ratio {rtt}");
    }
}
