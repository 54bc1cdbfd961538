//! One [`Sender`]: its pacing clock ([`Pacing`]), classic controller, packets in flight and
//! MI statistics, and what it does at an ack or a loss.

use mocc_policy::{ActionRule, MiCounters, MonitorInterval};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

use super::event::EventKind;
use super::in_flight::{insert_at, sorted_position_from_back, InFlight, PacketMeta};
use crate::cc::{Ack, ClassicCc, Cubic, Loss, PathHints, HANDOVER_HINT_GUARD_S};
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
    pub(super) rate_pps: f64,
    pacing: Pacing,
    /// Infinite for a sender that sits the episode out.
    #[serde(with = "crate::serde_float")]
    start_s: f64,
    #[serde(with = "crate::serde_float")]
    pub(super) next_send_s: f64,
    pub(super) at_receiver: VecDeque<f64>,
    pub(super) inflight: VecDeque<InFlight>,
    pub(super) mi: MiCounters,
    pub(super) totals: SenderTotals,
    #[serde(with = "crate::serde_float")]
    pub(super) mi_end_s: f64,
    /// A classic controller setting window and pacing (none: paced at `rate_pps`).
    #[serde(default)]
    pub(super) cc: Option<Box<ClassicCc>>,
    /// `PacketMeta` of each packet in `inflight`, in the same order (classic senders only).
    #[serde(default)]
    meta: VecDeque<PacketMeta>,
    /// Packets delivered so far and the time of the last delivery.
    #[serde(default)]
    pub(super) delivered: u64,
    #[serde(default, with = "crate::serde_float")]
    pub(super) delivered_time_s: f64,
    /// The window is full: the next send waits for an ack.
    #[serde(default)]
    pub(super) window_blocked: bool,
    /// Time of the last packet sent.
    #[serde(default, with = "crate::serde_float")]
    pub(super) last_send_s: f64,
    /// The sender sends nothing from this time on (it left).
    #[serde(
        default = "never",
        with = "crate::serde_float",
        skip_serializing_if = "is_never"
    )]
    pub(super) stop_s: f64,
    /// Round-trip time the sender's own access path adds (s).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(super) extra_rtt_s: f64,
    /// Packets (or packet trains) sent back to back at each MI's first departure, the
    /// learned sender's capacity trains (1: none; classic senders never send them).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub(super) capacity_train: u32,
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
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
            capacity_train: 1,
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
        self.capacity_train = 1;
        self.mi.measure_trains(false);
    }

    /// The sender sends nothing from `stop_s` on (a departing flow).
    pub fn set_stop(&mut self, stop_s: f64) {
        self.stop_s = stop_s;
    }

    /// Adds `extra_rtt_s` of the sender's own access path to every packet's round trip.
    pub fn set_extra_rtt(&mut self, extra_rtt_s: f64) {
        self.extra_rtt_s = extra_rtt_s;
    }

    /// Sends `packets` back to back at each MI's first departure (a learned sender's
    /// [`mocc_policy::SenderLoop::train_packets`]); the next departure is that many packet
    /// intervals later.
    pub fn set_capacity_train(&mut self, packets: u32) {
        self.capacity_train = packets.max(1);
        self.mi.measure_trains(self.capacity_train > 1);
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

    pub(super) fn push_inflight(&mut self, p: InFlight, meta: Option<PacketMeta>) {
        let at = sorted_position_from_back(&self.inflight, |q| q.precedes_or_ties(&p));
        insert_at(&mut self.inflight, at, p);
        if let Some(m) = meta {
            insert_at(&mut self.meta, at, m);
        }
    }

    pub(super) fn push_at_receiver(&mut self, t: f64) {
        let at = sorted_position_from_back(&self.at_receiver, |&q| q <= t);
        insert_at(&mut self.at_receiver, at, t);
    }

    /// This sender's next packet event other than a receiver arrival: the ack (or loss news)
    /// before the send at equal times. Infinite when neither can happen.
    #[inline]
    pub(super) fn next_transmission_event(&self) -> (f64, EventKind) {
        let ack = self.inflight.front().map_or(f64::INFINITY, |p| p.arrival_s);
        if ack <= self.next_send_s {
            (ack, EventKind::Ack)
        } else {
            (self.next_send_s, EventKind::Send)
        }
    }

    /// This sender's next event: receiver arrivals, then acks, then the send at equal times.
    #[inline]
    pub(super) fn next_event(&self) -> (f64, EventKind) {
        let transmission = self.next_transmission_event();
        match self.at_receiver.front() {
            Some(&recv) if recv <= transmission.0 => (recv, EventKind::Receiver),
            _ => transmission,
        }
    }

    /// Drops the receiver arrivals before `t` (they change nothing but the time); returns how
    /// many.
    pub(super) fn skip_receiver_arrivals_before(&mut self, t: f64) -> u64 {
        let mut skipped = 0;
        while self.at_receiver.front().is_some_and(|&r| r < t) {
            self.at_receiver.pop_front();
            skipped += 1;
        }
        skipped
    }

    /// The news of the oldest packet (or packet train) in flight: acknowledged or lost.
    pub(super) fn on_ack(&mut self, now: f64, link: &Link) {
        let Some(p) = self.inflight.pop_front() else {
            return;
        };
        if p.lost {
            self.mi.on_lost_train(p.packets);
            self.totals.lost += u64::from(p.packets);
        } else {
            self.mi.on_acked_train(now, p.rtt_s, p.packets);
            self.totals.acked += u64::from(p.packets);
        }
        if self.cc.is_some() {
            if let Some(m) = self.meta.pop_front() {
                self.classic_feedback(now, &p, &m, link);
            }
        }
    }

    /// Tells the classic controller about an ack or a loss, then reopens a full window.
    fn classic_feedback(&mut self, now: f64, p: &InFlight, m: &PacketMeta, link: &Link) {
        let inflight = self.inflight.len();
        let Some(cc) = self.cc.as_mut() else {
            return;
        };
        if cc.uses_path_hints() {
            cc.on_path_hints(&PathHints {
                last_reconfiguration_s: link.last_reconfiguration_at(now),
                sent_in_handover: link.down_near(m.sent_s, HANDOVER_HINT_GUARD_S),
            });
        }
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
        self.follow_classic(now);
    }

    /// Gives the sender the Cubic a learned sender with Orca's rule
    /// ([`mocc_policy::WindowScale`]) runs under its decisions (after [`Sender::reset`]).
    pub fn set_window_scaled(&mut self) {
        self.set_classic(ClassicCc::Cubic(Cubic::default()));
    }

    /// Orca's decision at `now`: `rule`'s factor for `action` multiplies the window of the
    /// sender's Cubic (a growing window stops at the one that paces at `rule.max_rate_pps`).
    /// Returns whether it did: not for a rule that steps the rate or a sender without Cubic.
    pub fn scale_window(&mut self, rule: &ActionRule, action: f64, now: f64) -> bool {
        let Some(factor) = rule.window_factor(action) else {
            return false;
        };
        let Some(ClassicCc::Cubic(cubic)) = self.cc.as_deref_mut() else {
            return false;
        };
        cubic.scale_window(factor, rule.max_rate_pps);
        self.follow_classic(now);
        true
    }

    /// Paces at the classic controller's rate from `now` and reopens a window it widened.
    fn follow_classic(&mut self, now: f64) {
        let inflight = self.inflight.len();
        let Some(cc) = self.cc.as_deref() else {
            return;
        };
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
    pub(super) fn sending_allowed(&self, t: f64) -> Result<(), f64> {
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
