//! The [`Network`]: senders sharing a bottleneck link, advanced event by event
//! ([`Network::run_until`]), and its work counters ([`SimCounters`]).

use rand::Rng;
use serde::{Deserialize, Serialize};

use super::event::{Event, EventKind};
use super::in_flight::{InFlight, PacketMeta};
use super::sender::Sender;
use crate::link::Link;

/// Receiver arrivals a sender holds before the ones already past are dropped (see
/// [`Network::run_until`]).
const PENDING_ARRIVALS_LIMIT: usize = 4096;

/// Counters of simulation work (for benchmarks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SimCounters {
    /// Events processed (sends, receiver arrivals, ack/loss arrivals).
    pub events: u64,
    /// Packets sent (with packet trains, each train's packets).
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
        let train = if sender.cc.is_some() {
            1
        } else {
            self.link.train_for(sender.rate_pps)
        };
        // A learned sender's capacity train at its MI's first departure: that many of its
        // packets (each a simulated train at a fast rate) at one instant.
        let back_to_back = if sender.capacity_train > 1 && sender.mi.sent == 0 {
            sender.capacity_train
        } else {
            1
        };
        for _ in 0..back_to_back {
            self.send_unit(i, t, train, rng);
        }
        let sender = &mut self.senders[i];
        sender.next_send_s = t + f64::from(train * back_to_back) / sender.rate_pps;
    }

    /// Hands one packet (or packet train of `train` packets) of sender `i` to the link at `t`.
    fn send_unit<R: Rng>(&mut self, i: usize, t: f64, train: u32, rng: &mut R) {
        let sender = &mut self.senders[i];
        sender.mi.on_sent_train(train);
        sender.totals.sent += u64::from(train);
        sender.last_send_s = t;
        let meta = sender.cc.is_some().then_some(PacketMeta {
            sent_s: t,
            delivered_at_send: sender.delivered,
            delivered_time_at_send_s: sender.delivered_time_s,
        });
        let adm = self.link.enter_train(t, train, rng);
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
                packets: train,
            },
            meta,
        );
        self.counters.packets += u64::from(train);
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
                EventKind::Ack => self.senders[i].on_ack(event.t, &self.link),
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
mod tests;
