//! The event-driven network: senders pacing packets into a shared bottleneck link.
//!
//! As in Aurora, every packet makes three events: its paced send, its arrival at the receiver
//! (which does nothing but can be the event that ends an MI) and the arrival of its ack (or of
//! the news that it was lost, when its ack would have arrived). Because the link is FIFO, each
//! sender's arrivals mostly come in send order; they are kept in per-sender deques sorted by
//! time (an out-of-order arrival, caused by latency noise or a delay drop, is inserted in place),
//! and the next event is the earliest head over all senders. Receiver arrivals, which change
//! nothing but the time, are looked at only where one could be the event that ends an MI or a
//! run (see [`Network::run_until`]).
//!
//! Ties follow Aurora's heap order `(time, sender, type, hop, latency, dropped)`: at equal times
//! the lower sender index goes first; within a sender, receiver arrivals, then ack arrivals, then
//! the send; equal-time acks by lower RTT first, then delivered before lost.

use mocc_policy::{MiCounters, MonitorInterval};
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

use crate::cc::{Ack, ClassicCc, Loss};
use crate::link::Link;

/// How a sender's rate evolves between MIs (besides the agent's actions).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Pacing {
    /// Paces at `rate_pps` continuously.
    Continuous,
    /// Sends for `on_s`, stays silent for `off_s`, from its start time, repeating.
    OnOff {
        /// Sending period (s).
        on_s: f64,
        /// Silent period (s).
        off_s: f64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct InFlight {
    arrival_s: f64,
    rtt_s: f64,
    lost: bool,
}

/// What a classic controller needs to know about a packet in flight, kept beside `InFlight`
/// (same order) only for classic senders, so the learned senders' hot path stays lean.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct PacketMeta {
    sent_s: f64,
    /// Packets delivered when this one was sent, and the time of the last of them (for
    /// delivery-rate samples).
    delivered_at_send: u64,
    delivered_time_at_send_s: f64,
}

impl InFlight {
    /// Aurora's order among ack arrivals: time, then RTT, then delivered before lost.
    fn precedes_or_ties(&self, other: &InFlight) -> bool {
        (self.arrival_s, self.rtt_s, self.lost) <= (other.arrival_s, other.rtt_s, other.lost)
    }
}

/// Lifetime totals of a sender (for conservation checks and summaries).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SenderTotals {
    /// Packets sent.
    pub sent: u64,
    /// Packets acknowledged.
    pub acked: u64,
    /// Packets reported lost.
    pub lost: u64,
}

/// One sender: its pacing clock, in-flight packets and MI statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sender {
    rate_pps: f64,
    pacing: Pacing,
    /// Infinite for a sender that sits the episode out.
    #[serde(with = "crate::serde_float")]
    start_s: f64,
    #[serde(with = "crate::serde_float")]
    next_send_s: f64,
    at_receiver: VecDeque<f64>,
    inflight: VecDeque<InFlight>,
    mi: MiCounters,
    totals: SenderTotals,
    #[serde(with = "crate::serde_float")]
    mi_end_s: f64,
    /// A classic controller setting window and pacing (none: paced at `rate_pps`).
    #[serde(default)]
    cc: Option<Box<ClassicCc>>,
    /// `PacketMeta` of each packet in `inflight`, in the same order (classic senders only).
    #[serde(default)]
    meta: VecDeque<PacketMeta>,
    /// Packets delivered so far and the time of the last delivery.
    #[serde(default)]
    delivered: u64,
    #[serde(default, with = "crate::serde_float")]
    delivered_time_s: f64,
    /// The window is full: the next send waits for an ack.
    #[serde(default)]
    window_blocked: bool,
    /// Time of the last packet sent.
    #[serde(default, with = "crate::serde_float")]
    last_send_s: f64,
    /// The sender sends nothing from this time on (it left).
    #[serde(
        default = "never",
        with = "crate::serde_float",
        skip_serializing_if = "is_never"
    )]
    stop_s: f64,
    /// Round-trip time the sender's own access path adds (s).
    #[serde(default, skip_serializing_if = "is_zero")]
    extra_rtt_s: f64,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

fn never() -> f64 {
    f64::INFINITY
}

fn is_never(t: &f64) -> bool {
    *t == f64::INFINITY
}

impl Sender {
    /// A sender that starts at `start_s` with `rate_pps`; its first packet leaves one packet
    /// interval later (Aurora).
    pub fn new(rate_pps: f64, pacing: Pacing, start_s: f64) -> Self {
        Self {
            rate_pps,
            pacing,
            start_s,
            next_send_s: start_s + 1.0 / rate_pps,
            at_receiver: VecDeque::new(),
            inflight: VecDeque::new(),
            mi: MiCounters::starting_at(start_s),
            totals: SenderTotals::default(),
            mi_end_s: f64::INFINITY,
            cc: None,
            meta: VecDeque::new(),
            delivered: 0,
            delivered_time_s: start_s,
            window_blocked: false,
            last_send_s: start_s,
            stop_s: f64::INFINITY,
            extra_rtt_s: 0.0,
        }
    }

    /// Reinitializes the sender in place (buffers keep their capacity).
    pub fn reset(&mut self, rate_pps: f64, pacing: Pacing, start_s: f64) {
        self.rate_pps = rate_pps;
        self.pacing = pacing;
        self.start_s = start_s;
        self.next_send_s = start_s + 1.0 / rate_pps;
        self.at_receiver.clear();
        self.inflight.clear();
        self.mi.restart(start_s);
        self.totals = SenderTotals::default();
        self.mi_end_s = f64::INFINITY;
        self.cc = None;
        self.meta.clear();
        self.delivered = 0;
        self.delivered_time_s = start_s;
        self.window_blocked = false;
        self.last_send_s = start_s;
        self.stop_s = f64::INFINITY;
        self.extra_rtt_s = 0.0;
    }

    /// The sender sends nothing from `stop_s` on (a departing flow).
    pub fn set_stop(&mut self, stop_s: f64) {
        self.stop_s = stop_s;
    }

    /// Adds `extra_rtt_s` of the sender's own access path to every packet's round trip.
    pub fn set_extra_rtt(&mut self, extra_rtt_s: f64) {
        self.extra_rtt_s = extra_rtt_s;
    }

    /// Round-trip time the sender's access path adds (s).
    pub fn extra_rtt_s(&self) -> f64 {
        self.extra_rtt_s
    }

    /// Whether the sender takes part at `t`: started and not yet left.
    pub fn is_active(&self, t: f64) -> bool {
        self.start_s <= t && t < self.stop_s
    }

    /// Hands the sender to a classic controller (after [`Sender::reset`]): it then sends only
    /// while fewer than `cwnd` packets are in flight, paced at the controller's rate.
    pub fn set_classic(&mut self, cc: ClassicCc) {
        self.rate_pps = cc.pacing_pps();
        self.next_send_s = self.start_s;
        self.cc = Some(Box::new(cc));
    }

    /// The classic controller, if one drives this sender.
    pub fn classic(&self) -> Option<&ClassicCc> {
        self.cc.as_deref()
    }

    /// Current pacing rate (packets/s).
    pub fn rate_pps(&self) -> f64 {
        self.rate_pps
    }

    /// Sets the pacing rate; it governs the interval after the next already-scheduled send.
    pub fn set_rate_pps(&mut self, rate_pps: f64) {
        self.rate_pps = rate_pps;
    }

    /// Lifetime totals.
    pub fn totals(&self) -> SenderTotals {
        self.totals
    }

    /// Packets sent whose fate is not yet known.
    pub fn in_flight(&self) -> usize {
        self.inflight.len()
    }

    /// Closes the MI in progress at `now` and starts the next one.
    pub fn close_mi(&mut self, now: f64) -> MonitorInterval {
        self.mi.close(now)
    }

    fn push_inflight(&mut self, p: InFlight, meta: Option<PacketMeta>) {
        let at = sorted_position_from_back(&self.inflight, |q| q.precedes_or_ties(&p));
        insert_at(&mut self.inflight, at, p);
        if let Some(m) = meta {
            insert_at(&mut self.meta, at, m);
        }
    }

    fn push_at_receiver(&mut self, t: f64) {
        let at = sorted_position_from_back(&self.at_receiver, |&q| q <= t);
        insert_at(&mut self.at_receiver, at, t);
    }

    /// This sender's next packet event other than a receiver arrival: the ack (or loss news)
    /// before the send at equal times. Infinite when neither can happen.
    #[inline]
    fn next_transmission_event(&self) -> (f64, EventKind) {
        let ack = self.inflight.front().map_or(f64::INFINITY, |p| p.arrival_s);
        if ack <= self.next_send_s {
            (ack, EventKind::Ack)
        } else {
            (self.next_send_s, EventKind::Send)
        }
    }

    /// This sender's next event: receiver arrivals, then acks, then the send at equal times.
    #[inline]
    fn next_event(&self) -> (f64, EventKind) {
        let transmission = self.next_transmission_event();
        match self.at_receiver.front() {
            Some(&recv) if recv <= transmission.0 => (recv, EventKind::Receiver),
            _ => transmission,
        }
    }

    /// Drops the receiver arrivals before `t` (they change nothing but the time); returns how
    /// many.
    fn skip_receiver_arrivals_before(&mut self, t: f64) -> u64 {
        let mut skipped = 0;
        while self.at_receiver.front().is_some_and(|&r| r < t) {
            self.at_receiver.pop_front();
            skipped += 1;
        }
        skipped
    }

    fn on_ack(&mut self, now: f64) {
        let Some(p) = self.inflight.pop_front() else {
            return;
        };
        if p.lost {
            self.mi.on_lost();
            self.totals.lost += 1;
        } else {
            self.mi.on_acked(p.rtt_s);
            self.totals.acked += 1;
        }
        if self.cc.is_some() {
            if let Some(m) = self.meta.pop_front() {
                self.classic_feedback(now, &p, &m);
            }
        }
    }

    /// Tells the classic controller about an ack or a loss, then reopens a full window.
    fn classic_feedback(&mut self, now: f64, p: &InFlight, m: &PacketMeta) {
        let inflight = self.inflight.len();
        let Some(cc) = self.cc.as_mut() else {
            return;
        };
        if p.lost {
            cc.on_loss(&Loss {
                now_s: now,
                sent_s: m.sent_s,
                inflight,
            });
        } else {
            self.delivered += 1;
            self.delivered_time_s = now;
            cc.on_ack(&Ack {
                now_s: now,
                rtt_s: p.rtt_s,
                sent_s: m.sent_s,
                delivered: self.delivered,
                delivered_at_send: m.delivered_at_send,
                delivered_time_at_send_s: m.delivered_time_at_send_s,
                inflight,
            });
        }
        self.rate_pps = cc.pacing_pps();
        if self.window_blocked && (inflight as f64) < cc.cwnd() {
            self.window_blocked = false;
            self.next_send_s = now;
        } else if !self.window_blocked && self.next_send_s.is_finite() {
            // A faster pacing rate applies at once, not after the send scheduled at the old one.
            let earliest = (self.last_send_s + 1.0 / self.rate_pps).max(now);
            if earliest < self.next_send_s {
                self.next_send_s = earliest;
            }
        }
    }

    /// Whether the on/off schedule lets the sender transmit at `t`; if not, the time it may.
    fn sending_allowed(&self, t: f64) -> Result<(), f64> {
        match self.pacing {
            Pacing::Continuous => Ok(()),
            Pacing::OnOff { on_s, off_s } => {
                let cycle = on_s + off_s;
                let since = t - self.start_s;
                let phase = since - (since / cycle).floor() * cycle;
                let resume = t - phase + cycle;
                // At a cycle boundary rounding can leave `phase` a hair below `cycle`: the next
                // on-period starts now.
                if phase < on_s || resume <= t {
                    Ok(())
                } else {
                    Err(resume)
                }
            }
        }
    }
}

/// Where an item goes in a deque sorted by `precedes_or_ties`: after every element that
/// precedes or ties it (so equal items keep their arrival order). Searched from the back, because
/// an item almost always goes at or near the end: arrivals come mostly in send order, and the
/// exceptions (a full queue's drops, whose times differ from the last accepted packet's only by
/// rounding; latency noise) land a few places from the end.
#[inline]
fn sorted_position_from_back<T>(
    items: &VecDeque<T>,
    precedes_or_ties: impl Fn(&T) -> bool,
) -> usize {
    let mut at = items.len();
    while at > 0 && !precedes_or_ties(&items[at - 1]) {
        at -= 1;
    }
    at
}

/// `VecDeque::insert`, with the common case (at the end) as a plain push.
#[inline]
fn insert_at<T>(items: &mut VecDeque<T>, at: usize, item: T) {
    if at == items.len() {
        items.push_back(item);
    } else {
        items.insert(at, item);
    }
}

/// Receiver arrivals a sender holds before the ones already past are dropped (see
/// [`Network::run_until`]).
const PENDING_ARRIVALS_LIMIT: usize = 4096;

/// Which kind of event comes next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EventKind {
    Receiver,
    Ack,
    Send,
}

/// An event: its time, sender and kind.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Event {
    t: f64,
    sender: usize,
    kind: EventKind,
}

/// Counters of simulation work (for benchmarks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SimCounters {
    /// Events processed (sends, receiver arrivals, ack/loss arrivals).
    pub events: u64,
    /// Packets sent.
    pub packets: u64,
}

/// A bottleneck link shared by senders, advanced in event time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Network {
    link: Link,
    senders: Vec<Sender>,
    now_s: f64,
    counters: SimCounters,
}

impl Network {
    /// A network at time 0.
    pub fn new(link: Link, senders: Vec<Sender>) -> Self {
        Self {
            link,
            senders,
            now_s: 0.0,
            counters: SimCounters::default(),
        }
    }

    /// Replaces the link and restarts time (senders are reset by the caller).
    pub fn reset_link(&mut self, link: Link) {
        self.link = link;
        self.now_s = 0.0;
    }

    /// Current simulation time (s): the time of the last processed event.
    pub fn now_s(&self) -> f64 {
        self.now_s
    }

    /// The link.
    pub fn link(&self) -> &Link {
        &self.link
    }

    /// The link, mutably (to re-attach shared parts after deserialization, or to set an
    /// episode's loss).
    pub fn link_mut(&mut self) -> &mut Link {
        &mut self.link
    }

    /// The senders.
    pub fn senders(&self) -> &[Sender] {
        &self.senders
    }

    /// Mutable access to the senders (rates, resets).
    pub fn senders_mut(&mut self) -> &mut Vec<Sender> {
        &mut self.senders
    }

    /// Work counters since creation.
    pub fn counters(&self) -> SimCounters {
        self.counters
    }

    /// Sets when sender `i`'s MI ends; `Network::run_until` reports crossing it via the callback.
    pub fn set_mi_end(&mut self, i: usize, end_s: f64) {
        self.senders[i].mi_end_s = end_s;
    }

    /// The next event: earliest time, then lowest sender index (then the sender's own order).
    #[inline]
    fn next_event(&self) -> Event {
        self.earliest_over_senders(Sender::next_event)
    }

    /// The next event other than a receiver arrival.
    #[inline]
    fn next_transmission_event(&self) -> Event {
        self.earliest_over_senders(Sender::next_transmission_event)
    }

    #[inline]
    fn earliest_over_senders(&self, next: impl Fn(&Sender) -> (f64, EventKind)) -> Event {
        let mut best = Event {
            t: f64::INFINITY,
            sender: usize::MAX,
            kind: EventKind::Send,
        };
        for (i, s) in self.senders.iter().enumerate() {
            let (t, kind) = next(s);
            if t < best.t {
                best = Event { t, sender: i, kind };
            }
        }
        best
    }

    /// Drops every sender's receiver arrivals before `t`, counting them as events.
    fn skip_receiver_arrivals_before(&mut self, t: f64) {
        for s in &mut self.senders {
            self.counters.events += s.skip_receiver_arrivals_before(t);
        }
    }

    fn send<R: Rng>(&mut self, i: usize, t: f64, rng: &mut R) {
        let sender = &mut self.senders[i];
        if t >= sender.stop_s {
            sender.next_send_s = f64::INFINITY;
            return;
        }
        if let Err(resume) = sender.sending_allowed(t) {
            sender.next_send_s = resume;
            return;
        }
        if let Some(cc) = &sender.cc {
            if sender.inflight.len() as f64 >= cc.cwnd() {
                sender.window_blocked = true;
                sender.next_send_s = f64::INFINITY;
                return;
            }
        }
        sender.mi.on_sent();
        sender.totals.sent += 1;
        sender.next_send_s = t + 1.0 / sender.rate_pps;
        sender.last_send_s = t;
        let meta = sender.cc.is_some().then_some(PacketMeta {
            sent_s: t,
            delivered_at_send: sender.delivered,
            delivered_time_at_send_s: sender.delivered_time_s,
        });
        let adm = self.link.enter(t, rng);
        let at_receiver = t + adm.latency_s;
        let back = self.link.return_latency(at_receiver, rng) + self.senders[i].extra_rtt_s;
        let (arrival_s, rtt_s) = self
            .link
            .delivered_ack(at_receiver + back, adm.latency_s + back);
        let sender = &mut self.senders[i];
        sender.push_at_receiver(at_receiver);
        if sender.at_receiver.len() > PENDING_ARRIVALS_LIMIT {
            // Without a bound in sight (no MI end, a far end of the run) the skipped arrivals
            // would pile up; those before now are past in any order.
            self.counters.events += sender.skip_receiver_arrivals_before(t);
        }
        sender.push_inflight(
            InFlight {
                arrival_s,
                rtt_s,
                lost: adm.dropped,
            },
            meta,
        );
        self.counters.packets += 1;
    }

    /// Processes events while the time is before `end_s` (the event crossing `end_s` is
    /// included, as in Aurora). Whenever the time reaches a sender's MI end (see
    /// [`Network::set_mi_end`]), `on_mi_end(network, sender index)` is called after that event.
    ///
    /// A receiver arrival changes nothing but the time, and the time matters only to the event
    /// that crosses `end_s` or an MI end. So sends and acks before that bound are processed
    /// without looking at receiver arrivals; at the bound, the receiver arrivals before it are
    /// dropped in one go and the crossing event is chosen among all events, as if each arrival
    /// had been its own step. The bound moves only after such a crossing (or between calls), when
    /// no arrival before the current time is left, so the state at every `on_mi_end` and between
    /// calls is the one of the plain event loop.
    pub fn run_until<R: Rng>(
        &mut self,
        end_s: f64,
        rng: &mut R,
        mut on_mi_end: impl FnMut(&mut Network, usize),
    ) {
        let mut next_mi_end = self.earliest_mi_end();
        while self.now_s < end_s {
            let bound = end_s.min(next_mi_end);
            let mut event = self.next_transmission_event();
            if event.t >= bound {
                self.skip_receiver_arrivals_before(bound);
                event = self.next_event();
            }
            if !event.t.is_finite() {
                // Nothing can happen any more (no sender paces and nothing is in flight).
                self.now_s = self.now_s.max(end_s);
                break;
            }
            debug_assert!(
                event.t >= self.now_s,
                "time went backwards: {} < {}",
                event.t,
                self.now_s
            );
            self.now_s = event.t;
            let i = event.sender;
            match event.kind {
                EventKind::Receiver => {
                    self.senders[i].at_receiver.pop_front();
                }
                EventKind::Ack => self.senders[i].on_ack(event.t),
                EventKind::Send => self.send(i, event.t, rng),
            }
            self.counters.events += 1;
            if self.now_s >= next_mi_end {
                for j in 0..self.senders.len() {
                    if self.now_s >= self.senders[j].mi_end_s {
                        self.senders[j].mi_end_s = f64::INFINITY;
                        on_mi_end(self, j);
                    }
                }
                next_mi_end = self.earliest_mi_end();
            }
        }
    }

    fn earliest_mi_end(&self) -> f64 {
        self.senders
            .iter()
            .map(|s| s.mi_end_s)
            .fold(f64::INFINITY, f64::min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::ClassicCc;
    use crate::link::LinkParams;
    use mocc_policy::BYTES_PER_PACKET;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn snapshots_from_before_classic_controllers_still_load() {
        // A network mid-run, serialized, with the fields classic controllers added removed.
        let mut n = net(150.0, 0.05);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        n.run_until(0.5, &mut rng, |_, _| {});
        let mut v = serde_json::to_value(&n).unwrap();
        let senders = v["senders"].as_array_mut().unwrap();
        for s in senders.iter_mut() {
            let s = s.as_object_mut().unwrap();
            for k in [
                "cc",
                "delivered",
                "delivered_time_s",
                "window_blocked",
                "last_send_s",
            ] {
                assert!(s.remove(k).is_some(), "{k}");
            }
        }
        let mut old: Network = serde_json::from_value(v).expect("old snapshot loads");
        let (mut a, mut b) = (rng.clone(), rng);
        n.run_until(2.0, &mut a, |_, _| {});
        old.run_until(2.0, &mut b, |_, _| {});
        assert_eq!(n.senders()[0].totals(), old.senders()[0].totals());
        assert_eq!(n.now_s(), old.now_s());
    }

    /// The plain event loop, every receiver arrival its own step, with the next event picked as
    /// before receiver arrivals were skipped: the oracle for `run_until`.
    fn run_until_one_event_at_a_time<R: Rng>(
        n: &mut Network,
        end_s: f64,
        rng: &mut R,
        mut on_mi_end: impl FnMut(&mut Network, usize),
    ) {
        while n.now_s < end_s {
            let mut next = (f64::INFINITY, usize::MAX, EventKind::Send);
            for (i, s) in n.senders.iter().enumerate() {
                let recv = s.at_receiver.front().copied().unwrap_or(f64::INFINITY);
                let ack = s.inflight.front().map_or(f64::INFINITY, |p| p.arrival_s);
                let (t, kind) = if recv <= ack && recv <= s.next_send_s && recv.is_finite() {
                    (recv, EventKind::Receiver)
                } else if ack <= s.next_send_s && ack.is_finite() {
                    (ack, EventKind::Ack)
                } else {
                    (s.next_send_s, EventKind::Send)
                };
                if t < next.0 {
                    next = (t, i, kind);
                }
            }
            let (t, i, kind) = next;
            if !t.is_finite() {
                n.now_s = n.now_s.max(end_s);
                break;
            }
            n.now_s = t;
            match kind {
                EventKind::Receiver => {
                    n.senders[i].at_receiver.pop_front();
                }
                EventKind::Ack => n.senders[i].on_ack(t),
                EventKind::Send => n.send(i, t, rng),
            }
            n.counters.events += 1;
            for j in 0..n.senders.len() {
                if n.now_s >= n.senders[j].mi_end_s {
                    n.senders[j].mi_end_s = f64::INFINITY;
                    on_mi_end(n, j);
                }
            }
        }
    }

    /// Three senders (one Cubic, one on/off) on a small noisy queue with aggregated acks, so
    /// arrivals come out of order and at equal times; MIs of each sender's own length, some set
    /// to end in the past.
    fn busy_network() -> Network {
        let link = Link::fixed(LinkParams {
            bandwidth_pps: 300.0,
            delay_s: 0.02,
            queue_pkts: 6.0,
            loss: 0.02,
        })
        .with_latency_noise(0.3)
        .with_host_noise(0.0005, 0.002);
        let mut cubic = Sender::new(100.0, Pacing::Continuous, 0.3);
        cubic.set_classic(ClassicCc::new(crate::cc::ClassicKind::Cubic));
        // Without an MI clock, leaving at 4 s.
        let mut leaving = Sender::new(60.0, Pacing::Continuous, 0.5);
        leaving.set_stop(4.0);
        let senders = vec![
            Sender::new(180.0, Pacing::Continuous, 0.0),
            cubic,
            Sender::new(
                250.0,
                Pacing::OnOff {
                    on_s: 0.4,
                    off_s: 0.3,
                },
                0.1,
            ),
            leaving,
        ];
        let mut n = Network::new(link, senders);
        for i in 0..3 {
            n.set_mi_end(i, 0.05 * (i + 1) as f64);
        }
        n
    }

    #[test]
    fn skipping_receiver_arrivals_changes_nothing() {
        let (mut lazy, mut eager) = (busy_network(), busy_network());
        let (mut rng_lazy, mut rng_eager) =
            (ChaCha8Rng::seed_from_u64(5), ChaCha8Rng::seed_from_u64(5));
        let mut log_lazy = Vec::new();
        let mut log_eager = Vec::new();
        let mi_end = |log: &mut Vec<(usize, f64, u64)>, n: &mut Network, i: usize| {
            let now = n.now_s();
            log.push((i, now, n.counters().events));
            let mi = n.senders[i].close_mi(now);
            // Every seventh MI ends "in the past": the next event closes it.
            let len = if log.len().is_multiple_of(7) {
                -0.001
            } else {
                0.01 + 0.5 * mi.rtt.mean_s
            };
            n.set_mi_end(i, now + len);
            n.senders[i].set_rate_pps(150.0 + 20.0 * (log.len() % 9) as f64);
        };
        let mut end = 0.0;
        while end < 6.0 {
            end += 0.037;
            lazy.run_until(end, &mut rng_lazy, |n, i| mi_end(&mut log_lazy, n, i));
            run_until_one_event_at_a_time(&mut eager, end, &mut rng_eager, |n, i| {
                mi_end(&mut log_eager, n, i)
            });
            assert_eq!(lazy, eager, "state after running until {end}");
        }
        assert_eq!(log_lazy, log_eager);
        assert!(log_lazy.len() > 300, "{} MIs", log_lazy.len());
        let lost: u64 = lazy.senders().iter().map(|s| s.totals().lost).sum();
        assert!(lost > 50, "the queue overflows ({lost} lost)");
        // Everyone leaves; running to the end drains what is in flight.
        for n in [&mut lazy, &mut eager] {
            for s in n.senders_mut() {
                s.set_stop(6.5);
            }
        }
        lazy.run_until(f64::INFINITY, &mut rng_lazy, |n, i| {
            mi_end(&mut log_lazy, n, i)
        });
        run_until_one_event_at_a_time(&mut eager, f64::INFINITY, &mut rng_eager, |n, i| {
            mi_end(&mut log_eager, n, i)
        });
        assert_eq!(lazy, eager);
        assert_eq!(log_lazy, log_eager);
        assert_eq!(lazy.now_s(), f64::INFINITY);
        assert!(lazy.senders().iter().all(|s| s.in_flight() == 0));
    }

    #[test]
    fn skipped_receiver_arrivals_do_not_pile_up_without_a_bound() {
        // 3,000 pkt/s with no MI clock, run for 5 s in one call: 15,000 arrivals before the
        // bound, of which at most the limit (and what is in flight) are held.
        let link = Link::fixed(LinkParams {
            bandwidth_pps: 4000.0,
            delay_s: 0.01,
            queue_pkts: 50.0,
            loss: 0.0,
        });
        let make = || {
            Network::new(
                link.clone(),
                vec![Sender::new(3000.0, Pacing::Continuous, 0.0)],
            )
        };
        let (mut lazy, mut eager) = (make(), make());
        let (mut a, mut b) = (ChaCha8Rng::seed_from_u64(2), ChaCha8Rng::seed_from_u64(2));
        lazy.run_until(5.0, &mut a, |_, _| {});
        run_until_one_event_at_a_time(&mut eager, 5.0, &mut b, |_, _| {});
        assert_eq!(lazy, eager);
        let held = lazy.senders()[0].at_receiver.capacity();
        assert!(held <= 2 * PENDING_ARRIVALS_LIMIT, "capacity {held}");
        assert!(lazy.senders()[0].totals().sent > 14_000);
    }

    fn net(rate: f64, delay_s: f64) -> Network {
        let link = Link::fixed(LinkParams {
            bandwidth_pps: 100.0,
            delay_s,
            queue_pkts: 2.0,
            loss: 0.0,
        });
        Network::new(link, vec![Sender::new(rate, Pacing::Continuous, 0.0)])
    }

    #[test]
    fn under_capacity_every_rtt_is_propagation() {
        // 50 pkt/s on a 100 pkt/s link: the queue empties between packets.
        let mut n = net(50.0, 0.055);
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        n.run_until(1.005, &mut rng, |_, _| {});
        let now = n.now_s();
        let mi = n.senders[0].close_mi(now);
        // Sends at 0.02k; acks 0.11 s later. Events up to 1.005 (sends k <= 50, acks k <= 44),
        // then the crossing event: the ack of packet 45 at 1.01.
        assert_eq!(mi.bytes_sent / BYTES_PER_PACKET, 50.0);
        assert_eq!(mi.bytes_acked / BYTES_PER_PACKET, 45.0);
        assert_eq!(mi.bytes_lost, 0.0);
        assert!((mi.rtt.mean_s - 0.11).abs() < 1e-12);
        assert!((n.now_s() - 1.01).abs() < 1e-9);
    }

    #[test]
    fn over_capacity_drops_and_queues() {
        // 200 pkt/s into 100 pkt/s with a 2-packet queue: every other packet is dropped once
        // the queue is full; accepted ones wait ~1/bw.
        let mut n = net(200.0, 0.05);
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        n.run_until(2.0, &mut rng, |_, _| {});
        let now = n.now_s();
        let mi = n.senders[0].close_mi(now);
        let acked = mi.bytes_acked / BYTES_PER_PACKET;
        let lost = mi.bytes_lost / BYTES_PER_PACKET;
        let sent = mi.bytes_sent / BYTES_PER_PACKET;
        // 400 sends up to t = 2.0, plus possibly the crossing event.
        assert!((400.0..=401.0).contains(&sent), "sent {sent}");
        // Throughput is capped by the link: ~100 pkt/s.
        assert!((acked / 1.9 - 100.0).abs() < 3.0, "acked {acked}");
        assert!((lost / (acked + lost) - 0.5).abs() < 0.02, "lost {lost}");
        assert!(mi.rtt.mean_s > 0.1 && mi.rtt.mean_s <= 0.1 + 0.02 + 1e-12);
    }
}
