//! The bottleneck link: random loss, a tail-drop queue drained at line rate (or served by a
//! Mahimahi trace), propagation delay, time-varying schedules and outages.
//!
//! The default (fluid) service is Aurora's: a packet entering at time `t` first survives random
//! loss with probability `1 - loss`, then is dropped if `queue_delay + 1/bw > queue/bw`, else
//! adds `1/bw` to the queue delay, which drains at one second per second. The forward latency a
//! packet sees is `delay + queue_delay`, read before its own `1/bw` is added.
//!
//! With packet trains ([`Link::with_packet_trains`]) a fast sender's simulated packet stands
//! for `n` back-to-back packets: it adds `n/bw` to the queue delay, is dropped whole when
//! those `n` do not fit, and its random loss is drawn once for the train.

use crate::config::{OutageConfig, ScheduleEntry};
use crate::trace::Trace;
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::Arc;

/// The link parameters in force at some time.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct LinkParams {
    /// Bandwidth, packets/s.
    pub bandwidth_pps: f64,
    /// One-way propagation delay, s.
    pub delay_s: f64,
    /// Queue capacity, packets.
    pub queue_pkts: f64,
    /// Random loss probability.
    pub loss: f64,
}

/// What happened to a packet handed to the link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Admission {
    /// Forward latency (propagation + queueing), s.
    pub latency_s: f64,
    /// Whether the packet was dropped (random loss, full queue or outage).
    pub dropped: bool,
}

/// Piecewise-constant parameter steps within one cycle, already cumulative.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Schedule {
    /// (time within cycle, parameters from then on); the first step is at time 0.
    steps: Vec<(f64, LinkParams)>,
    period_s: Option<f64>,
}

impl Schedule {
    fn new(base: LinkParams, entries: &[ScheduleEntry], period_s: Option<f64>) -> Self {
        let mut steps = vec![(0.0, base)];
        for e in entries {
            let mut p = steps.last().map(|s| s.1).unwrap_or(base);
            if let Some(bw) = e.bandwidth_pps {
                p.bandwidth_pps = bw;
            }
            if let Some(d) = e.delay_s {
                p.delay_s = d;
            }
            if let Some(l) = e.loss {
                p.loss = l;
            }
            if e.time_s <= 0.0 {
                steps[0].1 = p;
            } else {
                steps.push((e.time_s, p));
            }
        }
        Self { steps, period_s }
    }

    /// Parameters in force at `t`.
    fn at(&self, t: f64) -> LinkParams {
        let u = match self.period_s {
            Some(p) => t - (t / p).floor() * p,
            None => t,
        };
        let i = self.steps.partition_point(|s| s.0 <= u);
        self.steps[i.saturating_sub(1)].1
    }

    /// Time of the `idx`-th step of cycle `cycle`.
    fn time_of(&self, cycle: u64, idx: usize) -> f64 {
        cycle as f64 * self.period_s.unwrap_or(0.0) + self.steps[idx].0
    }

    /// Time of the latest step at or before `t` (a repeat of the first step included), `None`
    /// before the first step after time 0.
    fn last_step_at_or_before(&self, t: f64) -> Option<f64> {
        let (cycle, u) = match self.period_s {
            Some(p) if p > 0.0 => {
                let cycle = (t / p).floor().max(0.0);
                (cycle as u64, t - cycle * p)
            }
            _ => (0, t),
        };
        let idx = self.steps.partition_point(|s| s.0 <= u).checked_sub(1)?;
        (cycle > 0 || idx > 0).then(|| self.time_of(cycle, idx))
    }
}

/// Position of the next parameter change.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct Cursor {
    cycle: u64,
    idx: usize,
    time_s: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum Service {
    /// Aurora's queue-delay model.
    Fluid { queue_delay_s: f64, updated_s: f64 },
    /// Delivery opportunities from a trace; `departures` are those of queued packets.
    Trace {
        /// Not serialized: snapshots re-attach the scenario's trace.
        #[serde(skip, default = "Trace::placeholder")]
        trace: Arc<Trace>,
        next_opportunity: u64,
        departures: VecDeque<f64>,
    },
}

/// The forward bottleneck and the return path of one network.
///
/// A serialized link omits the outages and the trace (shared with the scenario); deserialized
/// links get them back through [`Link::reattach`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Link {
    params: LinkParams,
    latency_noise: f64,
    schedule: Option<Schedule>,
    next_change: Option<Cursor>,
    #[serde(skip)]
    outages: Option<Arc<[OutageConfig]>>,
    service: Service,
    /// Outages drawn for this episode (kept in snapshots, unlike the scenario's own).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    drawn_outages: Vec<OutageConfig>,
    /// Additive return-path jitter: each ack is delayed by U(0, jitter_s) more.
    #[serde(default, skip_serializing_if = "is_zero")]
    jitter_s: f64,
    /// Acks reach the sender only at multiples of this interval (0: at once).
    #[serde(default, skip_serializing_if = "is_zero")]
    ack_aggregation_s: f64,
    /// Packet trains: a sender paced above this rate (packets/s) sends trains of
    /// `floor(rate / this)` packets (0: every packet simulated).
    #[serde(default, skip_serializing_if = "is_zero")]
    trains_above_pps: f64,
    /// The longest train: a quarter of the queue.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    max_train: u32,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

impl Link {
    /// A link with constant parameters and Aurora's fluid queue.
    pub fn fixed(params: LinkParams) -> Self {
        Self {
            params,
            latency_noise: 0.0,
            schedule: None,
            next_change: None,
            outages: None,
            service: Service::Fluid {
                queue_delay_s: 0.0,
                updated_s: 0.0,
            },
            drawn_outages: Vec::new(),
            jitter_s: 0.0,
            ack_aggregation_s: 0.0,
            trains_above_pps: 0.0,
            max_train: 0,
        }
    }

    /// Packet trains, a cheaper model of fast links, whose MIs hold thousands of packets
    /// (docs/fast-links.md says where it differs from the packet-level one): a sender paced
    /// above `above_pps` sends trains of `floor(rate / above_pps)` back-to-back packets, at
    /// most a quarter of the queue, one train every train's worth of packet intervals, and
    /// counts each train's packets sent, acknowledged or lost. Senders below the rate, classic
    /// senders (their windows count packets) and a trace-driven link keep simulating every
    /// packet.
    pub fn with_packet_trains(mut self, above_pps: f64) -> Self {
        if matches!(self.service, Service::Fluid { .. }) && above_pps > 0.0 {
            self.trains_above_pps = above_pps;
            self.max_train = (self.params.queue_pkts / 4.0).floor().clamp(1.0, 1e6) as u32;
        }
        self
    }

    /// Packets in one train of a sender paced at `rate_pps` (1 without packet trains).
    #[inline]
    pub fn train_for(&self, rate_pps: f64) -> u32 {
        if self.trains_above_pps > 0.0 && rate_pps > self.trains_above_pps {
            ((rate_pps / self.trains_above_pps).floor() as u32).clamp(1, self.max_train)
        } else {
            1
        }
    }

    /// Host-side measurement noise: each ack is delayed by U(0, `jitter_s`) and acks reach the
    /// sender in bursts at multiples of `ack_aggregation_s` (both 0: off).
    pub fn with_host_noise(mut self, jitter_s: f64, ack_aggregation_s: f64) -> Self {
        self.jitter_s = jitter_s;
        self.ack_aggregation_s = ack_aggregation_s;
        self
    }

    /// Adds outages drawn for one episode to the scenario's own (`shared`).
    pub fn with_drawn_outages(
        mut self,
        shared: Option<Arc<[OutageConfig]>>,
        drawn: Vec<OutageConfig>,
    ) -> Self {
        self.drawn_outages = drawn;
        self.outages = self.merged_outages(shared);
        self
    }

    fn merged_outages(&self, shared: Option<Arc<[OutageConfig]>>) -> Option<Arc<[OutageConfig]>> {
        let shared = shared.filter(|o| !o.is_empty());
        if self.drawn_outages.is_empty() {
            return shared;
        }
        let mut all: Vec<OutageConfig> = shared.map(|o| o.to_vec()).unwrap_or_default();
        all.extend_from_slice(&self.drawn_outages);
        Some(Arc::from(all))
    }

    /// Multiplicative latency noise: each hop's latency is scaled by U(1, 1 + noise).
    pub fn with_latency_noise(mut self, noise: f64) -> Self {
        self.latency_noise = noise;
        self
    }

    /// Piecewise-constant changes on top of the base parameters.
    pub fn with_schedule(mut self, entries: &[ScheduleEntry], period_s: Option<f64>) -> Self {
        if entries.is_empty() {
            return self;
        }
        let schedule = Schedule::new(self.params, entries, period_s);
        self.params = schedule.steps[0].1;
        self.next_change = Self::cursor_after(&schedule, 0, 0);
        self.schedule = Some(schedule);
        self
    }

    /// Link-down windows.
    pub fn with_outages(mut self, outages: Arc<[OutageConfig]>) -> Self {
        self.outages = (!outages.is_empty()).then_some(outages);
        self
    }

    /// Serve the queue at the opportunities of a trace instead of at `bandwidth_pps`.
    pub fn with_trace(mut self, trace: Arc<Trace>) -> Self {
        self.service = Service::Trace {
            trace,
            next_opportunity: 0,
            departures: VecDeque::new(),
        };
        self
    }

    fn cursor_after(s: &Schedule, cycle: u64, idx: usize) -> Option<Cursor> {
        let (cycle, idx) = if idx + 1 < s.steps.len() {
            (cycle, idx + 1)
        } else if s.period_s.is_some() {
            (cycle + 1, 0)
        } else {
            return None;
        };
        Some(Cursor {
            cycle,
            idx,
            time_s: s.time_of(cycle, idx),
        })
    }

    /// Restores the parts a snapshot leaves out: the outages and the trace of the scenario.
    pub fn reattach(&mut self, outages: Option<Arc<[OutageConfig]>>, trace: Option<Arc<Trace>>) {
        self.outages = self.merged_outages(outages);
        if let (Service::Trace { trace: t, .. }, Some(real)) = (&mut self.service, trace) {
            *t = real;
        }
    }

    /// Replaces the random loss probability for the whole episode, in the base parameters and
    /// in every scheduled step (a schedule that sets loss itself is not combined with this;
    /// the scenario checks).
    pub fn override_loss(&mut self, loss: f64) {
        self.params.loss = loss;
        if let Some(schedule) = &mut self.schedule {
            for (_, p) in &mut schedule.steps {
                p.loss = loss;
            }
        }
    }

    /// Parameters in force now (after the last `enter`).
    pub fn params(&self) -> LinkParams {
        self.params
    }

    /// Parameters in force at time `t` (pure lookup).
    pub fn params_at(&self, t: f64) -> LinkParams {
        match &self.schedule {
            Some(s) => s.at(t),
            None => self.params,
        }
    }

    /// Whether the link is down at `t`.
    pub fn is_down(&self, t: f64) -> bool {
        self.outages
            .iter()
            .flat_map(|o| o.iter())
            .any(|o| outage_covers(o, t))
    }

    /// Mean service capacity over `[t0, t1]` (packets/s): the trace's mean rate, or the
    /// time-integrated scheduled bandwidth, counting the time the link is down as zero (the
    /// bandwidth that would have been in force then is taken out, not the mean).
    pub fn capacity_pps(&self, t0: f64, t1: f64) -> f64 {
        let mean = |a: f64, b: f64| match (&self.service, &self.schedule) {
            (Service::Trace { trace, .. }, _) => trace.mean_rate_pps(),
            (Service::Fluid { .. }, None) => self.params.bandwidth_pps,
            (Service::Fluid { .. }, Some(s)) => mean_bandwidth(s, a, b),
        };
        if self.outages.is_none() || t1 <= t0 {
            return mean(t0, t1);
        }
        let down: f64 = self
            .down_windows(t0, t1)
            .into_iter()
            .map(|(a, b)| mean(a, b) * (b - a))
            .sum();
        ((mean(t0, t1) * (t1 - t0) - down) / (t1 - t0)).max(0.0)
    }

    /// Every time in `(0, until_s)` at which the scheduled parameters step (each repeat of a
    /// periodic schedule included) or the link goes down or comes back up, ascending.
    pub fn change_times(&self, until_s: f64) -> Vec<f64> {
        let mut times = Vec::new();
        if let Some(s) = &self.schedule {
            let cycles = match s.period_s {
                Some(p) if p > 0.0 => (until_s / p).ceil().max(1.0) as u64,
                _ => 1,
            };
            for cycle in 0..cycles {
                times.extend((0..s.steps.len()).map(|idx| s.time_of(cycle, idx)));
            }
        }
        for (a, b) in self.down_windows(0.0, until_s) {
            times.extend([a, b]);
        }
        times.retain(|&t| t > 0.0 && t < until_s);
        times.sort_by(f64::total_cmp);
        times.dedup();
        times
    }

    /// The latest reconfiguration of the path at or before `t`: a scheduled step of its
    /// parameters or the start of a link-down window (a handover), as a LEO path's companion
    /// (Starlink's reconfiguration schedule) announces it. `None` before the first.
    pub fn last_reconfiguration_at(&self, t: f64) -> Option<f64> {
        let step = self
            .schedule
            .as_ref()
            .and_then(|s| s.last_step_at_or_before(t));
        let outage = self
            .outages
            .iter()
            .flat_map(|o| o.iter())
            .filter(|o| o.start_s <= t)
            .map(|o| match o.period_s {
                Some(p) if p > 0.0 => o.start_s + ((t - o.start_s) / p).floor() * p,
                _ => o.start_s,
            })
            .fold(None, |best: Option<f64>, x| {
                Some(best.map_or(x, |b| b.max(x)))
            });
        match (step, outage) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether the link is down at some time within `guard_s` of `t` (a handover the path
    /// description declares, as SaTCP's link-layer hints predict it).
    pub fn down_near(&self, t: f64, guard_s: f64) -> bool {
        self.outages.is_some() && !self.down_windows(t - guard_s, t + guard_s).is_empty()
    }

    /// The windows within `[t0, t1]` in which the link is down, merged where outages overlap.
    fn down_windows(&self, t0: f64, t1: f64) -> Vec<(f64, f64)> {
        let mut windows = Vec::new();
        for o in self.outages.iter().flat_map(|o| o.iter()) {
            let mut push = |s: f64| {
                let (a, b) = (t0.max(s), t1.min(s + o.duration_s));
                if b > a {
                    windows.push((a, b));
                }
            };
            match o.period_s {
                None => push(o.start_s),
                Some(p) => {
                    let first = ((t0 - o.start_s - o.duration_s) / p).ceil().max(0.0) as u64;
                    let mut k = first;
                    while o.start_s + k as f64 * p < t1 {
                        push(o.start_s + k as f64 * p);
                        k += 1;
                    }
                }
            }
        }
        windows.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut merged: Vec<(f64, f64)> = Vec::with_capacity(windows.len());
        for (a, b) in windows {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        merged
    }

    /// Applies every scheduled change up to `t`, rescaling the fluid queue so the backlog in
    /// packets is kept when the bandwidth changes.
    #[inline]
    fn sync(&mut self, t: f64) {
        if self.schedule.is_some() {
            self.apply_changes_until(t);
        }
    }

    /// Applies the schedule's steps up to `t`, draining the fluid queue at each step's rate.
    fn apply_changes_until(&mut self, t: f64) {
        let Some(schedule) = &self.schedule else {
            return;
        };
        while let Some(c) = self.next_change {
            if c.time_s > t {
                break;
            }
            let next = schedule.steps[c.idx].1;
            if let Service::Fluid {
                queue_delay_s,
                updated_s,
            } = &mut self.service
            {
                let drained = (*queue_delay_s - (c.time_s - *updated_s)).max(0.0);
                *queue_delay_s = drained * self.params.bandwidth_pps / next.bandwidth_pps;
                *updated_s = c.time_s;
            }
            self.params = next;
            self.next_change = Self::cursor_after(schedule, c.cycle, c.idx);
        }
    }

    /// Current queueing delay at `t` (s), without changing state.
    pub fn queue_delay_s(&self, t: f64) -> f64 {
        match &self.service {
            Service::Fluid {
                queue_delay_s,
                updated_s,
            } => (queue_delay_s - (t - updated_s)).max(0.0),
            Service::Trace { departures, .. } => {
                departures.back().map_or(0.0, |&d| (d - t).max(0.0))
            }
        }
    }

    /// Longest queueing delay the fluid queue admits (`queue / bandwidth`).
    pub fn max_queue_delay_s(&self) -> f64 {
        self.params.queue_pkts / self.params.bandwidth_pps
    }

    /// Hands a packet to the forward link at time `t`.
    #[inline]
    pub fn enter<R: Rng>(&mut self, t: f64, rng: &mut R) -> Admission {
        self.enter_train(t, 1, rng)
    }

    /// Hands a train of `packets` back-to-back packets to the forward link at time `t` (one
    /// packet of the trace service, whatever `packets`).
    #[inline]
    pub fn enter_train<R: Rng>(&mut self, t: f64, packets: u32, rng: &mut R) -> Admission {
        self.sync(t);
        let delay = self.params.delay_s;
        let down = self.outages.is_some() && self.is_down(t);
        match &mut self.service {
            Service::Fluid {
                queue_delay_s,
                updated_s,
            } => {
                let current = (*queue_delay_s - (t - *updated_s)).max(0.0);
                let mut latency_s = delay + current;
                if self.latency_noise > 0.0 {
                    latency_s *= rng.random_range(1.0..=1.0 + self.latency_noise);
                }
                let dropped = if down || rng.random::<f64>() < self.params.loss {
                    true
                } else {
                    *queue_delay_s = current;
                    *updated_s = t;
                    let extra = f64::from(packets) / self.params.bandwidth_pps;
                    if extra + current > self.params.queue_pkts / self.params.bandwidth_pps {
                        true
                    } else {
                        *queue_delay_s += extra;
                        false
                    }
                };
                Admission { latency_s, dropped }
            }
            Service::Trace {
                trace,
                next_opportunity,
                departures,
            } => {
                while departures.front().is_some_and(|&d| d <= t) {
                    departures.pop_front();
                }
                let waiting = departures.back().map_or(0.0, |&d| (d - t).max(0.0));
                let lost = down || rng.random::<f64>() < self.params.loss;
                let (wait, dropped) = if lost || departures.len() as f64 >= self.params.queue_pkts {
                    (waiting, true)
                } else {
                    let k = (*next_opportunity).max(trace.first_at_or_after(t));
                    let departure = trace.opportunity_s(k);
                    *next_opportunity = k + 1;
                    departures.push_back(departure);
                    (departure - t, false)
                };
                let mut latency_s = delay + wait;
                if self.latency_noise > 0.0 {
                    latency_s *= rng.random_range(1.0..=1.0 + self.latency_noise);
                }
                Admission { latency_s, dropped }
            }
        }
    }

    /// Return-path latency of a packet reaching the receiver at `t`: propagation only.
    #[inline]
    pub fn return_latency<R: Rng>(&self, t: f64, rng: &mut R) -> f64 {
        let delay = match &self.schedule {
            Some(s) => s.at(t).delay_s,
            None => self.params.delay_s,
        };
        let mut latency = if self.latency_noise > 0.0 {
            delay * rng.random_range(1.0..=1.0 + self.latency_noise)
        } else {
            delay
        };
        if self.jitter_s > 0.0 {
            latency += rng.random_range(0.0..self.jitter_s);
        }
        latency
    }

    /// An ack's (arrival time, RTT sample) at the sender, from the time and RTT at which it
    /// comes back: unchanged, or held to the next multiple of the ack-aggregation interval.
    #[inline]
    pub fn delivered_ack(&self, arrival_s: f64, rtt_s: f64) -> (f64, f64) {
        if self.ack_aggregation_s <= 0.0 {
            return (arrival_s, rtt_s);
        }
        let held = (arrival_s / self.ack_aggregation_s).ceil() * self.ack_aggregation_s;
        (held, rtt_s + (held - arrival_s))
    }
}

fn outage_covers(o: &OutageConfig, t: f64) -> bool {
    if t < o.start_s {
        return false;
    }
    let since = t - o.start_s;
    match o.period_s {
        Some(p) => since - (since / p).floor() * p < o.duration_s,
        None => since < o.duration_s,
    }
}

fn mean_bandwidth(s: &Schedule, t0: f64, t1: f64) -> f64 {
    if t1 <= t0 {
        return s.at(t0).bandwidth_pps;
    }
    // Integrate the piecewise-constant bandwidth over [t0, t1].
    let mut t = t0;
    let mut area = 0.0;
    while t < t1 {
        let u_start = match s.period_s {
            Some(p) => (t / p).floor() * p,
            None => 0.0,
        };
        let u = t - u_start;
        let i = s.steps.partition_point(|st| st.0 <= u).saturating_sub(1);
        let end_in_cycle = match (s.steps.get(i + 1), s.period_s) {
            (Some(next), _) => u_start + next.0,
            (None, Some(p)) => u_start + p,
            (None, None) => f64::INFINITY,
        };
        let seg_end = end_in_cycle.min(t1);
        let seg_end = if seg_end <= t { t1 } else { seg_end };
        area += s.steps[i].1.bandwidth_pps * (seg_end - t);
        t = seg_end;
    }
    area / (t1 - t0)
}

#[cfg(test)]
mod tests;
