//! What a sender keeps of each packet in flight ([`InFlight`], and [`PacketMeta`] for classic
//! controllers), and the insertion that keeps those deques sorted by arrival.

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(super) struct InFlight {
    pub(super) arrival_s: f64,
    pub(super) rtt_s: f64,
    pub(super) lost: bool,
    /// Packets of the train this entry stands for (1 without packet trains).
    #[serde(default = "one_packet", skip_serializing_if = "is_one_packet")]
    pub(super) packets: u32,
}

fn one_packet() -> u32 {
    1
}

fn is_one_packet(n: &u32) -> bool {
    *n == 1
}

/// What a classic controller needs to know about a packet in flight, kept beside `InFlight`
/// (same order) only for classic senders, so the learned senders' hot path stays lean.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(super) struct PacketMeta {
    pub(super) sent_s: f64,
    /// Packets delivered when this one was sent, and the time of the last of them (for
    /// delivery-rate samples).
    pub(super) delivered_at_send: u64,
    pub(super) delivered_time_at_send_s: f64,
}

impl InFlight {
    /// Aurora's order among ack arrivals: time, then RTT, then delivered before lost.
    pub(super) fn precedes_or_ties(&self, other: &InFlight) -> bool {
        (self.arrival_s, self.rtt_s, self.lost) <= (other.arrival_s, other.rtt_s, other.lost)
    }
}

/// Where an item goes in a deque sorted by `precedes_or_ties`: after every element that
/// precedes or ties it (so equal items keep their arrival order). Searched from the back, because
/// an item almost always goes at or near the end: arrivals come mostly in send order, and the
/// exceptions (a full queue's drops, whose times differ from the last accepted packet's only by
/// rounding; latency noise) land a few places from the end.
#[inline]
pub(super) fn sorted_position_from_back<T>(
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
pub(super) fn insert_at<T>(items: &mut VecDeque<T>, at: usize, item: T) {
    if at == items.len() {
        items.push_back(item);
    } else {
        items.insert(at, item);
    }
}
